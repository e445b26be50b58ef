// Races for boards, over real sockets: on PGlite by default, on PostgreSQL when DATABASE_URL is set
// (the suite runs both ways).
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import { freshStorage, makeTestApp, type TestApp, usingPostgres } from './helpers/app.ts';
import type { TestUser } from './helpers/users.ts';
import { boardState, endIn, H48, lifecycleOnly, makeBoard, makeUser, noTimer } from './leases.fixtures.ts';

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no port');
  return `http://127.0.0.1:${addr.port}`;
}

async function requestOver(base: string, u: TestUser, body: Record<string, unknown>) {
  const res = await fetch(`${base}/api/device/request-device`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: u.token },
    body: JSON.stringify(body),
  });
  return (await res.json()) as { code: number; error?: string; data: Record<string, unknown> };
}

describe(`racing for boards (${usingPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  const clock = new ManualClock(Date.parse('2030-04-01T00:00:00Z'));
  let fresh: Awaited<ReturnType<typeof freshStorage>>;
  let a: TestApp;
  let b: TestApp;
  let baseA: string;
  let baseB: string;

  beforeAll(async () => {
    fresh = await freshStorage();
    a = await makeTestApp({ clock, env: noTimer, features: lifecycleOnly(), storage: fresh.storage });
    b = await makeTestApp({ clock, env: noTimer, features: lifecycleOnly(), storage: fresh.storage });
    baseA = await listen(a.app);
    baseB = await listen(b.app);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await fresh.storage.close();
    await fresh.drop();
  });

  const liveLeases = async (boardId: string) =>
    (
      await a.storage.query<{ n: number }>(
        "select count(*)::int as n from leases where board_id = $1 and state = 'live'",
        [boardId],
      )
    )[0].n;

  it('gives the last free board to exactly one of many simultaneous requests, on two instances', async () => {
    const board = await makeBoard(a.app, { attributes: { pool: 'last' } });
    const users = await Promise.all(Array.from({ length: 16 }, () => makeUser(a.app)));
    const answers = await Promise.all(
      users.map((u, i) =>
        requestOver(i % 2 ? baseA : baseB, u, {
          requestDate: endIn(clock.now(), H48),
          filterReq: { pool: 'last' },
          serverName: 'race',
        }),
      ),
    );
    const won = answers.filter((r) => r.code === 20000);
    expect(won).toHaveLength(1);
    expect(won[0].data.deviceId).toBe(board.id);
    const lost = answers.filter((r) => r.code !== 20000);
    expect(lost).toHaveLength(15);
    for (const r of lost) {
      expect(r.error).toBe('lease.none_free');
      expect(r.data).toEqual({ nextFreeAt: won[0].data.endsAt, matching: 1 });
    }
    expect(await liveLeases(board.id)).toBe(1);
    expect(await boardState(a.app, board.id)).toBe('leased');
  });

  it('hands each of several free boards to exactly one request, none twice', async () => {
    const boards = await Promise.all(
      Array.from({ length: 5 }, () => makeBoard(a.app, { attributes: { pool: 'five' } })),
    );
    const users = await Promise.all(Array.from({ length: 20 }, () => makeUser(a.app)));
    const answers = await Promise.all(
      users.map((u, i) =>
        requestOver(i % 2 ? baseA : baseB, u, {
          requestDate: endIn(clock.now(), H48),
          filterReq: { pool: 'five' },
          serverName: `n${i}`,
        }),
      ),
    );
    const won = answers.filter((r) => r.code === 20000).map((r) => r.data.deviceId as string);
    expect(won.sort()).toEqual(boards.map((x) => x.id).sort());
    expect(answers.filter((r) => r.error === 'lease.none_free')).toHaveLength(15);
    for (const x of boards) expect(await liveLeases(x.id)).toBe(1);
  });

  it('gives one user racing themself under one name exactly one board', async () => {
    const boards = await Promise.all(
      Array.from({ length: 6 }, () => makeBoard(a.app, { attributes: { pool: 'self' } })),
    );
    const u = await makeUser(a.app);
    const answers = await Promise.all(
      boards.map((_, i) =>
        requestOver(i % 2 ? baseA : baseB, u, {
          requestDate: endIn(clock.now(), H48),
          filterReq: { pool: 'self' },
          serverName: 'same',
        }),
      ),
    );
    expect(answers.filter((r) => r.code === 20000)).toHaveLength(1);
    expect(answers.filter((r) => r.error === 'lease.name_taken')).toHaveLength(5);
    const states = await Promise.all(boards.map((x) => boardState(a.app, x.id)));
    expect(states.filter((s) => s === 'leased')).toHaveLength(1);
    expect(states.filter((s) => s === 'idle')).toHaveLength(5);
  });
});
