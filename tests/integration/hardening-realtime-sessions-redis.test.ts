// A sign-in ended on one instance ends the realtime connections and shells another instance holds:
// the revocation travels over the Redis bus. Two instances share one PostgreSQL database and Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFeature } from '#server/identity/identity.routes.ts';
import { systemFeature } from '#server/system/system.routes.ts';
import type { TestApp } from './helpers/app.ts';
import { startTwoInstances, type TwoInstances } from './helpers/realtime-app.ts';
import { openShell, ShellFollower } from './helpers/shell-client.ts';
import { connectStomp } from './helpers/stomp-client.ts';
import { testAppliesFeature } from './helpers/test-applies.ts';
import { makeUser } from './helpers/users.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The bus's handler count (read without assuming the method, so the test fails on behaviour first). */
const busStats = (t: TestApp) =>
  (t.app.bus as { stats?: () => { channels: number; handlers: number } }).stats?.() ?? {
    channels: Number.NaN,
    handlers: Number.NaN,
  };

describe('ending a sign-in across instances', () => {
  let two: TwoInstances;
  let a: TestApp;
  let b: TestApp;
  let portB: number;
  const applies = testAppliesFeature();

  beforeAll(async () => {
    two = await startTwoInstances({ applies, before: [systemFeature], after: [identityFeature] });
    a = two.a.t;
    ({ t: b, port: portB } = two.b);
  });
  afterAll(() => two?.close());

  it('closes the connection and the shell held by instance B when the token is revoked on instance A', async () => {
    expect(a.app.bus.kind).toBe('redis');
    const alice = await makeUser(a.app);
    applies.applies.set('rx', { applyId: 'rx', deviceId: 'board-rx', userId: alice.id, leaseId: 'l-rx' });
    const baseline = busStats(b);
    const shellId = await openShell(b.app, alice, 'rx');
    const c = await connectStomp(portB, { token: alice.token, applyId: 'rx' });
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    f.input('echo RE""ADY\n');
    await f.until((s) => s.includes('READY'));

    const res = await a.app.inject({ method: 'POST', url: '/api/user/logout', headers: alice.headers });
    expect(res.json().code).toBe(20000);
    const at = Date.now();
    const err = await c.waitFor((x) => x.command === 'ERROR', 5000);
    expect(Date.now() - at).toBeLessThan(1500);
    expect(err.headers).toMatchObject({ code: '50008', error: 'auth.token_illegal' });
    await c.closed;
    const deadline = Date.now() + 2000;
    while (!b.app.shells.stats(shellId)[0].ended && Date.now() < deadline) await sleep(20);
    expect(b.app.shells.stats(shellId)[0].ended).toBe('session.ended');
    // Instance B keeps nothing of the connection: no socket, no bus handler beyond the shell's own.
    expect(b.app.realtime.connections.size).toBe(0);
    const after = busStats(b);
    expect(after.channels).toBeLessThanOrEqual(baseline.channels + 1);
    expect(after.handlers).toBeLessThanOrEqual(baseline.handlers + 1);
  });
});
