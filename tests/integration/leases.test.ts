import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import type { CallContext } from '#server/http/handlers.ts';
import { HOUR_MS, LEASE_END_TOLERANCE_MS } from '#shared/constants.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import type { TestUser } from './helpers/users.ts';
import {
  boardState,
  call,
  D7,
  endIn,
  H48,
  lifecycleOnly,
  M1,
  makeBoard,
  makeUser,
  newRecorded,
  noTimer,
  type Recorded,
} from './leases.fixtures.ts';

describe('leases, applies and history', () => {
  let t: TestApp;
  let clock: ManualClock;
  let rec: Recorded;
  const now = () => clock.now();

  beforeAll(async () => {
    clock = new ManualClock(Date.parse('2030-03-01T08:00:00Z'));
    rec = newRecorded();
    t = await makeTestApp({ clock, env: noTimer, features: lifecycleOnly(rec) });
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    // Each test starts with an empty lab: earlier boards go out of service, their leases end.
    await t.storage.exec(
      "update applies set state = 'closed' where state = 'open'; update leases set state = 'released', cleaned_at = ended_at where state = 'live'; update boards set retired_at = now(), state = 'offline' where retired_at is null;",
    );
  });

  const request = (u: TestUser, body: Record<string, unknown>) =>
    call(t.app, u, 'POST', '/api/device/request-device', body);

  it('leases a free matching board and lists it with its end and time left', async () => {
    const b = await makeBoard(t.app, { attributes: { cpu: 'X60', cores: 8 } });
    const u = await makeUser(t.app);
    const res = await request(u, {
      requestDate: endIn(now(), H48),
      filterReq: { cores: 8 },
      serverName: 'my k1',
    });
    expect(res.code).toBe(20000);
    expect(res.data).toMatchObject({
      deviceId: b.id,
      serverName: 'my k1',
      durationKey: '48h',
      state: 'live',
      boardState: 'leased',
      remainingMs: H48,
      applyId: null,
    });
    expect(await boardState(t.app, b.id)).toBe('leased');

    clock.advance(HOUR_MS);
    const list = await call(t.app, u, 'GET', '/api/device/fetch-request-device');
    expect(list.data.now).toBe(now().toISOString());
    expect(list.data.items).toHaveLength(1);
    expect(list.data.items[0]).toMatchObject({ deviceId: b.id, remainingMs: H48 - HOUR_MS });
    const simple = await call(t.app, u, 'GET', '/api/device/fetch-request-device-simple');
    expect(simple.data).toEqual([{ deviceId: b.id, serverName: 'my k1', endsAt: res.data.endsAt }]);

    const other = await makeUser(t.app);
    expect((await call(t.app, other, 'GET', '/api/device/fetch-request-device')).data.items).toEqual([]);
  });

  it('offers exactly 48 hours, 7 days and 1 month, within a small tolerance', async () => {
    for (let i = 0; i < 3; i++) await makeBoard(t.app);
    const u = await makeUser(t.app);
    const keys: string[] = [];
    for (const [ms, skew] of [
      [H48, LEASE_END_TOLERANCE_MS - 1000],
      [D7, -(LEASE_END_TOLERANCE_MS - 1000)],
      [M1, 0],
    ]) {
      const res = await request(u, {
        requestDate: endIn(now(), ms + skew),
        filterReq: {},
        serverName: `d${ms}`,
      });
      expect(res.code).toBe(20000);
      keys.push(res.data.durationKey);
    }
    expect(keys).toEqual(['48h', '7d', '1m']);
  });

  it('refuses a duration not offered and changes nothing', async () => {
    const b = await makeBoard(t.app);
    const u = await makeUser(t.app);
    for (const ms of [3 * HOUR_MS, H48 + LEASE_END_TOLERANCE_MS + 60_000, 40 * 86_400_000, -HOUR_MS]) {
      const res = await request(u, { requestDate: endIn(now(), ms), filterReq: {}, serverName: 'x' });
      expect(res.status).toBe(400);
      expect(res.error).toBe('lease.duration_not_offered');
      expect(res.data.offered.map((o: { key: string }) => o.key)).toEqual(['48h', '7d', '1m']);
    }
    const garbage = await request(u, { requestDate: 'next tuesday', filterReq: {}, serverName: 'x' });
    expect(garbage.status).toBe(400);
    expect(garbage.fields?.[0].path).toBe('requestDate');
    expect(await boardState(t.app, b.id)).toBe('idle');
    expect((await call(t.app, u, 'GET', '/api/device/fetch-request-device')).data.items).toEqual([]);
  });

  it('matches filters exactly, by any of a list, by numeric range, and by model; also as JSON text', async () => {
    const small = await makeBoard(t.app, {
      model: 'K1',
      attributes: { cores: 4, os: 'Bianbu', memoryMb: 2048 },
    });
    const big = await makeBoard(t.app, {
      model: 'K1-Pro',
      attributes: { cores: 8, os: 'bianbu', memoryMb: 16384 },
    });
    const u = await makeUser(t.app);
    const a = await request(u, {
      requestDate: endIn(now(), H48),
      filterReq: { memoryMb: { min: 8000 } },
      serverName: 'a',
    });
    expect(a.data.deviceId).toBe(big.id);
    const b = await request(u, {
      requestDate: endIn(now(), H48),
      filterReq: JSON.stringify({ os: 'BIANBU', model: ['k1', 'x'] }),
      serverName: 'b',
    });
    expect(b.data.deviceId).toBe(small.id);
    const none = await request(u, {
      requestDate: endIn(now(), H48),
      filterReq: { cores: 64 },
      serverName: 'c',
    });
    expect(none.status).toBe(400);
    expect(none.error).toBe('lease.no_match');
  });

  it('says no matching board is free and when the next one frees', async () => {
    const b1 = await makeBoard(t.app, { attributes: { cores: 8 } });
    const b2 = await makeBoard(t.app, { attributes: { cores: 8 } });
    await makeBoard(t.app, { attributes: { cores: 4 } });
    const u1 = await makeUser(t.app);
    const u2 = await makeUser(t.app);
    const first = await request(u1, {
      requestDate: endIn(now(), D7),
      filterReq: { cores: 8 },
      serverName: 'one',
    });
    const second = await request(u1, {
      requestDate: endIn(now(), H48),
      filterReq: { cores: 8 },
      serverName: 'two',
    });
    expect([first.data.deviceId, second.data.deviceId].sort()).toEqual([b1.id, b2.id].sort());
    const res = await request(u2, {
      requestDate: endIn(now(), H48),
      filterReq: { cores: 8 },
      serverName: 'mine',
    });
    expect(res.status).toBe(409);
    expect(res.error).toBe('lease.none_free');
    expect(res.data).toEqual({ nextFreeAt: second.data.endsAt, matching: 2 });
    expect(res.message).toContain(second.data.endsAt);
  });

  it('keeps out boards in maintenance, offline or retired', async () => {
    await makeBoard(t.app, { state: 'maintenance' });
    await makeBoard(t.app, { state: 'offline' });
    await makeBoard(t.app, { retiredAt: new Date() });
    const u = await makeUser(t.app);
    const res = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'x' });
    expect(res.error).toBe('lease.none_free');
    expect(res.data.nextFreeAt).toBeNull();
  });

  it('refuses a serverName the caller already uses for a live lease, and hands out no board', async () => {
    await makeBoard(t.app);
    const b2 = await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    expect(
      (await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'dev' })).code,
    ).toBe(20000);
    const dup = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: ' dev ' });
    expect(dup.status).toBe(409);
    expect(dup.error).toBe('lease.name_taken');
    expect(dup.data).toEqual({ serverName: 'dev' });
    expect(await boardState(t.app, b2.id)).toBe('idle');
    // names are per user
    expect(
      (await request(other, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'dev' })).code,
    ).toBe(20000);
  });

  it('renames a held board, refuses a name in use and someone else’s board', async () => {
    await makeBoard(t.app);
    await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    const a = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'alpha' });
    await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'beta' });
    const rename = (who: TestUser, body: Record<string, unknown>) =>
      call(t.app, who, 'POST', '/api/device/rename-request-device', body);

    const ok = await rename(u, { deviceId: a.data.deviceId, oldServerName: 'alpha', newServerName: 'gamma' });
    expect(ok.data).toMatchObject({ deviceId: a.data.deviceId, serverName: 'gamma' });
    const taken = await rename(u, {
      deviceId: a.data.deviceId,
      oldServerName: 'gamma',
      newServerName: 'beta',
    });
    expect(taken.status).toBe(409);
    expect(taken.error).toBe('lease.name_taken');
    const stale = await rename(u, {
      deviceId: a.data.deviceId,
      oldServerName: 'alpha',
      newServerName: 'delta',
    });
    expect(stale.error).toBe('lease.not_found');
    const theirs = await rename(other, {
      deviceId: a.data.deviceId,
      oldServerName: 'gamma',
      newServerName: 'mine',
    });
    expect(theirs.status).toBe(404);
    expect(theirs.error).toBe('lease.not_found');
    const names = (await call(t.app, u, 'GET', '/api/device/fetch-request-device-simple')).data.map(
      (l: { serverName: string }) => l.serverName,
    );
    expect(names.sort()).toEqual(['beta', 'gamma']);
  });

  it('renews to a later end within the longest duration, and refuses the rest unchanged', async () => {
    await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    const a = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'r' });
    const renew = (who: TestUser, renewalDate: string, serverName = 'r') =>
      call(t.app, who, 'POST', '/api/device/renewal-device', {
        deviceId: a.data.deviceId,
        serverName,
        renewalDate,
      });

    const earlier = await renew(u, endIn(now(), 24 * HOUR_MS));
    expect(earlier.error).toBe('lease.renewal_not_later');
    const tooFar = await renew(u, endIn(now(), M1 + LEASE_END_TOLERANCE_MS + 60_000));
    expect(tooFar.status).toBe(400);
    expect(tooFar.error).toBe('lease.renewal_too_long');
    expect(tooFar.data.latest).toBe(endIn(now(), M1));
    expect((await renew(other, endIn(now(), D7))).error).toBe('lease.not_found');
    expect((await renew(u, endIn(now(), D7), 'wrong name')).error).toBe('lease.not_found');
    let list = await call(t.app, u, 'GET', '/api/device/fetch-request-device');
    expect(list.data.items[0]).toMatchObject({ endsAt: a.data.endsAt, renewals: 0 });

    const ok = await renew(u, endIn(now(), D7));
    expect(ok.code).toBe(20000);
    expect(ok.data).toMatchObject({ endsAt: endIn(now(), D7), renewals: 1, durationKey: '48h' });
    clock.advance(D7 - HOUR_MS);
    const max = await renew(u, endIn(now(), M1));
    expect(max.data.endsAt).toBe(endIn(now(), M1));
    list = await call(t.app, u, 'GET', '/api/device/fetch-request-device');
    expect(list.data.items[0]).toMatchObject({ renewals: 2, remainingMs: M1 });
  });

  it('gives an applyId for a held board, the same one again, and none for someone else’s board', async () => {
    await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    const lease = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'w' });
    const apply = await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: lease.data.deviceId });
    expect(apply.code).toBe(20000);
    expect(apply.data.applyId).toMatch(/^[0-9a-f-]{36}$/);
    expect(apply.data.deviceDto).toMatchObject({
      deviceId: lease.data.deviceId,
      serverName: 'w',
      leaseId: lease.data.leaseId,
      endsAt: lease.data.endsAt,
      state: 'leased',
    });
    const again = await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: lease.data.deviceId });
    expect(again.data.applyId).toBe(apply.data.applyId);
    expect((await call(t.app, u, 'GET', '/api/device/fetch-request-device')).data.items[0].applyId).toBe(
      apply.data.applyId,
    );
    const theirs = await call(t.app, other, 'POST', '/api/device/apply-device', {
      deviceId: lease.data.deviceId,
    });
    expect(theirs.status).toBe(404);
    expect(theirs.error).toBe('device.not_held');
    expect(await t.app.listAppliesOf!(u.id)).toEqual([
      {
        applyId: apply.data.applyId,
        deviceId: lease.data.deviceId,
        serverName: 'w',
        expiresAt: lease.data.endsAt,
      },
    ]);
    expect(await t.app.listAppliesOf!(other.id)).toEqual([]);
  });

  it('checks an applyId and closes it with unapply-device, leaving the lease', async () => {
    await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    const lease = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'c' });
    const { applyId } = (
      await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: lease.data.deviceId })
    ).data;
    const check = (who: TestUser, id: string) =>
      call(t.app, who, 'POST', '/api/device/check-apply-id', { applyId: id });
    expect((await check(u, applyId)).data).toEqual({
      valid: true,
      reason: null,
      applyId,
      deviceId: lease.data.deviceId,
      serverName: 'c',
      endsAt: lease.data.endsAt,
    });
    expect((await check(other, applyId)).data).toMatchObject({
      valid: false,
      reason: 'apply.not_found',
      deviceId: null,
    });
    expect((await check(u, 'no-such-apply')).data).toMatchObject({ valid: false, reason: 'apply.not_found' });

    const theirs = await call(t.app, other, 'POST', '/api/device/unapply-device', { applyId });
    expect(theirs.error).toBe('apply.not_found');
    expect((await check(u, applyId)).data.valid).toBe(true);

    const closed = await call(t.app, u, 'POST', '/api/device/unapply-device', { applyId });
    expect(closed.data).toEqual({ applyId, closedAt: now().toISOString() });
    expect(rec.closedApplies).toContainEqual({ applyId, reason: 'apply.ended' });
    expect((await check(u, applyId)).data).toMatchObject({ valid: false, reason: 'apply.closed' });
    expect((await call(t.app, u, 'GET', '/api/device/fetch-request-device')).data.items[0]).toMatchObject({
      state: 'live',
      applyId: null,
    });
    const next = await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: lease.data.deviceId });
    expect(next.data.applyId).not.toBe(applyId);
  });

  it('refuses board actions without an applyId, with a stale one, or with someone else’s', async () => {
    await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    const lease = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'p' });
    const { applyId } = (
      await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: lease.data.deviceId })
    ).data;
    const missing = await call(t.app, u, 'POST', '/api/device/power-reset', {});
    expect(missing.status).toBe(400);
    expect(missing.error).toBe('apply.missing');
    const viaOther = await call(t.app, other, 'POST', '/api/device/power-reset', { applyId });
    expect(viaOther.status).toBe(404);
    expect(viaOther.error).toBe('apply.not_found');
    const viaHeader = await call(
      t.app,
      other,
      'POST',
      '/api/device/call-plugin',
      { topic: 't' },
      { applyaccess: applyId },
    );
    expect(viaHeader.error).toBe('apply.not_found');
    await call(t.app, u, 'POST', '/api/device/unapply-device', { applyId });
    const stale = await call(
      t.app,
      u,
      'POST',
      '/api/device/power-reset',
      {},
      { applyaccess: `"${applyId}"` },
    );
    expect(stale.status).toBe(404);
    expect(stale.error).toBe('apply.closed');
    expect(await boardState(t.app, lease.data.deviceId)).toBe('leased');
  });

  it('looks an apply up while the token is checked (PostgreSQL), and still judges it by the user', async () => {
    await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    const lease = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'e' });
    const { applyId } = (
      await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: lease.data.deviceId })
    ).data;
    const app = t.app;
    const resolve = app.resolveApply!;
    const ctxOf = (userId: string, headers = {}) =>
      ({ app, req: { headers }, user: { id: userId } }) as unknown as CallContext;
    const early = app.prefetchApply!({}, { applyId });
    // PGlite runs one query at a time: there is nothing to overlap, so nothing is looked up early.
    if (app.storage.kind !== 'postgres') {
      expect(early).toBeUndefined();
      return;
    }
    expect(early?.applyId).toBe(applyId);
    // The row looked up before anyone was authenticated opens nothing for another user.
    await expect(resolve(ctxOf(other.id), { applyId }, early)).rejects.toMatchObject({
      key: 'apply.not_found',
    });
    expect(await resolve(ctxOf(u.id), { applyId }, early)).toMatchObject({
      applyId,
      deviceId: lease.data.deviceId,
      userId: u.id,
    });
    // An early row of another apply than the one named is not used: the named one is looked up.
    await expect(resolve(ctxOf(u.id), { applyId: 'a'.repeat(32) }, early)).rejects.toMatchObject({
      key: 'apply.not_found',
    });
    // A named apply that does not exist: the early lookup fails quietly, the call answers "not found".
    const named = { applyaccess: 'b'.repeat(32) };
    const none = app.prefetchApply!(named, {});
    expect(none?.applyId).toBe(named.applyaccess);
    await expect(resolve(ctxOf(u.id, named), {}, none)).rejects.toMatchObject({ key: 'apply.not_found' });
  });

  it('refuses an apply whose lease has passed its end, before the scheduler has run', async () => {
    await makeBoard(t.app);
    const u = await makeUser(t.app);
    const lease = await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'e' });
    const { applyId } = (
      await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: lease.data.deviceId })
    ).data;
    clock.advance(H48);
    const res = await call(t.app, u, 'POST', '/api/device/call-plugin', {
      applyId,
      topic: 'led',
      data: { on: true },
    });
    expect(res.status).toBe(404);
    expect(res.error).toBe('apply.lease_ended');
    expect((await call(t.app, u, 'GET', '/api/device/fetch-request-device')).data.items).toEqual([]);
  });

  it('unlocks a held board: applies and shells close, the board returns to the pool', async () => {
    const b = await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'u' });
    const { applyId } = (await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: b.id })).data;
    const theirs = await call(t.app, other, 'POST', '/api/device/unlock-request-device', {
      deviceId: b.id,
      serverName: 'u',
    });
    expect(theirs.error).toBe('lease.not_found');
    expect(await boardState(t.app, b.id)).toBe('leased');

    const res = await call(t.app, u, 'POST', '/api/device/unlock-request-device', {
      deviceId: b.id,
      serverName: 'u',
    });
    expect(res.data).toEqual({ deviceId: b.id, serverName: 'u', endedAt: now().toISOString() });
    await t.app.leases.drain();
    expect(await boardState(t.app, b.id)).toBe('idle');
    expect(rec.closedApplies).toContainEqual({ applyId, reason: 'apply.ended' });
    expect(rec.closedBoards).toContainEqual({ deviceId: b.id, reason: 'apply.ended' });
    expect(rec.notices).toContainEqual(expect.objectContaining({ userId: u.id, kind: 'lease.released' }));
    expect((await call(t.app, u, 'POST', '/api/device/check-apply-id', { applyId })).data.reason).toBe(
      'apply.closed',
    );
    expect(await t.app.listAppliesOf!(u.id)).toEqual([]);
    const again = await call(t.app, u, 'POST', '/api/device/unlock-request-device', {
      deviceId: b.id,
      serverName: 'u',
    });
    expect(again.error).toBe('lease.not_found');
    // the name is free again, and so is the board
    const re = await request(other, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'u' });
    expect(re.data.deviceId).toBe(b.id);
    const events = await t.storage.query<{ from_state: string; to_state: string }>(
      'select from_state, to_state from board_events where board_id = $1 order by id',
      [b.id],
    );
    expect(events.map((e) => `${e.from_state}>${e.to_state}`)).toEqual([
      'idle>leased',
      'leased>resetting',
      'resetting>idle',
      'idle>leased',
    ]);
  });

  it('answers load series for the holder only, with rates computed from counters', async () => {
    const b = await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'l' });
    const base = now().getTime() - 30_000;
    for (let i = 0; i < 4; i++) {
      await t.storage.query(
        `insert into board_metrics (board_id, at, cpu_percent, mem_used, mem_total, disk_used, disk_total, net_rx, net_tx)
         values ($1, $2, $3, $4, 1000, $5, 10000, $6, $7)`,
        [
          b.id,
          new Date(base + i * 10_000).toISOString(),
          10 * i,
          250 * i,
          100 * i,
          [0, 5000, 15000, 100][i],
          1000 * i,
        ],
      );
    }
    const q = { deviceId: b.id, serverName: 'l', windowSeconds: 60 };
    const cpu = await call(t.app, u, 'GET', '/api/device/recent-cpu-loading', q);
    expect(cpu.data).toEqual({
      deviceId: b.id,
      unit: 'percent',
      timestamps: [0, 1, 2, 3].map((i) => (base + i * 10_000) / 1000),
      series: [{ key: 'cpu', values: [0, 10, 20, 30] }],
      total: null,
    });
    const mem = await call(t.app, u, 'GET', '/api/device/recent-mem-loading', q);
    expect(mem.data.series[0].values).toEqual([0, 25, 50, 75]);
    expect(mem.data.total).toBe(1000);
    const disk = await call(t.app, u, 'GET', '/api/device/recent-disk-loading', q);
    expect(disk.data).toMatchObject({
      unit: 'bytes',
      total: 10000,
      series: [{ key: 'used', values: [0, 100, 200, 300] }],
    });
    const net = await call(t.app, u, 'GET', '/api/device/recent-net-loading', q);
    expect(net.data.unit).toBe('bytesPerSecond');
    expect(net.data.series).toEqual([
      { key: 'rx', values: [null, 500, 1000, null] },
      { key: 'tx', values: [null, 100, 100, 100] },
    ]);
    const short = await call(t.app, u, 'GET', '/api/device/recent-cpu-loading', { ...q, windowSeconds: 15 });
    expect(short.data.series[0].values).toEqual([20, 30]);

    const theirs = await call(t.app, other, 'GET', '/api/device/recent-cpu-loading', { deviceId: b.id });
    expect(theirs.status).toBe(404);
    expect(theirs.error).toBe('device.not_held');
    const wrongName = await call(t.app, u, 'GET', '/api/device/recent-cpu-loading', {
      deviceId: b.id,
      serverName: 'x',
    });
    expect(wrongName.error).toBe('device.not_held');
  });

  it('keeps each caller’s apply history, work history and 10 most recent applies to themselves', async () => {
    const b = await makeBoard(t.app);
    const u = await makeUser(t.app);
    const other = await makeUser(t.app);
    await request(u, { requestDate: endIn(now(), H48), filterReq: {}, serverName: 'h' });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      clock.advance(1000);
      const { applyId } = (await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: b.id })).data;
      ids.push(applyId);
      await call(t.app, u, 'POST', '/api/device/unapply-device', { applyId });
    }
    const recent = await call(t.app, u, 'GET', '/api/device/recent-applies');
    expect(recent.data.map((a: { applyId: string }) => a.applyId)).toEqual(ids.slice(2).reverse());
    expect(recent.data[0]).toMatchObject({
      deviceId: b.id,
      serverName: 'h',
      open: false,
      closeReason: 'unapplied',
    });
    const three = await call(t.app, u, 'GET', '/api/device/recent-applies', { limit: 3 });
    expect(three.data).toHaveLength(3);
    expect((await call(t.app, u, 'GET', '/api/device/recent-applies', { limit: 11 })).status).toBe(400);

    const page2 = await call(t.app, u, 'GET', '/api/device/apply-history', { page: 2, pageSize: 5 });
    expect(page2.data.total).toBe(12);
    expect(page2.data.items.map((a: { applyId: string }) => a.applyId)).toEqual(ids.slice(2, 7).reverse());

    const work = await call(t.app, u, 'POST', '/api/device/work-history', { deviceId: b.id });
    expect(work.data.leases).toHaveLength(1);
    expect(work.data.leases[0]).toMatchObject({ serverName: 'h', state: 'live', endedAt: null });
    expect(work.data.applies).toHaveLength(12);

    expect((await call(t.app, other, 'GET', '/api/device/recent-applies')).data).toEqual([]);
    expect((await call(t.app, other, 'GET', '/api/device/apply-history')).data).toEqual({
      total: 0,
      items: [],
    });
    const theirs = await call(t.app, other, 'POST', '/api/device/work-history', { deviceId: b.id });
    expect(theirs.data).toEqual({ deviceId: b.id, leases: [], applies: [] });
  });

  it('answers 401 to every lifecycle call without a token', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/device/fetch-request-device' });
    expect(res.statusCode).toBe(401);
    const post = await t.app.inject({ method: 'POST', url: '/api/device/request-device', payload: {} });
    expect(post.statusCode).toBe(401);
  });
});
