// Fixtures of the device lifecycle suites: board rows seeded straight into storage, the lifecycle
// feature without the board lab (so seeded rows are not probed), a recorder standing in for the
// realtime notification bus and shells, and a small client for the calls.
import type { FastifyInstance } from 'fastify';
import { boards } from '#server/db/schema/boards.ts';
import type { Feature } from '#server/feature.ts';
import { leasesFeature } from '#server/leases/leases.routes.ts';
import { systemFeature } from '#server/system/system.routes.ts';
import type { Envelope } from '#shared/codes.ts';
import { DAY_MS, HOUR_MS } from '#shared/constants.ts';
import { makeUser as makeIdentityUser, type TestUser } from './helpers/users.ts';

let seq = 0;

/**
 * A user whose token does not expire: these suites move the service's clock days ahead, and tokens
 * are checked against that clock.
 */
export async function makeUser(app: FastifyInstance): Promise<TestUser> {
  const u = await makeIdentityUser(app);
  await app.storage.query('update credentials set expires_at = null where user_id = $1', [u.id]);
  return u;
}

export async function makeBoard(
  app: FastifyInstance,
  overrides: Partial<typeof boards.$inferInsert> = {},
): Promise<typeof boards.$inferSelect> {
  seq++;
  const id = overrides.id ?? `tb-${process.pid}-${seq}`;
  const [row] = await app.storage.db
    .insert(boards)
    .values({
      id,
      name: overrides.name ?? `board-${seq}`,
      model: overrides.model ?? 'K1',
      attributes: overrides.attributes ?? { cpu: 'X60', cores: 8, memoryMb: 4096, os: 'bianbu' },
      driver: overrides.driver ?? 'ssh',
      state: overrides.state ?? 'idle',
      ...overrides,
    })
    .returning();
  return row;
}

export async function boardState(app: FastifyInstance, id: string): Promise<string> {
  const [r] = await app.storage.query<{ state: string }>('select state from boards where id = $1', [id]);
  return r.state;
}

export interface Recorded {
  notices: { userId: string; kind: string; data: Record<string, unknown> }[];
  closedApplies: { applyId: string; reason: string }[];
  closedBoards: { deviceId: string; reason: string }[];
}

/** Stands in for the realtime feature's `notify` and `shells` decorations, recording what they get. */
export function recorderFeature(rec: Recorded): Feature {
  return {
    name: 'recorder',
    setup(app) {
      app.decorate('notify', (userId: string, n: { kind: string; data: Record<string, unknown> }) => {
        rec.notices.push({ userId, kind: n.kind, data: n.data });
      });
      // Only the two methods the lifecycle calls; the realtime feature's ShellManager is not in these apps.
      const shells = {
        closeForApply: async (applyId: string, reason = '') =>
          void rec.closedApplies.push({ applyId, reason }),
        closeForBoard: async (deviceId: string, reason = '') =>
          void rec.closedBoards.push({ deviceId, reason }),
      };
      app.decorate('shells', shells as never);
    },
  };
}

export const newRecorded = (): Recorded => ({ notices: [], closedApplies: [], closedBoards: [] });

/** The service with the lifecycle but without the board lab: boards are rows the test writes. */
export const lifecycleOnly = (rec?: Recorded): Feature[] =>
  rec ? [recorderFeature(rec), systemFeature, leasesFeature] : [systemFeature, leasesFeature];

export const noTimer = { BIANBU_LEASE_TICK_MS: '0' } as const;

export interface Answer<T = unknown> extends Envelope<T> {
  status: number;
}

export async function call<T = any>(
  app: FastifyInstance,
  user: TestUser,
  method: 'GET' | 'POST',
  url: string,
  payload?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const res =
    method === 'GET'
      ? await app.inject({
          method,
          url,
          query: Object.fromEntries(Object.entries(payload ?? {}).map(([k, v]) => [k, String(v)])),
          headers: { ...user.headers, ...headers },
        })
      : await app.inject({ method, url, payload: payload ?? {}, headers: { ...user.headers, ...headers } });
  return { status: res.statusCode, ...(res.json() as Envelope<T>) };
}

export const endIn = (clockNow: Date, ms: number) => new Date(clockNow.getTime() + ms).toISOString();
export const H48 = 48 * HOUR_MS;
export const D7 = 7 * DAY_MS;
export const M1 = 30 * DAY_MS;
