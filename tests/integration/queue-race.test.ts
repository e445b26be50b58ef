// Two service instances on one database (PGlite, or PostgreSQL when DATABASE_URL is set) racing for
// freed boards with a waiting line: every freed board goes to exactly one waiting entry, in order, and
// no entry gets two boards, whichever instance expires, restores, sweeps or answers a direct request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import { queueFeature } from '#server/leases/queue.routes.ts';
import { freshStorage, makeTestApp, type TestApp, usingPostgres } from './helpers/app.ts';
import type { TestUser } from './helpers/users.ts';
import {
  boardState,
  call,
  endIn,
  H48,
  lifecycleOnly,
  makeBoard,
  makeUser,
  newRecorded,
  noTimer,
  type Recorded,
} from './leases.fixtures.ts';

describe(`the waiting line on two instances (${usingPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  const clock = new ManualClock(Date.parse('2030-07-01T00:00:00Z'));
  let fresh: Awaited<ReturnType<typeof freshStorage>>;
  let a: TestApp;
  let b: TestApp;
  const recA: Recorded = newRecorded();
  const recB: Recorded = newRecorded();
  const granted = () => [...recA.notices, ...recB.notices].filter((n) => n.kind === 'queue.granted');

  // Entries must outlive the 48 h lease the first test waits for.
  const env = { ...noTimer, BIANBU_QUEUE_MAX_WAIT_HOURS: '72' };

  beforeAll(async () => {
    fresh = await freshStorage();
    a = await makeTestApp({
      clock,
      env,
      features: [...lifecycleOnly(recA), queueFeature],
      storage: fresh.storage,
    });
    b = await makeTestApp({
      clock,
      env,
      features: [...lifecycleOnly(recB), queueFeature],
      storage: fresh.storage,
    });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await fresh.storage.close();
    await fresh.drop();
  });

  const on = (i: number) => (i % 2 ? a : b).app;
  const liveLeases = async (boardId: string) =>
    (
      await a.storage.query<{ user_id: string }>(
        "select user_id from leases where board_id = $1 and state = 'live'",
        [boardId],
      )
    ).map((r) => r.user_id);
  const entries = (pool: string) =>
    a.storage.query<{ id: string; user_id: string; state: string; board_id: string | null }>(
      `select id, user_id, state, board_id from lease_queue where filter->>'pool' = $1 order by joined_at, seq`,
      [pool],
    );

  async function waiters(pool: string, n: number): Promise<TestUser[]> {
    const users: TestUser[] = [];
    for (let i = 0; i < n; i++) {
      const u = await makeUser(a.app);
      const r = await call(on(i), u, 'POST', '/api/device/queue/join', {
        filterReq: { pool },
        durationKey: '48h',
        serverName: `w${i}`,
      });
      expect(r.data).toMatchObject({ state: 'waiting', position: i + 1 });
      users.push(u);
      clock.advance(1);
    }
    return users;
  }

  it('gives a board freed by an expiry to exactly the first in line, while both instances tick, sweep and take direct requests', async () => {
    const board = await makeBoard(a.app, { attributes: { pool: 'one' } });
    const holder = await makeUser(a.app);
    const lease = await call(a.app, holder, 'POST', '/api/device/request-device', {
      requestDate: endIn(clock.now(), H48),
      filterReq: { pool: 'one' },
      serverName: 'held',
    });
    expect(lease.code).toBe(20000);
    const line = await waiters('one', 8);
    const rushers = await Promise.all(Array.from({ length: 6 }, () => makeUser(a.app)));

    clock.set(Date.parse(lease.data.endsAt));
    const direct = rushers.map((u, i) =>
      call(on(i), u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: { pool: 'one' },
        serverName: 'rush',
      }),
    );
    await Promise.all([
      a.app.leaseScheduler.tick(),
      b.app.leaseScheduler.tick(),
      a.app.leaseQueue.sweep(),
      b.app.leaseQueue.sweep(),
      ...direct,
    ]);
    await Promise.all([a.app.leases.drain(), b.app.leases.drain()]);
    await Promise.all([a.app.leaseScheduler.tick(), b.app.leaseScheduler.tick()]);

    for (const r of await Promise.all(direct)) expect(r.error, JSON.stringify(r)).toBe('lease.none_free');
    expect(await liveLeases(board.id)).toEqual([line[0].id]);
    expect(await boardState(a.app, board.id)).toBe('leased');
    const rows = await entries('one');
    expect(rows.map((e) => e.state)).toEqual(['granted', ...Array(7).fill('waiting')]);
    expect(rows[0].board_id).toBe(board.id);
    expect(granted().map((n) => n.userId)).toEqual([line[0].id]);
  });

  it('hands several boards freed at once to the first waiters in order, each board once and each waiter at most once', async () => {
    const boards = await Promise.all(
      Array.from({ length: 5 }, () =>
        makeBoard(a.app, { attributes: { pool: 'five' }, state: 'maintenance' }),
      ),
    );
    const line = await waiters('five', 9);
    // An operator brings all five back at once; both instances sweep over and over, concurrently.
    await a.storage.query(`update boards set state = 'idle' where attributes->>'pool' = 'five'`);
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).app.leaseQueue.sweep()).concat([
        a.app.leaseScheduler.tick(),
        b.app.leaseScheduler.tick(),
      ]),
    );

    const holders = (await Promise.all(boards.map((x) => liveLeases(x.id)))).map((h) => {
      expect(h).toHaveLength(1);
      return h[0];
    });
    expect(holders.sort()).toEqual(
      line
        .slice(0, 5)
        .map((u) => u.id)
        .sort(),
    );
    const rows = await entries('five');
    expect(rows.map((e) => e.state)).toEqual([...Array(5).fill('granted'), ...Array(4).fill('waiting')]);
    expect(new Set(rows.slice(0, 5).map((e) => e.board_id)).size).toBe(5);
    // (the notices of both instances, of this line's entries)
    const ids = new Set(rows.map((e) => e.id));
    const notices = granted().filter((n) => ids.has(n.data.entryId as string));
    expect(notices.map((n) => n.userId).sort()).toEqual(
      line
        .slice(0, 5)
        .map((u) => u.id)
        .sort(),
    );
  });

  it('gives boards released on both instances at the same moment to different waiters, in order', async () => {
    const boards = await Promise.all(
      Array.from({ length: 4 }, () => makeBoard(a.app, { attributes: { pool: 'rel' } })),
    );
    const owners = await Promise.all(boards.map(() => makeUser(a.app)));
    for (const [i, u] of owners.entries()) {
      const r = await call(a.app, u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: { pool: 'rel' },
        serverName: 'own',
      });
      expect(r.code).toBe(20000);
      boards[i] = { ...boards[i], id: r.data.deviceId };
    }
    const line = await waiters('rel', 6);
    await Promise.all(
      owners.map((u, i) =>
        call(on(i), u, 'POST', '/api/device/unlock-request-device', {
          deviceId: boards[i].id,
          serverName: 'own',
        }),
      ),
    );
    await Promise.all([
      a.app.leases.drain(),
      b.app.leases.drain(),
      a.app.leaseQueue.sweep(),
      b.app.leaseQueue.sweep(),
    ]);

    const holders = (await Promise.all(boards.map((x) => liveLeases(x.id)))).flat();
    expect(holders.sort()).toEqual(
      line
        .slice(0, 4)
        .map((u) => u.id)
        .sort(),
    );
    const rows = await entries('rel');
    expect(rows.map((e) => e.state)).toEqual([...Array(4).fill('granted'), 'waiting', 'waiting']);
    expect(new Set(rows.slice(0, 4).map((e) => e.board_id)).size).toBe(4);
  });
});
