// The waiting line for boards on one instance: order, position and estimate, grants the moment a board
// frees (release, expiry, an operator), cancel, expiry, and bad input. Two instances racing are in
// queue-race.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import { loadConfig } from '#server/config.ts';
import type { Feature } from '#server/feature.ts';
import { queueFeature } from '#server/leases/queue.routes.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
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

let pools = 0;
const pool = () => `q${process.pid}-${++pools}`;

describe('the waiting line for boards', () => {
  let t: TestApp;
  const clock = new ManualClock(Date.parse('2030-06-01T08:00:00Z'));
  const rec: Recorded = newRecorded();
  const now = () => clock.now();

  beforeAll(async () => {
    t = await makeTestApp({
      clock,
      env: { ...noTimer, BIANBU_QUEUE_MAX_WAIT_HOURS: '6' },
      features: [...lifecycleOnly(rec), queueFeature],
    });
  });
  afterAll(() => t.close());

  const request = (u: TestUser, filterReq: Record<string, unknown>, serverName = 'direct') =>
    call(t.app, u, 'POST', '/api/device/request-device', {
      requestDate: endIn(now(), H48),
      filterReq,
      serverName,
    });
  const join = (u: TestUser, filterReq: unknown, serverName = 'waiting', durationKey = '48h') =>
    call(t.app, u, 'POST', '/api/device/queue/join', { filterReq, durationKey, serverName });
  const fetchQueue = (u: TestUser) => call(t.app, u, 'GET', '/api/device/queue/fetch');
  const cancel = (u: TestUser, entryId: unknown) =>
    call(t.app, u, 'POST', '/api/device/queue/cancel', { entryId });
  const unlock = async (u: TestUser, deviceId: string, serverName = 'direct') => {
    const r = await call(t.app, u, 'POST', '/api/device/unlock-request-device', { deviceId, serverName });
    expect(r.code).toBe(20000);
    await t.app.leases.drain();
  };
  const noticesOf = (u: TestUser, kind: string) =>
    rec.notices.filter((n) => n.userId === u.id && n.kind === kind);

  /** A pool of `n` boards, all leased by a holder (leases ending 48 h, 49 h, ... from now). */
  async function fullPool(n = 1) {
    const p = pool();
    const boards = [];
    const holders = [];
    for (let i = 0; i < n; i++) {
      boards.push(await makeBoard(t.app, { attributes: { pool: p, cores: 8 } }));
      const h = await makeUser(t.app);
      const r = await call(t.app, h, 'POST', '/api/device/request-device', {
        requestDate: endIn(now(), H48),
        filterReq: { pool: p },
        serverName: 'direct',
      });
      expect(r.code).toBe(20000);
      holders.push({ user: h, lease: r.data });
    }
    return { p, boards, holders };
  }

  it('waits in line after lease.none_free, first come first served, and grants the freed board at once with the lease starting then', async () => {
    const { p, boards, holders } = await fullPool(1);
    const [u1, u2] = [await makeUser(t.app), await makeUser(t.app)];
    expect((await request(u1, { pool: p })).error).toBe('lease.none_free');

    const first = await join(u1, { pool: p }, 'first');
    expect(first.code).toBe(20000);
    expect(first.data).toMatchObject({
      state: 'waiting',
      position: 1,
      estimateAt: holders[0].lease.endsAt,
      serverName: 'first',
      durationKey: '48h',
      joinedAt: now().toISOString(),
      expiresAt: new Date(now().getTime() + 6 * HOUR_MS).toISOString(),
      lease: null,
    });
    clock.advance(1000);
    const second = await join(u2, { pool: p }, 'second', '7d');
    expect(second.data).toMatchObject({ state: 'waiting', position: 2, estimateAt: null });

    const listed = await fetchQueue(u2);
    expect(listed.data.items).toEqual([
      expect.objectContaining({ entryId: second.data.entryId, position: 2 }),
    ]);
    expect((await fetchQueue(u1)).data.items.map((e: { entryId: string }) => e.entryId)).toEqual([
      first.data.entryId,
    ]);

    clock.advance(HOUR_MS);
    await unlock(holders[0].user, boards[0].id);

    const leases = (await call(t.app, u1, 'GET', '/api/device/fetch-request-device')).data.items;
    expect(leases).toEqual([
      expect.objectContaining({
        deviceId: boards[0].id,
        serverName: 'first',
        state: 'live',
        startedAt: now().toISOString(),
        endsAt: endIn(now(), H48),
        remainingMs: H48,
      }),
    ]);
    expect(await boardState(t.app, boards[0].id)).toBe('leased');
    expect(noticesOf(u1, 'queue.granted')).toEqual([
      expect.objectContaining({
        data: expect.objectContaining({
          entryId: first.data.entryId,
          deviceId: boards[0].id,
          serverName: 'first',
          leaseId: leases[0].leaseId,
          startedAt: now().toISOString(),
          endsAt: endIn(now(), H48),
        }),
      }),
    ]);
    expect(noticesOf(u2, 'queue.position').at(-1)?.data).toMatchObject({
      entryId: second.data.entryId,
      position: 1,
      estimateAt: leases[0].endsAt,
    });
    expect(noticesOf(u2, 'queue.granted')).toEqual([]);
    // the board never showed as free: restored, then straight to the first in line
    const events = await t.storage.query<{ from_state: string; to_state: string }>(
      'select from_state, to_state from board_events where board_id = $1 order by id',
      [boards[0].id],
    );
    expect(events.slice(-3).map((e) => `${e.from_state}>${e.to_state}`)).toEqual([
      'leased>resetting',
      'resetting>idle',
      'idle>leased',
    ]);

    const after1 = await fetchQueue(u1);
    expect(after1.data.items).toEqual([]);
    expect(after1.data.recent[0]).toMatchObject({
      entryId: first.data.entryId,
      state: 'granted',
      deviceId: boards[0].id,
      leaseId: leases[0].leaseId,
      position: null,
    });
    expect((await fetchQueue(u2)).data.items[0]).toMatchObject({ position: 1 });

    // the second waiter gets it when the first lets it go, with their own duration
    clock.advance(HOUR_MS);
    await unlock(u1, boards[0].id, 'first');
    const theirs = (await call(t.app, u2, 'GET', '/api/device/fetch-request-device')).data.items;
    expect(theirs).toEqual([
      expect.objectContaining({ deviceId: boards[0].id, durationKey: '7d', serverName: 'second' }),
    ]);
  });

  it('gives a freed board to the oldest entry whose filter it matches, across overlapping filters', async () => {
    const { p, boards, holders } = await fullPool(1);
    await makeBoard(t.app, { attributes: { pool: p, cores: 16 }, state: 'maintenance' });
    const [a, b, c] = [await makeUser(t.app), await makeUser(t.app), await makeUser(t.app)];
    expect((await join(a, { pool: p, cores: 16 })).data.position).toBe(1); // never matches the freed board
    clock.advance(1);
    expect((await join(b, { pool: p, cores: 8 })).data.position).toBe(1);
    clock.advance(1);
    expect((await join(c, { pool: p })).data.position).toBe(1);
    await unlock(holders[0].user, boards[0].id);
    expect(noticesOf(b, 'queue.granted')).toHaveLength(1);
    expect(noticesOf(a, 'queue.granted')).toHaveLength(0);
    expect(noticesOf(c, 'queue.granted')).toHaveLength(0);
  });

  it('lets nobody jump the line: a board freed by an operator goes to the waiting user, not a direct request', async () => {
    const p = pool();
    const board = await makeBoard(t.app, { attributes: { pool: p }, state: 'maintenance' });
    const [waiter, rusher] = [await makeUser(t.app), await makeUser(t.app)];
    expect((await request(rusher, { pool: p })).error).toBe('lease.none_free');
    const entry = await join(waiter, { pool: p });
    expect(entry.data).toMatchObject({ state: 'waiting', position: 1, estimateAt: null });

    await t.storage.query("update boards set state = 'idle' where id = $1", [board.id]);
    const direct = await request(rusher, { pool: p });
    expect(direct.error).toBe('lease.none_free');
    expect(noticesOf(waiter, 'queue.granted')).toHaveLength(1);
    expect(
      (await call(t.app, waiter, 'GET', '/api/device/fetch-request-device')).data.items[0],
    ).toMatchObject({
      deviceId: board.id,
    });
  });

  it('grants a board at once when one is free on joining', async () => {
    const p = pool();
    const board = await makeBoard(t.app, { attributes: { pool: p } });
    const u = await makeUser(t.app);
    const res = await join(u, { pool: p }, 'now');
    expect(res.data).toMatchObject({ state: 'granted', position: null, deviceId: board.id });
    expect(res.data.lease).toMatchObject({ deviceId: board.id, serverName: 'now', state: 'live' });
  });

  it('grants on the scheduler tick that expires the holder’s lease', async () => {
    const { p, boards, holders } = await fullPool(1);
    const u = await makeUser(t.app);
    const entry = await join(u, { pool: p });
    expect(entry.data.estimateAt).toBe(holders[0].lease.endsAt);
    // the entry would expire first (6 h): keep it alive by joining just before the end instead
    await cancel(u, entry.data.entryId);
    clock.set(Date.parse(holders[0].lease.endsAt) - HOUR_MS);
    const late = await join(u, { pool: p });
    expect(late.data.position).toBe(1);
    clock.set(Date.parse(holders[0].lease.endsAt));
    await t.app.leaseScheduler.tick();
    await t.app.leases.drain();
    expect(noticesOf(u, 'queue.granted')).toEqual([
      expect.objectContaining({
        data: expect.objectContaining({ entryId: late.data.entryId, deviceId: boards[0].id }),
      }),
    ]);
    expect(await boardState(t.app, boards[0].id)).toBe('leased');
  });

  it('keeps one waiting entry per user and filter, whatever the key order, case or list order', async () => {
    const { p } = await fullPool(1);
    const u = await makeUser(t.app);
    const first = await join(u, { pool: p, cores: [8, 4] }, 'one');
    expect(first.code).toBe(20000);
    const again = await join(u, { cores: [4, 8, 8], pool: p.toUpperCase() }, 'two');
    expect(again.status).toBe(409);
    expect(again.error).toBe('queue.already_waiting');
    expect(again.data).toEqual({ entryId: first.data.entryId });
    // another filter is another line
    expect((await join(u, { pool: p }, 'three')).code).toBe(20000);
    // and once the first has left, the same filter may wait again (at the back)
    expect((await cancel(u, first.data.entryId)).code).toBe(20000);
    expect((await join(u, { pool: p, cores: [4, 8] }, 'one')).code).toBe(20000);
  });

  it('cancels only the caller’s own waiting entry; others’ entries answer like missing ones', async () => {
    const { p } = await fullPool(1);
    const [u, v, w] = [await makeUser(t.app), await makeUser(t.app), await makeUser(t.app)];
    const mine = await join(u, { pool: p });
    clock.advance(1);
    const theirs = await join(v, { pool: p });
    clock.advance(1);
    const third = await join(w, { pool: p });
    expect(third.data.position).toBe(3);

    const stranger = await cancel(w, mine.data.entryId);
    const missing = await cancel(w, 'no-such-entry');
    expect(stranger.status).toBe(404);
    expect(stranger.error).toBe('queue.not_found');
    expect(stranger).toEqual(missing);
    expect((await fetchQueue(w)).data.items.map((e: { entryId: string }) => e.entryId)).toEqual([
      third.data.entryId,
    ]);

    const done = await cancel(u, mine.data.entryId);
    expect(done.data).toMatchObject({
      entryId: mine.data.entryId,
      state: 'cancelled',
      position: null,
      endedAt: now().toISOString(),
    });
    expect((await fetchQueue(u)).data.items).toEqual([]);
    expect((await fetchQueue(v)).data.items[0].position).toBe(1);
    expect((await fetchQueue(w)).data.items[0].position).toBe(2);
    await new Promise((r) => setTimeout(r, 20));
    expect(noticesOf(v, 'queue.position').at(-1)?.data).toMatchObject({
      entryId: theirs.data.entryId,
      position: 1,
    });
    expect(noticesOf(w, 'queue.position').at(-1)?.data).toMatchObject({
      entryId: third.data.entryId,
      position: 2,
    });

    const twice = await cancel(u, mine.data.entryId);
    expect(twice.status).toBe(409);
    expect(twice.error).toBe('queue.not_waiting');
    expect(twice.data).toEqual({ state: 'cancelled' });
  });

  it('expires an entry after BIANBU_QUEUE_MAX_WAIT_HOURS, tells its user, and never grants it', async () => {
    const { p, boards, holders } = await fullPool(1);
    const [u, v] = [await makeUser(t.app), await makeUser(t.app)];
    const old = await join(u, { pool: p });
    clock.advance(3 * HOUR_MS);
    const young = await join(v, { pool: p });
    expect(young.data.position).toBe(2);

    clock.advance(3 * HOUR_MS - 1);
    await t.app.leaseScheduler.tick();
    expect(noticesOf(u, 'queue.expired')).toHaveLength(0);
    clock.advance(1);
    await t.app.leaseScheduler.tick();
    expect(noticesOf(u, 'queue.expired')).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ entryId: old.data.entryId }) }),
    ]);
    expect(noticesOf(v, 'queue.position').at(-1)?.data).toMatchObject({ position: 1 });
    expect((await fetchQueue(u)).data).toMatchObject({
      items: [],
      recent: [expect.objectContaining({ entryId: old.data.entryId, state: 'expired' })],
    });
    // a second tick does not expire it again
    await t.app.leaseScheduler.tick();
    expect(noticesOf(u, 'queue.expired')).toHaveLength(1);

    await unlock(holders[0].user, boards[0].id);
    expect(noticesOf(u, 'queue.granted')).toHaveLength(0);
    expect(noticesOf(v, 'queue.granted')).toHaveLength(1);
    expect((await cancel(u, old.data.entryId)).data).toEqual({ state: 'expired' });
  });

  it('refuses bad input with clear errors naming the field', async () => {
    const { p } = await fullPool(1);
    const u = await makeUser(t.app);
    const bad = async (body: Record<string, unknown>, path: string) => {
      const r = await call(t.app, u, 'POST', '/api/device/queue/join', body);
      expect(r.status).toBe(400);
      expect(r.fields?.map((f) => f.path)).toContain(path);
    };
    await bad({ filterReq: { pool: p }, durationKey: '3h', serverName: 'x' }, 'durationKey');
    await bad({ filterReq: { pool: p }, durationKey: '48h', serverName: 'a\u0000b' }, 'serverName');
    await bad({ filterReq: { pool: p }, durationKey: '48h', serverName: 'x'.repeat(65) }, 'serverName');
    await bad({ filterReq: { pool: p }, durationKey: '48h' }, 'serverName');
    await bad({ filterReq: '{not json', durationKey: '48h', serverName: 'x' }, 'filterReq');

    const noMatch = await join(u, { pool: `${p}-nothing` });
    expect(noMatch.status).toBe(400);
    expect(noMatch.error).toBe('lease.no_match');

    for (const entryId of ['', 'x'.repeat(65), 'a\nb']) {
      const r = await cancel(u, entryId);
      expect(r.status).toBe(400);
      expect(r.fields?.[0].path).toBe('entryId');
    }
    const unauth = await t.app.inject({ method: 'GET', url: '/api/device/queue/fetch' });
    expect(unauth.statusCode).toBe(401);
  });

  it('refuses a name in use by a live lease or another waiting entry, and more than five places in line', async () => {
    const { p, holders } = await fullPool(1);
    const u = holders[0].user;
    const taken = await join(u, { pool: p }, 'direct');
    expect(taken.status).toBe(409);
    expect(taken.error).toBe('lease.name_taken');
    expect((await join(u, { pool: p }, 'w0')).code).toBe(20000);
    expect((await join(u, { pool: p, cores: 8 }, 'w0')).error).toBe('lease.name_taken');
    for (let i = 1; i < 5; i++) expect((await join(u, { pool: p, cores: [8, i] }, `w${i}`)).code).toBe(20000);
    const sixth = await join(u, { pool: p, cores: 8 }, 'w5');
    expect(sixth.status).toBe(409);
    expect(sixth.error).toBe('queue.too_many');
  });

  it('gives the lease a suffixed name when the entry’s name was taken meanwhile', async () => {
    const { p, boards, holders } = await fullPool(1);
    const other = pool();
    const spare = await makeBoard(t.app, { attributes: { pool: other } });
    const u = await makeUser(t.app);
    const entry = await join(u, { pool: p }, 'lab');
    const direct = await request(u, { pool: other }, 'tmp');
    expect(direct.data.deviceId).toBe(spare.id);
    const renamed = await call(t.app, u, 'POST', '/api/device/rename-request-device', {
      deviceId: spare.id,
      oldServerName: 'tmp',
      newServerName: 'lab',
    });
    expect(renamed.code).toBe(20000);
    await unlock(holders[0].user, boards[0].id);
    const mine = (await call(t.app, u, 'GET', '/api/device/fetch-request-device')).data.items;
    expect(mine.map((l: { serverName: string }) => l.serverName).sort()).toEqual(
      ['lab', `lab-${entry.data.entryId.slice(0, 4)}`].sort(),
    );
  });

  it('validates BIANBU_QUEUE_MAX_WAIT_HOURS at start', () => {
    expect(loadConfig({ BIANBU_QUEUE_MAX_WAIT_HOURS: '0.5' }).BIANBU_QUEUE_MAX_WAIT_HOURS).toBe(0.5);
    expect(loadConfig({}).BIANBU_QUEUE_MAX_WAIT_HOURS).toBe(24);
    for (const v of ['0', '-1', 'abc', '721']) {
      expect(() => loadConfig({ BIANBU_QUEUE_MAX_WAIT_HOURS: v })).toThrow(
        /^Invalid BIANBU_QUEUE_MAX_WAIT_HOURS=/,
      );
    }
  });
});

describe('the waiting line with a board lab that marks a restored board idle itself', () => {
  let t: TestApp;
  const clock = new ManualClock(Date.parse('2030-06-10T08:00:00Z'));
  const rec: Recorded = newRecorded();

  // The real lab's resetToDefault puts the board back to idle when its restore ends, before the
  // lifecycle records the cleanup as done: the grant must not depend on who flipped the state.
  const fakeLab: Feature = {
    name: 'fake-lab',
    setup(app) {
      app.decorate('boards', {
        resetToDefault: async (id: string) => {
          await app.storage.query(
            "update boards set state = 'idle', state_reason = 'default image restored' where id = $1 and state = 'resetting'",
            [id],
          );
        },
        driver: () => {
          throw new Error('no drivers in this test');
        },
        setState: async () => null,
        recentMetrics: async () => [],
      } as never);
    },
  };

  beforeAll(async () => {
    t = await makeTestApp({ clock, env: noTimer, features: [fakeLab, ...lifecycleOnly(rec), queueFeature] });
  });
  afterAll(() => t.close());

  it('grants the board as its cleanup finishes, with no scheduler tick or request to trigger a sweep', async () => {
    const board = await makeBoard(t.app, { attributes: { pool: 'lab' } });
    const [holder, waiter, rusher] = [await makeUser(t.app), await makeUser(t.app), await makeUser(t.app)];
    const body = { requestDate: endIn(clock.now(), H48), filterReq: { pool: 'lab' }, serverName: 'x' };
    expect((await call(t.app, holder, 'POST', '/api/device/request-device', body)).code).toBe(20000);
    const entry = await call(t.app, waiter, 'POST', '/api/device/queue/join', {
      filterReq: { pool: 'lab' },
      durationKey: '48h',
      serverName: 'wait',
    });
    expect(entry.data.position).toBe(1);
    expect(
      (
        await call(t.app, holder, 'POST', '/api/device/unlock-request-device', {
          deviceId: board.id,
          serverName: 'x',
        })
      ).code,
    ).toBe(20000);
    await t.app.leases.drain();
    // granted by the cleanup itself: no tick ran, and no request came to trigger a sweep
    expect(rec.notices.filter((n) => n.kind === 'queue.granted').map((n) => n.userId)).toEqual([waiter.id]);
    expect((await call(t.app, rusher, 'POST', '/api/device/request-device', body)).error).toBe(
      'lease.none_free',
    );
    const mine = (await call(t.app, waiter, 'GET', '/api/device/fetch-request-device')).data.items;
    expect(mine).toEqual([expect.objectContaining({ deviceId: board.id, serverName: 'wait' })]);
  });
});
