import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realtimeFeature } from '#server/realtime/realtime.feature.ts';
import { Destinations, SHELL_FLOW } from '#shared/realtime.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { openShell, ShellFollower } from './helpers/shell-client.ts';
import { connectStomp } from './helpers/stomp-client.ts';
import { testAppliesFeature } from './helpers/test-applies.ts';
import { testBoardsFeature } from './helpers/test-pty-driver.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('shells over the realtime channel', () => {
  let t: TestApp;
  let port: number;
  let alice: TestUser;
  let bob: TestUser;
  const applies = testAppliesFeature();

  beforeAll(async () => {
    t = await makeTestApp({ features: [applies, testBoardsFeature(), realtimeFeature] });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    alice = await makeUser(t.app);
    bob = await makeUser(t.app);
    for (const [id, user, dev] of [
      ['a1', alice, 'board-a'],
      ['a2', alice, 'board-a2'],
      ['b1', bob, 'board-b'],
    ] as const)
      applies.applies.set(id, { applyId: id, deviceId: dev, userId: user.id, leaseId: `lease-${id}` });
  });
  afterAll(() => t.close());

  it('runs a command, echoes input and reflows to a resize', async () => {
    const shellId = await openShell(t.app, alice, 'a1');
    const c = await connectStomp(port, { token: alice.token, applyId: 'a1' });
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    c.sendFrame(
      'SEND',
      { destination: Destinations.shellResize(shellId) },
      JSON.stringify({ cols: 101, rows: 33 }),
    );
    f.input('stty size; echo do""ne\n');
    await f.until((s) => s.includes('33 101') && s.includes('done'));
    c.close();
  });

  it('answers the receipt of a lone keystroke, resize and acknowledgement', async () => {
    // Each frame alone on the socket, nothing queued before it (the path a keystroke takes at once):
    // `bianbu exec` asks a receipt for every piece of its stdin and counts the unanswered as lost.
    const shellId = await openShell(t.app, alice, 'a1');
    const c = await connectStomp(port, { token: alice.token, applyId: 'a1' });
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    await f.until((s) => s.includes('$') || s.includes('#'));
    const lone = async (headers: Record<string, string>, body: string | undefined, receipt: string) => {
      c.sendFrame('SEND', { ...headers, receipt }, body);
      await c.waitFor((x) => x.command === 'RECEIPT' && x.headers['receipt-id'] === receipt, 5000);
    };
    await lone({ destination: Destinations.shellInput(shellId) }, 'echo lone-$((6*7))\n', 'typed');
    await f.until((s) => s.includes('lone-42'));
    await lone(
      { destination: Destinations.shellResize(shellId) },
      JSON.stringify({ cols: 90, rows: 30 }),
      'sized',
    );
    await lone({ destination: Destinations.shellAck(shellId), offset: String(f.next) }, undefined, 'acked');
    expect(c.frames.filter((x) => x.command === 'ERROR')).toEqual([]);
    c.close();
  });

  it('takes a keystroke sent right behind its SUBSCRIBE after the subscription, not before it', async () => {
    // Both frames in flight at once: the SEND waits for the SUBSCRIBE before it (which looks the
    // shell up), so it is never refused as a SEND to a shell the connection is not subscribed to.
    const shellId = await openShell(t.app, alice, 'a1');
    const c = await connectStomp(port, { token: alice.token, applyId: 'a1' });
    c.sendFrame('SUBSCRIBE', { id: 'q', destination: Destinations.shellOutput(shellId), receipt: 'rq' });
    c.sendFrame('SEND', { destination: Destinations.shellInput(shellId) }, 'true\n');
    await c.waitFor((f) => f.command === 'RECEIPT' && f.headers['receipt-id'] === 'rq');
    await new Promise((r) => setTimeout(r, 300));
    expect(c.frames.filter((f) => f.command === 'ERROR')).toEqual([]);
    c.close();
  });

  it('refuses a subscription to another user’s shell without closing the connection, then refuses SEND to it', async () => {
    const shellId = await openShell(t.app, alice, 'a1');
    const c = await connectStomp(port, { token: bob.token, applyId: 'b1' });
    c.sendFrame('SUBSCRIBE', { id: 'x', destination: Destinations.shellOutput(shellId), receipt: 'rx' });
    await c.waitFor((f) => f.headers['receipt-id'] === 'rx');
    const refused = c.frames.find((f) => f.headers.subscription === 'x')!;
    expect(refused.headers).toMatchObject({ event: 'refused', error: 'resource.not_found' });
    // Still connected: a second subscription works.
    c.sendFrame('SUBSCRIBE', { id: 'n', destination: Destinations.userNotifications, receipt: 'rn' });
    await c.waitFor((f) => f.headers['receipt-id'] === 'rn');
    c.sendFrame('SEND', { destination: Destinations.shellInput(shellId) }, 'id\n');
    await c.waitFor((f) => f.command === 'ERROR');
    await c.closed;
    // Nor may bob close alice's shell over HTTP with his own apply.
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/device/unapply-device-shell',
      headers: { ...bob.headers, applyaccess: 'b1' },
      payload: { applyId: 'b1', clientId: shellId },
    });
    expect(res.json().code).toBe(40400);
    expect(t.app.shells.stats(shellId)[0].ended).toBeNull();
  });

  it('resumes after a cut mid-stream with every byte exactly once', async () => {
    const shellId = await openShell(t.app, alice, 'a1');
    const c1 = await connectStomp(port, { token: alice.token, applyId: 'a1' });
    const f1 = await ShellFollower.subscribe(c1, shellId, { offset: 0 });
    f1.input('stty -echo; echo BEGIN""MARK; seq 1 200000; echo END""MARK\n');
    await f1.until((s) => s.length > 200_000);
    c1.close();
    const cutAt = f1.next;
    await sleep(200);
    const c2 = await connectStomp(port, { token: alice.token, applyId: 'a1' });
    const f2 = await ShellFollower.subscribe(c2, shellId, { offset: cutAt });
    await f2.until((s) => s.includes('ENDMARK'), 30_000);
    const all = Buffer.concat([f1.bytes, f2.bytes]);
    // Every byte the shell produced, in order: the whole output still sits in the server's ring.
    const ring = t.app.shells.get(shellId)!.ring.readFrom(0);
    expect(ring.lost).toBe(0);
    expect(all.equals(ring.data.subarray(0, all.length))).toBe(true);
    const text = all.toString('utf8');
    const seqText = text.slice(text.indexOf('BEGINMARK\r\n') + 11, text.indexOf('ENDMARK'));
    const numbers = seqText.split('\r\n').filter(Boolean).map(Number);
    expect(numbers.length).toBe(200_000);
    expect(numbers.every((n, i) => n === i + 1)).toBe(true);
    expect(cutAt).toBeGreaterThan(200_000);
    expect(cutAt).toBeLessThan(all.length);
    c2.close();
  });

  it('pauses the PTY for a client that never acknowledges and keeps server memory bounded', async () => {
    const shellId = await openShell(t.app, alice, 'a2');
    const c = await connectStomp(port, { token: alice.token, applyId: 'a2' });
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0, ack: false });
    f.input('cat /dev/zero | tr "\\0" x | fold -w 100\n');
    let s = t.app.shells.stats(shellId)[0];
    const deadline = Date.now() + 15_000;
    while (!s.paused && Date.now() < deadline) {
      await sleep(50);
      s = t.app.shells.stats(shellId)[0];
    }
    expect(s.paused).toBe(true);
    await sleep(500);
    const a = t.app.shells.stats(shellId)[0];
    await sleep(500);
    const b = t.app.shells.stats(shellId)[0];
    // Paused: nothing more is produced, unacknowledged bytes stay near the high-water mark.
    expect(b.ringEnd).toBe(a.ringEnd);
    expect(b.ringEnd - b.acked).toBeLessThan(SHELL_FLOW.highWater + 256 * 1024);
    expect(b.ringAllocated).toBeLessThanOrEqual(SHELL_FLOW.ringBytes);
    expect(t.app.realtime.stats().pendingBytes).toBeLessThan(SHELL_FLOW.highWater + 256 * 1024);
    // Acknowledging everything resumes it.
    f.pump();
    f.ack(b.ringEnd);
    const resumeBy = Date.now() + 5000;
    while (t.app.shells.stats(shellId)[0].ringEnd === b.ringEnd && Date.now() < resumeBy) await sleep(20);
    expect(t.app.shells.stats(shellId)[0].ringEnd).toBeGreaterThan(b.ringEnd);
    c.close();
    await t.app.shells.close('a2', shellId);
  });

  it('resumes a paused PTY at the first acknowledgement that brings it under the low-water mark, before the window drains', async () => {
    const shellId = await openShell(t.app, alice, 'a2');
    const c = await connectStomp(port, { token: alice.token, applyId: 'a2' });
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0, ack: false });
    f.input('cat /dev/zero | tr "\\0" y | fold -w 100\n');
    const deadline = Date.now() + 15_000;
    while (!t.app.shells.stats(shellId)[0].paused && Date.now() < deadline) await sleep(20);
    await sleep(300);
    const b = t.app.shells.stats(shellId)[0];
    expect(b.paused).toBe(true);
    // One acknowledgement step below the high-water mark: most of the window still unacknowledged
    // (it used to wait until only 64 KiB were).
    const left = SHELL_FLOW.highWater - SHELL_FLOW.ackEveryBytes - 1;
    f.pump();
    f.ack(b.ringEnd - left);
    const resumeBy = Date.now() + 5000;
    while (t.app.shells.stats(shellId)[0].ringEnd === b.ringEnd && Date.now() < resumeBy) await sleep(20);
    expect(t.app.shells.stats(shellId)[0].ringEnd).toBeGreaterThan(b.ringEnd);
    c.close();
    await t.app.shells.close('a2', shellId);
  });

  it('closes a shell on unapply-device-shell and tells the pane why', async () => {
    const shellId = await openShell(t.app, alice, 'a1');
    const c = await connectStomp(port, { token: alice.token, applyId: 'a1' });
    const f = await ShellFollower.subscribe(c, shellId);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/device/unapply-device-shell',
      headers: { ...alice.headers, applyaccess: 'a1' },
      payload: { applyId: 'a1', clientId: shellId },
    });
    expect(res.json().code).toBe(20000);
    await c.waitFor((x) => x.headers.subscription === f.subId && x.headers.event === 'closed');
    f.pump();
    expect(f.closedReason).toBe('shell.closed');
    // Input to an ended shell is dropped quietly; the connection stays up.
    f.input('echo still-here\n');
    c.sendFrame('SUBSCRIBE', { id: 'n', destination: Destinations.userNotifications, receipt: 'after' });
    await c.waitFor((x) => x.headers['receipt-id'] === 'after');
    c.close();
  });

  it('cuts every shell and serial console of an apply when it ends, with the reason', async () => {
    const login = await openShell(t.app, alice, 'a1');
    const serial = await openShell(t.app, alice, 'a1', 'serial');
    const c = await connectStomp(port, { token: alice.token, applyId: 'a1' });
    const f1 = await ShellFollower.subscribe(c, login, { subId: 'l' });
    const f2 = await ShellFollower.subscribe(c, serial, { subId: 's' });
    await t.app.shells.closeForApply('a1', 'lease.expired');
    await c.waitFor((x) => x.headers.subscription === 'l' && x.headers.event === 'closed');
    await c.waitFor((x) => x.headers.subscription === 's' && x.headers.event === 'closed');
    f1.pump();
    f2.pump();
    expect([f1.closedReason, f2.closedReason]).toEqual(['lease.expired', 'lease.expired']);
    // A console reconnecting later still learns why (and gets the last output).
    const c2 = await connectStomp(port, { token: alice.token, applyId: 'a2' });
    c2.sendFrame('SUBSCRIBE', { id: 'again', destination: Destinations.shellOutput(login) });
    const ev = await c2.waitFor((x) => x.headers.subscription === 'again' && x.headers.event === 'closed');
    expect(ev.headers.reason).toBe('lease.expired');
    c.close();
    c2.close();
  });
});
