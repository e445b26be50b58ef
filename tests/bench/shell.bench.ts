// Shell benchmark (node --import tsx tests/bench/shell.bench.ts). Prints figures; not pass/fail.
//
// (a) raw ceiling: bytes from a PTY on a local board straight to a plain WebSocket client, no framing
//     (the PTY is paused while the socket has more than 1 MiB queued, so neither side buffers without
//     bound);
// (b) product path: the same kind of shell opened with apply-device-shell, streamed over /ws as STOMP
//     MESSAGE frames, acknowledged by the client every 64 KiB as the console does.
// Throughput: `head -c $BENCH_MB M /dev/urandom | base64` (default 64 MiB of input, ~87 MiB of
// output; BENCH_MB=256 for the full size). Echo latency: 500 single keystrokes to `cat`.
// Memory: Node RSS and heap for 200 idle open shells, and while 20 shells stream at once. Run with
// node --expose-gc for steadier memory figures.
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { WebSocket, WebSocketServer } from 'ws';
import type { PtyHandle } from '#server/boards/driver.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { Destinations, SHELL_FLOW } from '#shared/realtime.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { connectStomp, type TestStompClient } from '../integration/helpers/stomp-client.ts';
import { makeUser } from '../integration/helpers/users.ts';

const MB = Number(process.env.BENCH_MB ?? 64);
const KEYS = 500;
const END = 'BENCH_DONE';
const mib = (n: number) => n / 1024 / 1024;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function main() {
  const t = await makeTestApp({ env: { LOG_LEVEL: 'silent' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (t.app.server.address() as AddressInfo).port;
  const u = await makeUser(t.app);
  const inject = async (url: string, body: object, apply?: string) =>
    (
      await t.app.inject({
        method: 'POST',
        url,
        headers: { ...u.headers, ...(apply ? { applyaccess: apply } : {}) },
        payload: body,
      })
    ).json();
  const lease = await inject('/api/device/request-device', {
    requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
    filterReq: {},
    serverName: 'bench',
  });
  const deviceId: string = lease.data.deviceId;
  const applyId: string = (await inject('/api/device/apply-device', { deviceId })).data.applyId;
  const driver = t.app.boards.driver(deviceId);
  console.log(`board ${deviceId} (${driver.kind}); payload: head -c ${MB}M /dev/urandom | base64`);

  // ---- (a) raw ceiling --------------------------------------------------------------------------
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await new Promise((r) => wss.once('listening', r));
  let rawPty: PtyHandle | null = null;
  wss.on('connection', async (ws) => {
    const pty = await driver.openShell({ cols: 120, rows: 40 });
    rawPty = pty;
    let paused = false;
    pty.onData((chunk) => {
      ws.send(chunk, { binary: true }, () => {
        if (paused && ws.bufferedAmount < 256 * 1024) {
          paused = false;
          pty.resume();
        }
      });
      if (!paused && ws.bufferedAmount > 1024 * 1024) {
        paused = true;
        pty.pause();
      }
    });
    ws.on('message', (d: Buffer) => pty.write(d));
    ws.on('close', () => pty.close());
  });
  const rawWs = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, {
    perMessageDeflate: false,
  });
  let rawSink: (b: Buffer) => void = () => {};
  rawWs.on('message', (d: Buffer) => rawSink(d));
  await new Promise((r) => rawWs.once('open', r));
  const raw = {
    send: (s: string) => rawWs.send(Buffer.from(s)),
    onOutput: (fn: (b: Buffer) => void) => {
      rawSink = fn;
    },
  };

  // ---- (b) product path -------------------------------------------------------------------------
  const shellRes = await inject(
    '/api/device/apply-device-shell',
    { applyId, shellType: 'login', cols: 120, rows: 40 },
    applyId,
  );
  const shellId: string = shellRes.data.clientId;
  const c: TestStompClient = await connectStomp(port, { token: u.token, applyId });
  let productSink: (b: Buffer) => void = () => {};
  let acked = 0;
  c.ws.on('message', (data: Buffer) => {
    // The test client parses frames too; here we only need MESSAGE bodies of our subscription.
    const f = c.frames.pop();
    if (!f || f.command !== 'MESSAGE' || f.headers.event) return;
    const next = Number(f.headers.offset) + f.body.length;
    productSink(Buffer.from(f.body.buffer, f.body.byteOffset, f.body.length));
    if (next - acked >= SHELL_FLOW.ackEveryBytes) {
      acked = next;
      c.sendFrame('SEND', { destination: Destinations.shellAck(shellId), offset: String(next) });
    }
    void data;
  });
  c.sendFrame('SUBSCRIBE', { id: 'b', destination: Destinations.shellOutput(shellId), receipt: 'rb' });
  await new Promise((r) => setTimeout(r, 300));
  const product = {
    send: (s: string) => c.sendFrame('SEND', { destination: Destinations.shellInput(shellId) }, s),
    onOutput: (fn: (b: Buffer) => void) => {
      productSink = fn;
    },
  };

  type Path = typeof raw;
  async function waitFor(
    p: Path,
    marker: string,
    run: () => void,
    timeoutMs = 600_000,
  ): Promise<{ bytes: number; ms: number }> {
    let bytes = 0;
    let tail = '';
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timeout waiting for ${marker}`)), timeoutMs);
      p.onOutput((b) => {
        bytes += b.length;
        tail = (tail + b.toString('latin1')).slice(-200);
        if (tail.includes(marker)) {
          clearTimeout(timer);
          p.onOutput(() => {});
          resolve({ bytes, ms: performance.now() - t0 });
        }
      });
      run();
    });
  }

  async function throughput(p: Path): Promise<number> {
    await waitFor(p, 'READY1', () => p.send('stty -echo; echo READY""1\n'));
    const r = await waitFor(p, END, () =>
      p.send(`head -c ${MB}M /dev/urandom | base64; echo ${END.slice(0, 5)}""${END.slice(5)}\n`),
    );
    return mib(r.bytes) / (r.ms / 1000);
  }

  async function echo(p: Path): Promise<number[]> {
    await waitFor(p, 'READY2', () => p.send('stty echo; echo READY""2; cat\n'));
    await new Promise((r) => setTimeout(r, 200));
    const lat: number[] = [];
    for (let i = 0; i < KEYS; i++) {
      const ch = String.fromCharCode(97 + (i % 26));
      const t0 = performance.now();
      await new Promise<void>((resolve) => {
        p.onOutput((b) => {
          if (b.includes(ch)) resolve();
        });
        p.send(ch);
      });
      lat.push(performance.now() - t0);
      if (i % 50 === 49) p.send('\n');
    }
    p.onOutput(() => {});
    p.send('\x03');
    await new Promise((r) => setTimeout(r, 200));
    return lat;
  }

  // Warm-up, then measure alternately so background load on this shared machine hits both alike.
  await throughput(raw);
  await throughput(product);
  const ra: number[] = [];
  const pb: number[] = [];
  for (let i = 0; i < 2; i++) {
    ra.push(await throughput(raw));
    pb.push(await throughput(product));
  }
  const rawTp = Math.max(...ra);
  const prodTp = Math.max(...pb);
  const rawLat = await echo(raw);
  const prodLat = await echo(product);

  console.log('\nthroughput (best of 2, MiB/s of terminal output)');
  console.log(
    `  (a) raw PTY → WebSocket      ${rawTp.toFixed(1)}   runs: ${ra.map((x) => x.toFixed(1)).join(', ')}`,
  );
  console.log(
    `  (b) shell → STOMP → client   ${prodTp.toFixed(1)}   runs: ${pb.map((x) => x.toFixed(1)).join(', ')}`,
  );
  console.log(`  ratio (b)/(a)                ${((prodTp / rawTp) * 100).toFixed(1)} %`);
  console.log(`\necho latency over ${KEYS} keystrokes to cat (ms)`);
  console.log(`  (a) raw      p50 ${pct(rawLat, 50).toFixed(3)}   p99 ${pct(rawLat, 99).toFixed(3)}`);
  console.log(`  (b) product  p50 ${pct(prodLat, 50).toFixed(3)}   p99 ${pct(prodLat, 99).toFixed(3)}`);
  console.log(`  p99 difference ${(pct(prodLat, 99) - pct(rawLat, 99)).toFixed(3)} ms`);

  rawWs.close();
  (rawPty as PtyHandle | null)?.close();
  wss.close();
  c.close();

  // ---- memory -----------------------------------------------------------------------------------
  const mem = () => {
    global.gc?.();
    const m = process.memoryUsage();
    return { rss: mib(m.rss), heap: mib(m.heapUsed + m.external + m.arrayBuffers) };
  };
  // Let the throughput runs' garbage go before the baseline (RSS still moves with the allocator).
  for (let i = 0; i < 3; i++) {
    mem();
    await new Promise((r) => setTimeout(r, 500));
  }
  const base = mem();
  const idle: string[] = [];
  for (let i = 0; i < 200; i++) {
    const { clientId } = await t.app.shells.open({
      applyId: `bench-idle-${Math.floor(i / 10)}`,
      deviceId,
      userId: u.id,
      shellType: 'login',
    });
    idle.push(clientId);
  }
  await new Promise((r) => setTimeout(r, 2000));
  const idleMem = mem();
  console.log('\nmemory (Node process of the service; board processes are separate)');
  console.log(
    `  200 idle shells: +${(idleMem.rss - base.rss).toFixed(1)} MiB RSS, +${(idleMem.heap - base.heap).toFixed(1)} MiB heap+buffers ` +
      `(${(((idleMem.rss - base.rss) * 1024) / 200).toFixed(0)} KiB RSS per shell)`,
  );
  for (const id of idle) t.app.shells.get(id)?.close('shell.closed');
  await new Promise((r) => setTimeout(r, 1000));

  const base2 = mem();
  const clients: TestStompClient[] = [];
  for (let i = 0; i < 20; i++) {
    const { clientId } = await t.app.shells.open({
      applyId: `bench-stream-${Math.floor(i / 10)}`,
      deviceId,
      userId: u.id,
      shellType: 'login',
    });
    const sc = await connectStomp(port, { token: u.token });
    let ack = 0;
    sc.ws.on('message', () => {
      const f = sc.frames.pop();
      if (!f || f.command !== 'MESSAGE' || f.headers.event) return;
      const next = Number(f.headers.offset) + f.body.length;
      if (next - ack >= SHELL_FLOW.ackEveryBytes) {
        ack = next;
        sc.sendFrame('SEND', { destination: Destinations.shellAck(clientId), offset: String(next) });
      }
    });
    sc.sendFrame('SUBSCRIBE', { id: 's', destination: Destinations.shellOutput(clientId) });
    await new Promise((r) => setTimeout(r, 50));
    sc.sendFrame('SEND', { destination: Destinations.shellInput(clientId) }, 'cat /dev/urandom | base64\n');
    clients.push(sc);
  }
  let peak = base2;
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const m = mem();
    if (m.rss > peak.rss) peak = m;
  }
  const ringBytes = t.app.shells.stats().reduce((n, s) => n + (s.ended ? 0 : s.ringAllocated), 0);
  console.log(
    `  20 streaming shells: +${(peak.rss - base2.rss).toFixed(1)} MiB RSS peak, +${(peak.heap - base2.heap).toFixed(1)} MiB heap+buffers; ` +
      `rings ${mib(ringBytes).toFixed(1)} MiB; socket backlog ${mib(t.app.realtime.stats().pendingBytes).toFixed(2)} MiB`,
  );
  for (const sc of clients) sc.close();
  await t.close();
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
