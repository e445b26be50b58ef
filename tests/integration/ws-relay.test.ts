// The WebSocket relay (relay.c, docs/native-data-plane.md) on the real service and a real local board:
// a client's /ws passes through it, and the owner's shell view is served by it — keystrokes written to
// the terminal and output written to the client by the relay, every byte in the ring first. The
// follower checks that offsets stay contiguous, so a byte lost, doubled or out of order fails.
import crypto from 'node:crypto';
import { readFile } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wsRelay } from '#server/boards/local/pty-host/relay.ts';
import { Destinations, SHELL_FLOW } from '#shared/realtime.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { leaseAndApply, openShell, ShellFollower } from './helpers/shell-client.ts';
import { connectStomp } from './helpers/stomp-client.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await sleep(20);
  }
}

/** The service with the relay on (and `env`), listening on loopback, with a user and an apply of a board. */
async function relayApp(label: string, env: Record<string, string> = {}) {
  const t = await makeTestApp({ env: { BIANBU_WS_RELAY: 'on', ...env } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (t.app.server.address() as AddressInfo).port;
  const u = await makeUser(t.app);
  const { applyId } = await leaseAndApply(t.app, u, label);
  return { t, port, u, applyId };
}

/**
 * Pastes `size` random bytes, in 64 KiB frames, into a program that reads them `delaySec` seconds later
 * in raw mode; answers the sha256 the board printed and the one of what was sent.
 */
async function pasteLate(f: ShellFollower, size: number, delaySec: number, timeoutMs: number) {
  const data = crypto.randomBytes(size);
  f.input(`stty raw -echo; sleep ${delaySec}; head -c ${size} | sha256sum; stty sane # late paste\n`);
  await f.until((s) => s.includes('# late paste'));
  await sleep(200);
  for (let at = 0; at < size; at += 65_536)
    f.c.sendFrame(
      'SEND',
      { destination: Destinations.shellInput(f.shellId) },
      data.subarray(at, at + 65_536),
    );
  await f.until((s) => /[0-9a-f]{64}  -/.test(s), timeoutMs);
  return {
    got: f.text.match(/([0-9a-f]{64})  -/)?.[1],
    want: crypto.createHash('sha256').update(data).digest('hex'),
  };
}

describe('shells through the WebSocket relay', () => {
  let t: TestApp;
  let port: number;
  let u: TestUser;
  let applyId: string;

  const stats = async () => (await wsRelay()).stats();
  /** A shell with the client's view of it served by the relay. */
  const served = async () => {
    const shellId = await openShell(t.app, u, applyId);
    const c = await connectStomp(port, { token: u.token, applyId });
    expect(c.frames[0].command).toBe('CONNECTED');
    const before = await stats();
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    const after = await until(stats, (s) => s.views > before.views);
    expect(after.views).toBe(before.views + 1);
    return { shellId, c, f };
  };

  beforeAll(async () => {
    ({ t, port, u, applyId } = await relayApp('relay'));
  });
  afterAll(() => t?.close());

  it('types into the board and echoes through the relay, not the service', async () => {
    const { c, f } = await served();
    const before = await stats();
    f.input('echo "relay=$((6*7))"\n');
    await f.until((s) => s.includes('relay=42'), 20_000);
    const after = await stats();
    expect(after.typed).toBeGreaterThan(before.typed);
    expect(after.emitted).toBeGreaterThan(before.emitted);
    // Typed one key at a time, as a person does: every key taken by the relay, in order.
    const line = 'echo abcdefghij-$((1+1))';
    for (const ch of `${line}\n`) {
      f.input(ch);
      await sleep(2);
    }
    await f.until((s) => s.includes('abcdefghij-2'), 20_000);
    expect((await stats()).typed - after.typed).toBeGreaterThanOrEqual(line.length + 1);
    c.close();
  });

  it('holds a flood at the window while the client does not acknowledge, and gives all of it once it does', async () => {
    const { c, shellId } = await served();
    const f = new ShellFollower(c, 'manual', shellId, -1, false);
    // A second subscription of the same shell, acknowledged by hand (the served one acknowledges all).
    c.sendFrame('SUBSCRIBE', {
      id: 'manual',
      destination: `/topic/shell/${shellId}`,
      offset: '0',
      receipt: 'rm',
    });
    await c.waitFor((x) => x.headers['receipt-id'] === 'rm');
    const auto = new ShellFollower(c, `s-${shellId.slice(0, 6)}`, shellId, 0, true);
    auto.input('head -c 4000000 /dev/zero | base64 -w 100; echo FLOOD-DONE\n');
    await sleep(1500);
    f.pump();
    // The manual view holds the shell back: no more than the window (and a frame) unacknowledged.
    expect(f.next).toBeLessThanOrEqual(SHELL_FLOW.highWater + 512 * 1024);
    expect(f.bytes.length).toBeGreaterThan(0);
    for (let i = 0; i < 2000 && !f.text.includes('FLOOD-DONE\r\n'); i++) {
      f.pump();
      f.ack();
      await sleep(5);
    }
    expect(f.text).toContain('FLOOD-DONE\r\n');
    auto.pump();
    expect(auto.text).toContain('FLOOD-DONE\r\n');
    expect(auto.bytes.equals(f.bytes.subarray(0, auto.bytes.length))).toBe(true);
    c.close();
  });

  it('lets the terminal go when the client goes mid-flood, and a new connection resumes from its offset', async () => {
    const { shellId, c, f } = await served();
    f.input('for i in $(seq 1 60000); do echo "line $i"; done; echo RESUME-END\n');
    await f.until((s) => s.includes('line 2000\r\n'), 20_000);
    f.pump();
    const from = f.next;
    const seen = f.bytes;
    c.close(); // abruptly: the relay sees the socket end
    await until(stats, (s) => s.connections === 0);
    const c2 = await connectStomp(port, { token: u.token, applyId });
    const f2 = await ShellFollower.subscribe(c2, shellId, { offset: from, subId: 'again' });
    await f2.until((s) => s.includes('RESUME-END'), 60_000);
    const all = Buffer.concat([seen, f2.bytes]).toString('utf8');
    const lines = all.match(/line \d+\r\n/g) ?? [];
    expect(lines.length).toBe(60_000);
    expect(lines[59_999]).toBe('line 60000\r\n');
    c2.close();
  });

  it('tells the end of a served shell after its last output', async () => {
    const { c, f } = await served();
    f.input('echo last-words; exit\n');
    const closed = await c.waitFor(
      (x) => x.headers.subscription === f.subId && x.headers.event === 'closed',
      15_000,
    );
    expect(closed.headers.reason).toBeTruthy();
    f.pump();
    expect(f.text).toContain('last-words');
    const i = c.frames.indexOf(closed);
    expect(c.frames.slice(i + 1).some((x) => x.headers.subscription === f.subId && !x.headers.event)).toBe(
      false,
    );
    c.close();
  });

  it('gives the terminal back when the relay dies, and a new relay serves the next connection', async () => {
    const { shellId, c, f } = await served();
    f.input('echo before-$((1+1))\n');
    await f.until((x) => x.includes('before-2'), 20_000);
    f.pump();
    const old = await wsRelay();
    process.kill(old.proc.pid, 'SIGKILL');
    // The client's socket was the relay's: it ends with it (the service lets its copy go).
    await c.closed;
    // Once the service has seen the relay's end, the next connection starts a new one.
    expect(
      await until(
        async () => old.alive,
        (alive) => !alive,
      ),
    ).toBe(false);
    const c2 = await connectStomp(port, { token: u.token, applyId });
    expect(c2.frames[0].command).toBe('CONNECTED');
    const fresh = await wsRelay();
    expect(fresh.proc.pid).not.toBe(old.proc.pid);
    const f2 = await ShellFollower.subscribe(c2, shellId, { offset: f.next, subId: 'after' });
    expect(
      (
        await until(
          () => fresh.stats(),
          (x) => x.views === 1,
        )
      ).views,
    ).toBe(1);
    f2.input('echo after-$((2+2))\n');
    await f2.until((x) => x.includes('after-4'), 20_000);
    c2.close();
  });

  /** Ends the served view `f` and waits until the relay has given its terminal back; the views left. */
  const unserve = async (f: ShellFollower) => {
    const before = await stats();
    f.c.sendFrame('UNSUBSCRIBE', { id: f.subId });
    return (await until(stats, (s) => s.views < before.views)).views;
  };

  /**
   * A served shell with a second view `subId` that stays the service's (subscribed past the service's
   * tries to hand it to the relay too: one served view per shell), then the served one ended.
   */
  const servedThenService = async (subId: string) => {
    const { shellId, c, f } = await served();
    const other = await ShellFollower.subscribe(c, shellId, { subId, offset: f.next });
    await sleep(1500);
    return { shellId, c, other, views: await unserve(f) };
  };

  it('gives the terminal back when the served view ends, and the service reads it for the others', async () => {
    const { c, other, views } = await servedThenService('other');
    other.input('echo given-back-$((5*5))\n');
    await other.until((s) => s.includes('given-back-25'), 10_000);
    expect((await stats()).views).toBe(views);
    c.close();
  });

  it('holds the client, and drops none of its input, while a program served by the service reads late', async () => {
    const { c, other } = await servedThenService('late');
    // More than the terminal's bound (8 MiB) that the service may hold for a program.
    const { got, want } = await pasteLate(other, 12 * 1024 * 1024, 2, 60_000);
    expect(got).toBe(want);
    c.close();
  }, 90_000);

  /** Pastes 3 MiB into `cat` echoing it back; resolves with the bytes echoed (the follower acknowledges). */
  const pasteIntoCat = async (f: ShellFollower) => {
    f.input('stty raw -echo; cat # echoes\n');
    await f.until((s) => s.includes('# echoes'));
    await sleep(300);
    const start = f.next;
    const data = Buffer.from(
      crypto
        .randomBytes(3 * 1024 * 1024)
        .toString('hex')
        .slice(0, 3 * 1024 * 1024),
    );
    for (let at = 0; at < data.length; at += 65_536)
      f.c.sendFrame(
        'SEND',
        { destination: Destinations.shellInput(f.shellId) },
        data.subarray(at, at + 65_536),
      );
    for (let i = 0; i < 600 && f.next - start < data.length; i++) {
      f.pump();
      await sleep(50);
    }
    return f.bytes.subarray(-data.length).equals(data);
  };

  it('echoes a paste larger than the input bound whole: the acknowledgements behind it are read', async () => {
    // Holding the client while a program has not taken its input would hold the acknowledgements
    // that its echo waits for: neither the relay nor the service holds it then.
    const relayed = await served();
    expect(await pasteIntoCat(relayed.f)).toBe(true);
    relayed.c.close();
    const byService = await servedThenService('cat');
    expect(await pasteIntoCat(byService.other)).toBe(true);
    byService.c.close();
  }, 90_000);

  /** Sends `data` as input frames of 16 KiB, as the CLI's exec sends its stdin. */
  const typeBytes = (f: ShellFollower, data: Buffer) => {
    for (let at = 0; at < data.length; at += 16_384)
      f.c.sendFrame(
        'SEND',
        { destination: Destinations.shellInput(f.shellId) },
        data.subarray(at, at + 16_384),
      );
  };

  /**
   * A served shell running a program that hashes `size` bytes of raw input `delaySec` seconds from now;
   * its view ended (the terminal given back) and subscribed again as `subId`, not served yet.
   */
  const lateReaderResubscribed = async (subId: string, size: number, delaySec: number) => {
    const { shellId, c, f } = await served();
    const data = crypto.randomBytes(size);
    const want = crypto.createHash('sha256').update(data).digest('hex');
    f.input(`stty raw -echo; sleep ${delaySec}; head -c ${size} | sha256sum; stty sane # ${subId}\n`);
    await f.until((s) => s.includes(`# ${subId}`));
    await sleep(300);
    const views = await unserve(f);
    const again = new ShellFollower(c, subId, shellId, f.next, true);
    c.sendFrame('SUBSCRIBE', {
      id: subId,
      destination: Destinations.shellOutput(shellId),
      offset: String(f.next),
    });
    return { c, again, data, want, views };
  };

  it('types no key ahead of input the service still holds for the terminal', async () => {
    // A program that takes its input only later: what is sent meanwhile waits, some of it in the service.
    // Subscribed again with the first half right behind: the service writes it (the view is not served yet)
    // and holds what the terminal does not take.
    const { c, again, data, want } = await lateReaderResubscribed('again', 240_000, 2);
    typeBytes(again, data.subarray(0, 120_000));
    await sleep(600); // the service asks the relay to serve the view meanwhile (every 50 ms)
    typeBytes(again, data.subarray(120_000));
    await again.until((s) => /[0-9a-f]{64}/.test(s), 20_000);
    expect(again.text.match(/[0-9a-f]{64}/)?.[0]).toBe(want);
    c.close();
  });

  it('hands a view to the relay once the input the service held for it is taken, however late', async () => {
    // Subscribed again with the input right behind: the service holds what the terminal does not take
    // for three seconds, long past the first tries to hand the view over (1 s).
    const { c, again, data, want, views } = await lateReaderResubscribed('slow', 200_000, 3);
    typeBytes(again, data);
    await again.until((s) => /[0-9a-f]{64}/.test(s), 20_000);
    expect(again.text.match(/[0-9a-f]{64}/)?.[0]).toBe(want);
    expect((await stats()).views).toBe(views);
    // Then the view goes to the relay, and what is typed goes through it.
    expect((await until(stats, (s) => s.views > views, 5000)).views).toBe(views + 1);
    const typed = (await stats()).typed;
    again.input('echo late-$((8*8))\n');
    await again.until((s) => s.includes('late-64'));
    expect((await stats()).typed).toBeGreaterThan(typed);
    c.close();
  });

  /** Hashes into `file` the input that `reader` takes in raw mode, from a second on. */
  const later = async (f: ShellFollower, reader: string, file: string) => {
    f.input(`stty raw -echo; sleep 1; (${reader}) 2>/dev/null | sha256sum > ${file}; stty sane # ${file}\n`);
    await f.until((s) => s.includes(`# ${file}`));
    await sleep(200);
  };
  const readBack = async (shellId: string, file: string) => {
    const c = await connectStomp(port, { token: u.token, applyId });
    const g = await ShellFollower.subscribe(c, shellId, { subId: `g${file.length}`, offset: -1 });
    g.input(`cat ${file} # back\n`);
    await g.until((s) => /[0-9a-f]{64}  -/.test(s), 20_000);
    c.close();
    return g.text.match(/([0-9a-f]{64})  -/)?.[1];
  };

  it('writes the input it took for a view whose end the client asked right after it', async () => {
    const { shellId, c, f } = await served();
    const data = crypto.randomBytes(100_000);
    await later(f, `timeout 20 head -c ${data.length}`, '/tmp/unsubscribed');
    // The input and the end of the view in one burst: the terminal takes the input only in a second.
    typeBytes(f, data);
    c.sendFrame('UNSUBSCRIBE', { id: f.subId });
    await sleep(1500);
    expect(await readBack(shellId, '/tmp/unsubscribed')).toBe(
      crypto.createHash('sha256').update(data).digest('hex'),
    );
    c.close();
  });

  it('hands the service the input the terminal had not taken when the client went', async () => {
    const { shellId, c, f } = await served();
    const data = crypto.randomBytes(70_000);
    await later(f, `timeout 20 head -c ${data.length}`, '/tmp/gone');
    // The relay holds what the terminal does not take yet; the client goes right behind its input.
    typeBytes(f, data);
    c.ws.close(); // as a closing tab: a close frame right behind the input, then the socket's end
    await sleep(2000);
    expect(await readBack(shellId, '/tmp/gone')).toBe(crypto.createHash('sha256').update(data).digest('hex'));
  });

  it('reads the client on while it holds input for a program that reads late', async () => {
    const { shellId, c, f } = await served();
    const data = crypto.randomBytes(200_000);
    await later(f, `sleep 2; timeout 20 head -c ${data.length}`, '/tmp/late');
    typeBytes(f, data);
    // A frame behind the held input is answered before the program reads (heart-beats and pongs
    // pass the same way: a paste into a busy program does not cost the connection).
    const sent = Date.now();
    c.sendFrame('SEND', { destination: Destinations.shellAck(shellId), offset: '0', receipt: 'behind' });
    await c.waitFor((x) => x.headers['receipt-id'] === 'behind', 5000);
    expect(Date.now() - sent).toBeLessThan(1500);
    await sleep(3500);
    expect(await readBack(shellId, '/tmp/late')).toBe(crypto.createHash('sha256').update(data).digest('hex'));
    c.close();
  });

  /** A frame behind the input that the service answers with a receipt "behind" (a resize to its size). */
  const behind = (f: ShellFollower) =>
    f.c.sendFrame(
      'SEND',
      { destination: Destinations.shellResize(f.shellId), receipt: 'behind' },
      JSON.stringify({ cols: 120, rows: 40 }),
    );

  it('answers a receipt for input it holds only once the terminal took it', async () => {
    const { shellId, c, f } = await served();
    const data = crypto.randomBytes(200_000);
    await later(f, `sleep 2; timeout 20 head -c ${data.length}`, '/tmp/receipted');
    // The last piece asks for a receipt (as `bianbu exec` does for every piece of its stdin): the
    // program reads in about two seconds, and until then the relay holds most of the input.
    const tail = 16_384;
    typeBytes(f, data.subarray(0, data.length - tail));
    const sent = Date.now();
    c.sendFrame(
      'SEND',
      { destination: Destinations.shellInput(shellId), receipt: 'typed' },
      data.subarray(-tail),
    );
    behind(f);
    await c.waitFor((x) => x.headers['receipt-id'] === 'behind', 5000);
    expect(c.frames.some((x) => x.headers['receipt-id'] === 'typed')).toBe(false);
    await c.waitFor((x) => x.headers['receipt-id'] === 'typed', 10_000);
    expect(Date.now() - sent).toBeGreaterThan(1000);
    expect(await readBack(shellId, '/tmp/receipted')).toBe(
      crypto.createHash('sha256').update(data).digest('hex'),
    );
    c.close();
    await t.app.shells.close(applyId, shellId); // an apply holds at most 16 shells
  });

  it('holds a client that asks receipts without end behind held input, in bounded memory', async () => {
    const { shellId, c, f } = await served();
    const data = crypto.randomBytes(50_000);
    await later(f, `sleep 2; timeout 20 head -c ${data.length}`, '/tmp/asking');
    typeBytes(f, data);
    const rss = async () => {
      const status = await readFile(`/proc/${(await wsRelay()).proc.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) * 1024;
    };
    const before = await rss();
    // 5,000 bodiless SENDs to the input, each asking a receipt with a 1,000-byte id: 5 MB of receipts
    // the relay would hold until the program reads, were the client read on.
    const id = (i: number) => `${i}-${'r'.repeat(1000)}`;
    for (let i = 0; i < 5000; i++)
      c.sendFrame('SEND', { destination: Destinations.shellInput(shellId), receipt: id(i) });
    await sleep(1000);
    expect((await rss()) - before).toBeLessThan(2 * 1024 * 1024);
    // Once the program takes its input, every receipt is answered, in order, and the input is whole.
    await c.waitFor((x) => x.headers['receipt-id'] === id(4999), 30_000);
    expect(await readBack(shellId, '/tmp/asking')).toBe(
      crypto.createHash('sha256').update(data).digest('hex'),
    );
    c.close();
    await t.app.shells.close(applyId, shellId);
  }, 60_000);

  it('gives no receipt for input that a relay killed while holding it takes with it', async () => {
    const { shellId, c, f } = await served();
    f.input('stty raw -echo; sleep 60 # holds\n');
    await f.until((s) => s.includes('# holds'));
    await sleep(200);
    c.sendFrame(
      'SEND',
      { destination: Destinations.shellInput(f.shellId), receipt: 'held' },
      crypto.randomBytes(100_000),
    );
    behind(f);
    await c.waitFor((x) => x.headers['receipt-id'] === 'behind', 5000);
    const old = await wsRelay();
    process.kill(old.proc.pid, 'SIGKILL');
    await c.closed;
    // The input died with the relay: a client that had its receipt would think it typed.
    expect(c.frames.some((x) => x.headers['receipt-id'] === 'held')).toBe(false);
    expect(
      await until(
        async () => old.alive,
        (alive) => !alive,
      ),
    ).toBe(false);
    await t.app.shells.close(applyId, shellId);
  });

  it('survives a client that sends garbage, and serves the next one', async () => {
    // A WebSocket upgrade by hand, then bytes that are no frames at all and a frame of absurd length.
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {}); // the relay cuts it (a reset, with bytes unread): expected
    await new Promise((r) => s.once('connect', r));
    s.write(
      'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    await new Promise((r) => s.once('data', r));
    s.write(Buffer.from([0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]));
    for (let i = 0; i < 50; i++)
      s.write(Buffer.from(Array.from({ length: 997 }, (_, j) => (i * 31 + j * 7) & 0xff)));
    await new Promise((r) => {
      s.once('close', r);
      setTimeout(r, 3000);
    });
    s.destroy();
    expect((await wsRelay()).alive).toBe(true);
    const { c, f } = await served();
    f.input('echo still-$((2+3))\n');
    await f.until((x) => x.includes('still-5'), 20_000);
    c.close();
  });
});

describe('a client the relay holds for its input', () => {
  let t: TestApp;
  let port: number;
  let u: TestUser;
  let applyId: string;
  beforeAll(async () => {
    // A short heart-beat: the service takes 1.6 s of silence for a client gone.
    ({ t, port, u, applyId } = await relayApp('relay-held', { BIANBU_STOMP_HEARTBEAT_MS: '300' }));
  });
  afterAll(() => t?.close());

  it('is not taken for gone while a program takes its paste late', async () => {
    const shellId = await openShell(t.app, u, applyId);
    const c = await connectStomp(port, { token: u.token, applyId });
    const before = await wsRelay().then((r) => r.stats());
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    await until(
      () => wsRelay().then((r) => r.stats()),
      (s) => s.views > before.views,
    );
    let closedAt = 0;
    void c.closed.then(() => {
      closedAt = Date.now();
    });
    // More than the relay holds before it stops reading the client (1 MiB), for a program that reads
    // it four seconds later: the client's pongs wait in its socket meanwhile.
    const { got, want } = await pasteLate(f, 3 * 1024 * 1024, 4, 30_000);
    expect(got).toBe(want);
    expect(closedAt).toBe(0);
    c.close();
  }, 60_000);
});
