// The apps of the realtime tests: the realtime feature over test PTY boards and test applies,
// listening on a loopback port; and two such instances sharing one PostgreSQL database and one Redis,
// as in a scaled-out deployment. Suites add the features they need around them (`before`, `after`).
import type { AddressInfo } from 'node:net';
import type { Feature } from '#server/feature.ts';
import { realtimeFeature } from '#server/realtime/realtime.feature.ts';
import { freshStorage, makeTestApp, type TestApp, type TestAppOptions } from './app.ts';
import { testAppliesFeature } from './test-applies.ts';
import { testBoardsFeature } from './test-pty-driver.ts';

export interface RealtimeAppOptions extends Omit<TestAppOptions, 'features'> {
  /** The applies the suite registers; a fresh set when not given. */
  applies?: ReturnType<typeof testAppliesFeature>;
  /** Features started before the applies, boards and realtime (e.g. systemFeature). */
  before?: Feature[];
  /** Features started after them (e.g. identityFeature). */
  after?: Feature[];
  /** Boards other than test PTY boards (e.g. a lab with leases). */
  boards?: Feature;
}

export interface RealtimeApp {
  t: TestApp;
  /** The loopback port of its /ws endpoint. */
  port: number;
  applies: ReturnType<typeof testAppliesFeature>;
}

/** Listens on 127.0.0.1 (a port of the system's choosing) and answers the port. */
export async function listenOnLoopback(t: TestApp): Promise<number> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return (t.app.server.address() as AddressInfo).port;
}

/** One instance, listening on 127.0.0.1. */
export async function startRealtimeApp(o: RealtimeAppOptions = {}): Promise<RealtimeApp> {
  const {
    applies = testAppliesFeature(),
    before = [],
    after = [],
    boards = testBoardsFeature(),
    ...rest
  } = o;
  const t = await makeTestApp({ ...rest, features: [...before, applies, boards, realtimeFeature, ...after] });
  return { t, port: await listenOnLoopback(t), applies };
}

export const REDIS_URL = process.env.REDIS_URL_TEST ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TwoInstances {
  a: RealtimeApp;
  b: RealtimeApp;
  /** Closes both instances and drops their database. */
  close(): Promise<void>;
}

/** Two instances on one fresh PostgreSQL database and the Redis bus, sharing the suite's applies. */
export async function startTwoInstances(
  o: Omit<RealtimeAppOptions, 'storage' | 'boards'> = {},
): Promise<TwoInstances> {
  process.env.DATABASE_URL ??= 'postgresql://postgres@127.0.0.1:5432/test';
  const db = await freshStorage();
  const applies = o.applies ?? testAppliesFeature();
  const one = () =>
    startRealtimeApp({ ...o, applies, storage: db.storage, env: { REDIS_URL, ...(o.env ?? {}) } });
  const a = await one();
  const b = await one().catch(async (err) => {
    await a.t.close();
    throw err;
  });
  return {
    a,
    b,
    close: async () => {
      await a.t.close();
      await b.t.close();
      await db.storage.close();
      await db.drop();
    },
  };
}
