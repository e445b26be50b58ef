// VNC bridge benchmark (node --import tsx tests/bench/vnc.bench.ts). Prints figures; not pass/fail.
//
// The same board's Xvnc, reached two ways in one run, interleaved (direct, bridge, direct, bridge …):
//   direct  the driver's own stream to the board's RFB socket (connectVnc: the relay inside the board
//           to its unix socket) — the anchor, what any bridge has to go through;
//   bridge  /vnc/{applyId}: a WebSocket to the service, which relays to that same stream.
// For each: RFB 3.8 handshake (security None), Raw encoding only, then
//   throughput: BENCH_VNC_FRAMES full, non-incremental framebuffer updates (width × height × 4 bytes
//               each), one request at a time;
//   latency:    BENCH_VNC_ROUNDS requests for a 1×1 update, round trip from request to the whole answer.
// Memory: the service's RSS for BENCH_VNC_SESSIONS idle bridge sessions (past the handshake).
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { makeUser } from '../integration/helpers/users.ts';

const FRAMES = Number(process.env.BENCH_VNC_FRAMES ?? 40);
const ROUNDS = Number(process.env.BENCH_VNC_ROUNDS ?? 300);
const SESSIONS = Number(process.env.BENCH_VNC_SESSIONS ?? 8);
const PASSES = Number(process.env.BENCH_VNC_PASSES ?? 3);

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const median = (xs: number[]) => pct(xs, 50);

/** Bytes from either kind of stream, read by count. */
class Reader {
  private chunks: Buffer[] = [];
  private have = 0;
  private wake: (() => void) | null = null;
  ended = false;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.have += b.length;
    this.wake?.();
  }
  end(): void {
    this.ended = true;
    this.wake?.();
  }
  async read(n: number): Promise<Buffer> {
    while (this.have < n) {
      if (this.ended) throw new Error(`stream ended waiting for ${n} bytes`);
      await new Promise<void>((r) => {
        this.wake = r;
      });
      this.wake = null;
    }
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.have = rest.length;
    return out;
  }
}

interface Rfb {
  reader: Reader;
  send(b: Buffer): void;
  close(): void;
  width: number;
  height: number;
}

async function handshake(reader: Reader, send: (b: Buffer) => void, close: () => void): Promise<Rfb> {
  const version = (await reader.read(12)).toString();
  if (!version.startsWith('RFB 003.')) throw new Error(`not RFB: ${JSON.stringify(version)}`);
  send(Buffer.from('RFB 003.008\n'));
  const n = (await reader.read(1))[0];
  const types = [...(await reader.read(n))];
  if (!types.includes(1)) throw new Error(`no security None among ${types}`);
  send(Buffer.from([1]));
  if ((await reader.read(4)).readUInt32BE(0) !== 0) throw new Error('security refused');
  send(Buffer.from([1])); // shared
  const init = await reader.read(24);
  await reader.read(init.readUInt32BE(20)); // the desktop's name
  const width = init.readUInt16BE(0);
  const height = init.readUInt16BE(2);
  // 32 bits per pixel, true colour (what noVNC asks for), and Raw encoding only.
  const pf = Buffer.alloc(20);
  pf[0] = 0;
  pf.set([32, 24, 0, 1], 4);
  pf.writeUInt16BE(255, 8);
  pf.writeUInt16BE(255, 10);
  pf.writeUInt16BE(255, 12);
  pf.set([16, 8, 0], 14);
  send(pf);
  const enc = Buffer.alloc(8);
  enc[0] = 2;
  enc.writeUInt16BE(1, 2);
  enc.writeInt32BE(0, 4);
  send(enc);
  return { reader, send, close, width, height };
}

/** Asks for a region (non-incremental) and reads the whole update; answers its bytes. */
async function update(r: Rfb, w: number, h: number): Promise<number> {
  const req = Buffer.alloc(10);
  req[0] = 3;
  req[1] = 0;
  req.writeUInt16BE(w, 6);
  req.writeUInt16BE(h, 8);
  r.send(req);
  let bytes = 0;
  for (;;) {
    const head = await r.reader.read(4);
    if (head[0] !== 0) {
      // Bell (2) or cut text (3) between updates: skip them.
      if (head[0] === 2) continue;
      if (head[0] === 3) {
        const len = (await r.reader.read(4)).readUInt32BE(0);
        await r.reader.read(len - 0);
        continue;
      }
      throw new Error(`unexpected server message ${head[0]}`);
    }
    const rects = head.readUInt16BE(2);
    for (let i = 0; i < rects; i++) {
      const rh = await r.reader.read(12);
      const rw = rh.readUInt16BE(4);
      const rhh = rh.readUInt16BE(6);
      const encoding = rh.readInt32BE(8);
      if (encoding !== 0) throw new Error(`encoding ${encoding} not asked for`);
      const n = rw * rhh * 4;
      await r.reader.read(n);
      bytes += n + 12;
    }
    return bytes + 4;
  }
}

async function main() {
  if (process.getuid?.() !== 0) throw new Error('local boards need root');
  const t = await makeTestApp({ env: { LOG_LEVEL: 'silent' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (t.app.server.address() as AddressInfo).port;
  const u = await makeUser(t.app);
  const post = async (url: string, body: object) =>
    (await t.app.inject({ method: 'POST', url, headers: u.headers, payload: body })).json();
  const lease = await post('/api/device/request-device', {
    requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
    filterReq: {},
    serverName: 'vnc-bench',
  });
  const deviceId: string = lease.data.deviceId;
  const applyId: string = (await post('/api/device/apply-device', { deviceId })).data.applyId;
  const driver = t.app.boards.driver(deviceId);
  if (!driver.connectVnc)
    throw new Error('this board has no desktop (apt-get install tigervnc-standalone-server openbox xterm)');

  const direct = async (): Promise<Rfb> => {
    const s: Duplex = await driver.connectVnc!();
    const reader = new Reader();
    s.on('data', (b: Buffer) => reader.push(b));
    s.on('end', () => reader.end());
    s.on('close', () => reader.end());
    return handshake(
      reader,
      (b) => s.write(b),
      () => s.destroy(),
    );
  };
  const bridge = async (): Promise<Rfb> => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/vnc/${applyId}`, ['binary', `bianbu.token.${u.token}`], {
      perMessageDeflate: false,
    });
    ws.binaryType = 'nodebuffer';
    const reader = new Reader();
    ws.on('message', (b: Buffer) => reader.push(b));
    ws.on('close', () => reader.end());
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    return handshake(
      reader,
      (b) => ws.send(b),
      () => ws.close(),
    );
  };

  // The desktop starts on the first connection: once, before measuring.
  const warm = await direct();
  console.log(`board ${deviceId}: desktop ${warm.width}×${warm.height}, Raw encoding, 32 bpp`);
  await update(warm, warm.width, warm.height);
  warm.close();

  const results: Record<'direct' | 'bridge', { mibs: number[]; p50: number[]; p99: number[] }> = {
    direct: { mibs: [], p50: [], p99: [] },
    bridge: { mibs: [], p50: [], p99: [] },
  };
  for (let pass = 0; pass < PASSES; pass++) {
    for (const [name, open] of [
      ['direct', direct],
      ['bridge', bridge],
    ] as const) {
      const r = await open();
      await update(r, r.width, r.height);
      let bytes = 0;
      const t0 = performance.now();
      for (let i = 0; i < FRAMES; i++) bytes += await update(r, r.width, r.height);
      const secs = (performance.now() - t0) / 1000;
      const rtts: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const s = performance.now();
        await update(r, 1, 1);
        rtts.push(performance.now() - s);
      }
      r.close();
      results[name].mibs.push(bytes / 1024 / 1024 / secs);
      results[name].p50.push(pct(rtts, 50));
      results[name].p99.push(pct(rtts, 99));
      console.log(
        `pass ${pass + 1} ${name.padEnd(6)} ${(bytes / 1024 / 1024 / secs).toFixed(0).padStart(5)} MiB/s   1×1 round trip p50 ${pct(rtts, 50).toFixed(3)} ms p99 ${pct(rtts, 99).toFixed(3)} ms`,
      );
    }
  }
  const d = results.direct;
  const b = results.bridge;
  console.log('\nmedians over the passes:');
  console.log(
    `  direct (anchor): ${median(d.mibs).toFixed(0)} MiB/s, round trip p50 ${median(d.p50).toFixed(3)} ms, p99 ${median(d.p99).toFixed(3)} ms`,
  );
  console.log(
    `  /vnc bridge:     ${median(b.mibs).toFixed(0)} MiB/s, round trip p50 ${median(b.p50).toFixed(3)} ms, p99 ${median(b.p99).toFixed(3)} ms`,
  );
  console.log(
    `  bridge / direct: ${((median(b.mibs) / median(d.mibs)) * 100).toFixed(0)}% of the throughput, +${(median(b.p50) - median(d.p50)).toFixed(3)} ms p50`,
  );

  // Memory per idle session: the JavaScript heap and buffers (RSS moves by more than a few sessions).
  const mem = () => {
    global.gc?.();
    const m = process.memoryUsage();
    return { js: m.heapUsed + m.external, rss: m.rss };
  };
  const before = mem();
  const idle: Rfb[] = [];
  for (let i = 0; i < SESSIONS; i++) idle.push(await bridge());
  await new Promise((r) => setTimeout(r, 500));
  const after = mem();
  console.log(
    `\n${SESSIONS} idle bridge sessions (the most one apply may open): heap + buffers +${((after.js - before.js) / 1024 / SESSIONS).toFixed(0)} KiB each, RSS ${((after.rss - before.rss) / 1024 / 1024).toFixed(1)} MiB in all`,
  );
  for (const r of idle) r.close();
  await t.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
