// The whole path on the real service: a leased local board (bubblewrap sandbox) through the device
// lifecycle's apply, a shell on it over /ws, and the shell cut when the apply ends.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Destinations } from '#shared/realtime.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { leaseAndApply, openShell, ShellFollower } from './helpers/shell-client.ts';
import { connectStomp } from './helpers/stomp-client.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

describe('shells on a real local board', () => {
  let t: TestApp;
  let port: number;
  let u: TestUser;
  let applyId: string;
  let deviceId: string;

  const call = async (method: 'GET' | 'POST', url: string, body?: object, apply?: string) => {
    const res = await t.app.inject({
      method,
      url,
      headers: { ...u.headers, ...(apply ? { applyaccess: apply } : {}) },
      ...(body ? { payload: body } : {}),
    });
    return res.json();
  };

  beforeAll(async () => {
    t = await makeTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    u = await makeUser(t.app);
    ({ deviceId, applyId } = await leaseAndApply(t.app, u, 'rt'));
  });
  afterAll(() => t?.close());

  it('runs a command inside the board’s sandbox and ends the shell when the apply ends', async () => {
    const shellId = await openShell(t.app, u, applyId);
    const c = await connectStomp(port, { token: u.token, applyId });
    expect(c.frames[0].command).toBe('CONNECTED');
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    c.sendFrame('SUBSCRIBE', { id: 'board', destination: Destinations.boardState(deviceId), receipt: 'rb' });
    await c.waitFor((x) => x.headers['receipt-id'] === 'rb');
    expect(c.frames.find((x) => x.headers.subscription === 'board')).toBeUndefined();
    f.input('echo "host=$(hostname) sum=$((6*7))"\n');
    await f.until((s) => /host=\S+ sum=42/.test(s), 30_000);
    const unapply = await call('POST', '/api/device/unapply-device', { applyId }, applyId);
    expect(unapply.code).toBe(20000);
    const closed = await c.waitFor(
      (x) => x.headers.subscription === f.subId && x.headers.event === 'closed',
      15_000,
    );
    expect(closed.headers.reason).toBeTruthy();
    c.close();
  });
});
