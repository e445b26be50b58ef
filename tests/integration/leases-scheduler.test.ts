// The expiry scheduler with a manual clock, on two service instances sharing one database (PGlite,
// or PostgreSQL when DATABASE_URL is set): warnings and expiries happen exactly once, on time, and a
// restart neither loses a lease nor moves its end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { freshStorage, makeTestApp, type TestApp } from './helpers/app.ts';
import {
  boardState,
  call,
  D7,
  endIn,
  H48,
  lifecycleOnly,
  makeBoard,
  makeUser,
  newRecorded,
  noTimer,
  type Recorded,
} from './leases.fixtures.ts';

describe('the lease expiry scheduler', () => {
  const clock = new ManualClock(Date.parse('2030-05-01T10:00:00Z'));
  let fresh: Awaited<ReturnType<typeof freshStorage>>;
  let a: TestApp;
  let b: TestApp;
  const recA: Recorded = newRecorded();
  const recB: Recorded = newRecorded();
  const both = () => Promise.all([a.app.leaseScheduler.tick(), b.app.leaseScheduler.tick()]);
  const notices = () => [...recA.notices, ...recB.notices];

  beforeAll(async () => {
    fresh = await freshStorage();
    a = await makeTestApp({ clock, env: noTimer, features: lifecycleOnly(recA), storage: fresh.storage });
    b = await makeTestApp({ clock, env: noTimer, features: lifecycleOnly(recB), storage: fresh.storage });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await fresh.storage.close();
    await fresh.drop();
  });

  const leaseRow = async (id: string) =>
    (
      await a.storage.query<{ state: string; ends_at: Date; ended_at: Date | null; cleaned_at: Date | null }>(
        'select state, ends_at, ended_at, cleaned_at from leases where id = $1',
        [id],
      )
    )[0];

  it('warns 24 h and 1 h before the end once each, and expires on time exactly once', async () => {
    const board = await makeBoard(a.app);
    const spare = await makeBoard(a.app);
    const u = await makeUser(a.app);
    const v = await makeUser(a.app);
    const lease = (
      await call(a.app, u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: {},
        serverName: 'mine',
      })
    ).data;
    const longer = (
      await call(b.app, v, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), D7),
        filterReq: {},
        serverName: 'theirs',
      })
    ).data;
    expect([lease.deviceId, longer.deviceId].sort()).toEqual([board.id, spare.id].sort());
    const { applyId } = (
      await call(b.app, u, 'POST', '/api/device/apply-device', { deviceId: lease.deviceId })
    ).data;
    const end = Date.parse(lease.endsAt);

    await both();
    clock.set(end - 24 * HOUR_MS - 1000);
    await both();
    expect(notices()).toEqual([]);

    clock.set(end - 24 * HOUR_MS);
    const [r1, r2] = await both();
    expect(r1.warned24h + r2.warned24h).toBe(1);
    clock.advance(60_000);
    await both();
    expect(notices()).toEqual([
      {
        userId: u.id,
        kind: 'lease.expiring',
        data: expect.objectContaining({
          leaseId: lease.leaseId,
          remaining: '24h',
          count: 24,
          endsAt: lease.endsAt,
        }),
      },
    ]);
    const listed = await call(a.app, u, 'GET', '/api/device/fetch-request-device');
    expect(listed.data.items[0]).toMatchObject({ warned24h: true, warned1h: false });

    clock.set(end - HOUR_MS);
    await both();
    await both();
    expect(notices().filter((n) => n.data.remaining === '1h')).toEqual([
      {
        userId: u.id,
        kind: 'lease.expiring',
        data: expect.objectContaining({ leaseId: lease.leaseId, count: 1 }),
      },
    ]);

    clock.set(end - 1);
    const [e1, e2] = await both();
    expect(e1.expired + e2.expired).toBe(0);
    expect((await call(a.app, u, 'POST', '/api/device/check-apply-id', { applyId })).data.valid).toBe(true);

    clock.set(end);
    const [x1, x2] = await both();
    expect(x1.expired + x2.expired).toBe(1);
    await both();
    expect(notices().filter((n) => n.kind === 'lease.expired')).toEqual([
      { userId: u.id, kind: 'lease.expired', data: expect.objectContaining({ leaseId: lease.leaseId }) },
    ]);
    const closed = [...recA.closedApplies, ...recB.closedApplies];
    expect(closed).toEqual([{ applyId, reason: 'lease.expired' }]);
    expect([...recA.closedBoards, ...recB.closedBoards]).toEqual([
      { deviceId: lease.deviceId, reason: 'lease.expired' },
    ]);

    const row = await leaseRow(lease.leaseId);
    expect(row.state).toBe('expired');
    expect(new Date(row.ends_at).toISOString()).toBe(lease.endsAt);
    expect(new Date(row.ended_at!).toISOString()).toBe(lease.endsAt);
    expect(row.cleaned_at).not.toBeNull();
    expect(await boardState(a.app, lease.deviceId)).toBe('idle');
    const events = await a.storage.query<{ t: string }>(
      "select from_state || '>' || to_state as t from board_events where board_id = $1 order by id",
      [lease.deviceId],
    );
    expect(events.map((e) => e.t)).toEqual(['idle>leased', 'leased>resetting', 'resetting>idle']);
    expect((await call(a.app, u, 'POST', '/api/device/check-apply-id', { applyId })).data.reason).toBe(
      'apply.closed',
    );
    expect((await call(a.app, u, 'GET', '/api/device/fetch-request-device')).data.items).toEqual([]);
    const history = await call(a.app, u, 'GET', '/api/device/recent-applies');
    expect(history.data[0]).toMatchObject({ applyId, closeReason: 'expired', open: false });

    // the 7-day lease was not touched: no warning yet, still live
    const other = await call(a.app, v, 'GET', '/api/device/fetch-request-device');
    expect(other.data.items).toMatchObject([{ leaseId: longer.leaseId, warned24h: false, state: 'live' }]);
    expect(notices().filter((n) => n.userId === v.id)).toEqual([]);
  });

  it('warns again after a renewal moves the end past the warning windows', async () => {
    await makeBoard(a.app);
    const u = await makeUser(a.app);
    const lease = (
      await call(a.app, u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: {},
        serverName: 'renewed',
      })
    ).data;
    const end = Date.parse(lease.endsAt);
    clock.set(end - 30 * 60_000);
    await both();
    // first seen inside its last hour: the 1 h warning only
    const mine = () => notices().filter((n) => n.data.leaseId === lease.leaseId);
    expect(mine().map((n) => n.data.remaining)).toEqual(['1h']);

    const renewed = await call(a.app, u, 'POST', '/api/device/renewal-device', {
      deviceId: lease.deviceId,
      serverName: 'renewed',
      renewalDate: endIn(clock.now(), H48),
    });
    expect(renewed.data).toMatchObject({ warned24h: false, warned1h: false });
    clock.set(end + HOUR_MS);
    await both();
    expect(await boardState(a.app, lease.deviceId)).toBe('leased');
    clock.set(Date.parse(renewed.data.endsAt) - 24 * HOUR_MS);
    await both();
    // (each instance records its own notices, so compare without order)
    expect(
      mine()
        .map((n) => n.data.remaining)
        .sort(),
    ).toEqual(['1h', '24h']);
  });

  it('takes over a board cleanup an instance left unfinished', async () => {
    const board = await makeBoard(a.app);
    const u = await makeUser(a.app);
    const lease = (
      await call(a.app, u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: {},
        serverName: 'crashed',
      })
    ).data;
    // What an instance that died between ending the lease and restoring the board leaves behind.
    await a.storage.query(
      "update leases set state = 'released', ended_at = $2, cleanup_claimed_at = $2 where id = $1",
      [lease.leaseId, clock.now().toISOString()],
    );
    await a.storage.query("update boards set state = 'resetting' where id = $1", [board.id]);
    await both();
    expect(await boardState(a.app, board.id)).toBe('resetting');
    clock.advance(11 * 60_000);
    const [r1, r2] = await both();
    expect(r1.retriedCleanups + r2.retriedCleanups).toBe(1);
    expect(await boardState(a.app, board.id)).toBe('idle');
    expect((await leaseRow(lease.leaseId)).cleaned_at).not.toBeNull();
  });

  it('hands out no board whose restore is pending, even when a restart marked it idle', async () => {
    const board = await makeBoard(a.app, { attributes: { pool: 'pending' } });
    const u = await makeUser(a.app);
    const v = await makeUser(a.app);
    const ask = (who: typeof u, serverName: string) =>
      call(b.app, who, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: { pool: 'pending' },
        serverName,
      });
    const lease = (await ask(u, 'first')).data;
    // An instance ended the lease and died before restoring; the lab's restart then marked the board idle.
    await a.storage.query(
      "update leases set state = 'released', ended_at = $2, cleanup_claimed_at = $2 where id = $1",
      [lease.leaseId, clock.now().toISOString()],
    );
    await a.storage.query("update boards set state = 'idle' where id = $1", [board.id]);
    const refused = await ask(v, 'second');
    expect(refused.error).toBe('lease.none_free');
    expect(refused.data.nextFreeAt).toBe(clock.now().toISOString());

    clock.advance(11 * 60_000);
    await both();
    expect(await boardState(a.app, board.id)).toBe('idle');
    expect((await ask(v, 'second')).data.deviceId).toBe(board.id);
  });

  it('keeps leases and their ends across a restart, and expires what ended while it was down', async () => {
    const board = await makeBoard(a.app);
    const u = await makeUser(a.app);
    const lease = (
      await call(a.app, u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), D7),
        filterReq: {},
        serverName: 'durable',
      })
    ).data;
    await a.close();
    await b.close();

    clock.advance(HOUR_MS);
    a = await makeTestApp({ clock, env: noTimer, features: lifecycleOnly(recA), storage: fresh.storage });
    const listed = await call(a.app, u, 'GET', '/api/device/fetch-request-device');
    expect(listed.data.items).toMatchObject([
      { leaseId: lease.leaseId, endsAt: lease.endsAt, remainingMs: D7 - HOUR_MS },
    ]);
    await a.close();

    // Down past the end; the next start's first tick (timer running) expires it.
    clock.set(Date.parse(lease.endsAt) + 5 * 60_000);
    a = await makeTestApp({
      clock,
      env: { BIANBU_LEASE_TICK_MS: '100' },
      features: lifecycleOnly(recA),
      storage: fresh.storage,
    });
    b = await makeTestApp({ clock, env: noTimer, features: lifecycleOnly(recB), storage: fresh.storage });
    for (let i = 0; i < 100 && (await boardState(a.app, board.id)) !== 'idle'; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const row = await leaseRow(lease.leaseId);
    expect(row.state).toBe('expired');
    expect(new Date(row.ends_at).toISOString()).toBe(lease.endsAt);
    expect(await boardState(a.app, board.id)).toBe('idle');
  });
});
