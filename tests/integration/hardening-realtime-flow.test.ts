// Flow control that does not believe the client: an acknowledgement beyond what was sent is a
// protocol error, a client that stops reading its socket costs the service a bounded backlog (the
// shell's ring is the buffer, the PTY pauses), a flood of frames is read no faster than it is
// handled, and a closed connection leaves nothing behind in the hub or on the bus.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StompConnection } from '#server/realtime/connection.ts';
import { Destinations, SHELL_FLOW } from '#shared/realtime.ts';
import type { TestApp } from './helpers/app.ts';
import { startRealtimeApp } from './helpers/realtime-app.ts';
import { openShell, ShellFollower } from './helpers/shell-client.ts';
import { connectStomp, type TestStompClient } from './helpers/stomp-client.ts';
import { testAppliesFeature } from './helpers/test-applies.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MiB = 1024 * 1024;
/** Memory the service may grow by while one client misbehaves for the whole test. */
const HEAP_BOUND = 64 * MiB;
/** The documented bound of one connection's backlog, plus room for a few small frames. */
const BACKLOG_BOUND = () => SHELL_FLOW.socketBacklogBytes + 64 * 1024;
const HUGE_ACK = String(2 ** 52);
const OUTPUT = 'yes "bianbu flow control hardening: the quick brown fox jumps over the lazy dog"\n';

const memory = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/** Bytes the service holds for a connection's socket: written but not yet taken by the kernel, and coalesced. */
const backlog = (conn: StompConnection) => conn.ws.bufferedAmount + conn.pendingBytes;

describe('flow control that does not believe the client', () => {
  let t: TestApp;
  let port: number;
  let alice: TestUser;
  const applies = testAppliesFeature();
  let seq = 0;

  beforeAll(async () => {
    ({ t, port } = await startRealtimeApp({ applies }));
    alice = await makeUser(t.app);
  });
  afterAll(() => t?.close());

  /** A fresh apply (own board), a shell on it and a connection subscribed from offset 0. */
  async function watchShell(): Promise<{
    c: TestStompClient;
    f: ShellFollower;
    shellId: string;
    conn: StompConnection;
  }> {
    const applyId = `fa-${++seq}`;
    applies.applies.set(applyId, { applyId, deviceId: `flow-${seq}`, userId: alice.id, leaseId: `l-${seq}` });
    const shellId = await openShell(t.app, alice, applyId);
    const before = new Set(t.app.realtime.connections);
    const c = await connectStomp(port, { token: alice.token, applyId });
    const conn = [...t.app.realtime.connections].find((x) => !before.has(x))!;
    expect(conn).toBeTruthy();
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0, ack: false });
    f.input('stty -echo; echo RE""ADY\n');
    await f.until((s) => s.includes('READY'));
    return { c, f, shellId, conn };
  }

  async function settle(shellId: string): Promise<void> {
    const deadline = Date.now() + 5000;
    while (
      (t.app.realtime.connections.size > 0 || (t.app.shells.stats(shellId)[0]?.viewers ?? 0) > 0) &&
      Date.now() < deadline
    )
      await sleep(20);
  }

  it('answers an acknowledgement beyond what was sent with an ERROR and closes', async () => {
    const { c, f, shellId } = await watchShell();
    f.pump();
    // Within [last acknowledged, sent]: fine, the connection stays.
    f.ack(f.next);
    c.sendFrame('SUBSCRIBE', { id: 'n', destination: Destinations.userNotifications, receipt: 'ok' });
    await c.waitFor((x) => x.headers['receipt-id'] === 'ok');
    c.sendFrame('SEND', { destination: Destinations.shellAck(shellId), offset: String(f.next + 1_000_000) });
    const err = await c.waitFor((x) => x.command === 'ERROR', 3000);
    expect(err.headers.error).toBe('stomp.ack_out_of_range');
    expect(err.headers.code).toBe('40000');
    await c.closed;
    // The owner never saw the bogus offset.
    expect(t.app.shells.stats(shellId)[0].acked).toBeLessThanOrEqual(f.next);
    await t.app.shells.close(`fa-${seq}`, shellId);
  });

  it('answers an acknowledgement that goes backwards with an ERROR and closes', async () => {
    const { c, f, shellId } = await watchShell();
    f.pump();
    f.ack(f.next);
    f.ack(f.next - 1);
    const err = await c.waitFor((x) => x.command === 'ERROR', 3000);
    expect(err.headers.error).toBe('stomp.ack_out_of_range');
    await c.closed;
    await t.app.shells.close(`fa-${seq}`, shellId);
  });

  it('keeps a non-reading client that sends huge acknowledgements every 20 ms to a bounded cost', async () => {
    const { c, f, shellId, conn } = await watchShell();
    const base = memory();
    f.input(OUTPUT);
    await sleep(200);
    c.ws.pause();
    let maxBacklog = 0;
    let maxGrowth = 0;
    let firstAck = 0;
    let goneAt = 0;
    const end = Date.now() + 10_000;
    while (Date.now() < end) {
      if (c.ws.readyState === c.ws.OPEN) {
        c.sendFrame('SEND', { destination: Destinations.shellAck(shellId), offset: HUGE_ACK });
        firstAck ||= Date.now();
      }
      maxBacklog = Math.max(maxBacklog, backlog(conn));
      maxGrowth = Math.max(maxGrowth, memory() - base);
      if (!goneAt && !t.app.realtime.connections.has(conn)) goneAt = Date.now();
      // Stop early on today's unbounded growth rather than exhaust the machine.
      if (maxBacklog > 4 * HEAP_BOUND) break;
      await sleep(20);
    }
    console.info(
      `huge acks: backlog max ${(maxBacklog / MiB).toFixed(2)} MiB, memory growth max ${(maxGrowth / MiB).toFixed(1)} MiB`,
    );
    expect(maxBacklog).toBeLessThanOrEqual(BACKLOG_BOUND());
    expect(maxGrowth).toBeLessThan(HEAP_BOUND);
    // The first huge acknowledgement ended the connection.
    expect(goneAt).toBeGreaterThan(0);
    expect(goneAt - firstAck).toBeLessThan(1000);
    c.ws.resume();
    c.close();
    await t.app.shells.close(`fa-${seq}`, shellId);
    await settle(shellId);
    expect(t.app.realtime.connections.size).toBe(0);
  });

  it('bounds the backlog of a non-reading client that acknowledges all it was sent, resumes it from the ring, and forgets it on close', async () => {
    const busBefore = t.app.bus.stats();
    const { c, f, shellId, conn } = await watchShell();
    const base = memory();
    f.input(OUTPUT);
    await sleep(200);
    c.ws.pause();
    let maxBacklog = 0;
    let maxGrowth = 0;
    let acked = 0;
    const end = Date.now() + 10_000;
    while (Date.now() < end) {
      // The most a client may acknowledge: everything the service has sent it.
      acked = conn.viewStats().find((v) => v.shellId === shellId)!.sent;
      c.sendFrame('SEND', { destination: Destinations.shellAck(shellId), offset: String(acked) });
      maxBacklog = Math.max(maxBacklog, backlog(conn));
      maxGrowth = Math.max(maxGrowth, memory() - base);
      if (maxBacklog > 4 * HEAP_BOUND) break;
      await sleep(20);
    }
    console.info(
      `legal acks: backlog max ${(maxBacklog / MiB).toFixed(2)} MiB, memory growth max ${(maxGrowth / MiB).toFixed(1)} MiB`,
    );
    expect(maxBacklog).toBeLessThanOrEqual(BACKLOG_BOUND());
    expect(maxGrowth).toBeLessThan(HEAP_BOUND);
    expect(t.app.realtime.connections.has(conn)).toBe(true);
    const s = t.app.shells.stats(shellId)[0];
    // The PTY waits for the viewer instead of running away; the ring still holds what it has not seen.
    expect(s.paused).toBe(true);
    expect(conn.viewStats()[0].behind).toBe(true);
    const stalledAt = s.ringEnd;

    // Reading again: every byte arrives once, in order (the follower throws on a gap), past the stall.
    c.ws.resume();
    const deadline = Date.now() + 20_000;
    while (f.next < stalledAt + 2 * SHELL_FLOW.socketBacklogBytes && Date.now() < deadline) {
      f.pump();
      // Acknowledgements never go backwards: what was acknowledged unread stays acknowledged.
      if (f.next > acked) {
        acked = f.next;
        f.ack(acked);
      }
      await sleep(10);
    }
    expect(c.frames.some((x) => x.command === 'ERROR')).toBe(false);
    expect(f.next).toBeGreaterThan(stalledAt + 2 * SHELL_FLOW.socketBacklogBytes);
    expect(c.frames.some((x) => x.headers.truncated)).toBe(false);

    f.input('\x03');
    await sleep(300);
    f.pump();
    const seen = f.next;
    c.close();
    await settle(shellId);
    // Nothing of the connection is left: hub, shell viewers, bus handlers.
    expect(t.app.realtime.connections.size).toBe(0);
    expect(t.app.shells.stats(shellId)[0].viewers).toBe(0);
    const busAfter = t.app.bus.stats();
    expect(busAfter.handlers).toBe(busBefore.handlers + 1); // the shell's own input channel
    expect(busAfter.channels).toBe(busBefore.channels + 1);

    // A console reconnecting resumes from the last byte it saw.
    const c2 = await connectStomp(port, { token: alice.token, applyId: `fa-${seq}` });
    const f2 = await ShellFollower.subscribe(c2, shellId, { offset: seen });
    await sleep(200);
    f2.pump();
    const first = c2.frames.find((x) => x.command === 'MESSAGE' && x.headers.subscription === f2.subId)!;
    expect(Number(first.headers.offset)).toBe(seen);
    expect(first.headers.truncated).toBeUndefined();
    c2.close();
    await t.app.shells.close(`fa-${seq}`, shellId);
    await settle(shellId);
  });

  it('bounds the backlog of a non-reading client that asks for the full scrollback many times', async () => {
    const { c, f, shellId, conn } = await watchShell();
    // Fill the ring while reading and acknowledging, then stop the program.
    f.input('head -c 3000000 /dev/zero | tr "\\0" y | fold -w 100; echo DO""NE\n');
    const deadline = Date.now() + 20_000;
    while (!f.text.includes('DONE') && Date.now() < deadline) {
      f.pump();
      f.ack();
      await sleep(10);
    }
    expect(t.app.shells.stats(shellId)[0].ringEnd - t.app.shells.stats(shellId)[0].ringStart).toBe(
      SHELL_FLOW.ringBytes,
    );
    c.ws.pause();
    const base = memory();
    let maxBacklog = 0;
    for (let i = 0; i < 40; i++) {
      c.sendFrame('SUBSCRIBE', {
        id: `again-${i}`,
        destination: Destinations.shellOutput(shellId),
        offset: '0',
      });
      await sleep(25);
      maxBacklog = Math.max(maxBacklog, backlog(conn));
    }
    const growth = memory() - base;
    console.info(
      `40 replays: backlog max ${(maxBacklog / MiB).toFixed(2)} MiB, memory growth ${(growth / MiB).toFixed(1)} MiB`,
    );
    expect(maxBacklog).toBeLessThanOrEqual(BACKLOG_BOUND());
    expect(growth).toBeLessThan(HEAP_BOUND);
    c.ws.resume();
    c.close();
    await t.app.shells.close(`fa-${seq}`, shellId);
    await settle(shellId);
    expect(t.app.realtime.connections.size).toBe(0);
  });

  it('reads a flood of frames no faster than it handles them', async () => {
    const c = await connectStomp(port, { token: alice.token });
    const conn = [...t.app.realtime.connections].at(-1)!;
    // A shell that exists nowhere: the SUBSCRIBE waits for an owner's answer, frames queue behind it.
    c.sendFrame('SUBSCRIBE', { id: 'ghost', destination: Destinations.shellOutput('ghost-shell') });
    const body = Buffer.alloc(200 * 1024, 0x61);
    const base = memory();
    let sent = 0;
    let maxGrowth = 0;
    const end = Date.now() + 4000;
    while (Date.now() < end && c.ws.readyState === c.ws.OPEN) {
      // The client side buffers little itself: it writes only while its own socket drains.
      while (c.ws.bufferedAmount < MiB && sent < 2048 * MiB) {
        c.sendFrame('SEND', { destination: Destinations.shellInput('ghost-shell') }, body);
        sent += body.length;
      }
      maxGrowth = Math.max(maxGrowth, memory() - base);
      if (maxGrowth > 4 * HEAP_BOUND) break;
      await sleep(5);
    }
    console.info(
      `flood: client wrote ${(sent / MiB).toFixed(0)} MiB, service queue ${((conn.queuedInboundBytes ?? 0) / MiB).toFixed(2)} MiB, memory growth max ${(maxGrowth / MiB).toFixed(1)} MiB`,
    );
    expect(maxGrowth).toBeLessThan(HEAP_BOUND);
    c.close();
    const deadline = Date.now() + 8000;
    while (t.app.realtime.connections.size > 0 && Date.now() < deadline) await sleep(20);
    expect(t.app.realtime.connections.size).toBe(0);
  });
});
