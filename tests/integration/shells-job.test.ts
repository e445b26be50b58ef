// device-shell-job on the real service: a real shell on a leased local board (the bubblewrap sandbox
// where the host has it), read from the host's /proc. Idle at the prompt, busy while `sleep` runs in
// the foreground (named), idle again after Ctrl+C; a background job does not count; only the apply
// that owns the shell may ask, and a shell of another apply answers like one that does not exist.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_ANSWER_TIMEOUT_MS } from '#server/shells/bus-protocol.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { openShell, ShellFollower } from './helpers/shell-client.ts';
import { connectStomp, type TestStompClient } from './helpers/stomp-client.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

describe('whether a shell runs a foreground job', () => {
  let t: TestApp;
  let port: number;
  let u: TestUser;
  let other: TestUser;
  let applyId: string;
  let otherApplyId: string;
  let c: TestStompClient;

  const call = async (user: TestUser, url: string, body: object, apply: string) => {
    const res = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...user.headers, applyaccess: apply },
      payload: body,
    });
    return res.json();
  };
  const job = (clientId: string, user = u, apply = applyId) =>
    call(user, '/api/device/device-shell-job', { applyId: apply, clientId }, apply);

  /** Polls until the job state is `state` (the shell needs a moment to start or stop a program). */
  const until = async (clientId: string, state: string, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await job(clientId);
      if (r.code === 20000 && r.data.state === state) return r.data;
      if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(r)}, wanted ${state}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  };

  const lease = async (user: TestUser, serverName: string) => {
    const requestDate = new Date(Date.now() + 48 * HOUR_MS).toISOString();
    const leased = await t.app.inject({
      method: 'POST',
      url: '/api/device/request-device',
      headers: user.headers,
      payload: { requestDate, filterReq: {}, serverName },
    });
    expect(leased.json().code).toBe(20000);
    const apply = await t.app.inject({
      method: 'POST',
      url: '/api/device/apply-device',
      headers: user.headers,
      payload: { deviceId: leased.json().data.deviceId },
    });
    expect(apply.json().code).toBe(20000);
    return apply.json().data.applyId as string;
  };

  beforeAll(async () => {
    t = await makeTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    u = await makeUser(t.app);
    other = await makeUser(t.app);
    applyId = await lease(u, 'job-a');
    otherApplyId = await lease(other, 'job-b');
    c = await connectStomp(port, { token: u.token, applyId });
  });
  afterAll(async () => {
    c?.close();
    await t?.close();
  });

  it('answers idle at the prompt, busy with the command while sleep runs, idle again after Ctrl+C', async () => {
    const shellId = await openShell(t.app, u, applyId);
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    f.input('echo ready-$((40+2))\n');
    await f.until((s) => s.includes('ready-42'), 30_000);
    expect(await until(shellId, 'idle')).toEqual({ state: 'idle', command: null });

    f.input('sleep 30\n');
    expect(await until(shellId, 'busy')).toEqual({ state: 'busy', command: 'sleep' });

    f.input('\x03');
    expect(await until(shellId, 'idle')).toEqual({ state: 'idle', command: null });

    // A job sent to the background leaves the prompt in the foreground.
    f.input('sleep 30 &\necho bg-$((6*7))\n');
    await f.until((s) => s.includes('bg-42'));
    expect((await job(shellId)).data).toEqual({ state: 'idle', command: null });
  });

  it('says a serial console is unknown and an ended shell ended', async () => {
    const serial = await openShell(t.app, u, applyId, 'serial');
    expect((await job(serial)).data).toEqual({ state: 'unknown', command: null });

    const shellId = await openShell(t.app, u, applyId);
    const closed = await call(u, '/api/device/unapply-device-shell', { applyId, clientId: shellId }, applyId);
    expect(closed.code).toBe(20000);
    expect((await job(shellId)).data).toEqual({ state: 'ended', command: null });
  });

  it('answers "not found" for another apply’s shell, an unknown id and refuses malformed input', async () => {
    const theirs = await openShell(t.app, other, otherApplyId);
    // The other user asks for their own shell: fine.
    expect((await job(theirs, other, otherApplyId)).code).toBe(20000);
    // Our apply naming their shell: not found, as if it did not exist.
    const mine = await job(theirs);
    expect(mine.code).not.toBe(20000);
    expect(mine.data?.key ?? mine.key ?? JSON.stringify(mine)).toMatch(/shell\.not_found/);
    // Their apply id with our token: the apply is not ours.
    const crossed = await call(
      u,
      '/api/device/device-shell-job',
      { applyId: otherApplyId, clientId: theirs },
      otherApplyId,
    );
    expect(crossed.code).not.toBe(20000);

    // No instance listens to an unknown shell, so the answer does not wait for the owner's 5 s.
    const asked = Date.now();
    const unknown = await job('no-such-shell');
    expect(JSON.stringify(unknown)).toMatch(/shell\.not_found/);
    expect(Date.now() - asked).toBeLessThan(OWNER_ANSWER_TIMEOUT_MS / 2);
    const closedAt = Date.now();
    const closed = await call(
      u,
      '/api/device/unapply-device-shell',
      { applyId, clientId: 'no-such-shell' },
      applyId,
    );
    expect(JSON.stringify(closed)).toMatch(/shell\.not_found/);
    expect(Date.now() - closedAt).toBeLessThan(OWNER_ANSWER_TIMEOUT_MS / 2);

    const bad = await call(
      u,
      '/api/device/device-shell-job',
      { applyId, clientId: 'x'.repeat(200) },
      applyId,
    );
    expect(bad.code).not.toBe(20000);
    expect(JSON.stringify(bad)).toMatch(/request\.invalid|clientId/);
  }, 20_000);
});
