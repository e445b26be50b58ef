// VNC bridge benchmark (node --import tsx tests/bench/vnc.bench.ts). Prints figures; not pass/fail.
//
// The same board's Xvnc, reached two ways in one run, in pairs of alternating order (direct+bridge,
// bridge+direct, …; BENCH_VNC_PASSES pairs), each pair giving a ratio:
//   direct  the driver's own stream to the board's RFB socket (connectVnc: the relay inside the board
//           to its unix socket) — the anchor, what any bridge has to go through;
//   bridge  /vnc/{applyId}: a WebSocket to the service, which relays to that same stream.
// For each: RFB 3.8 handshake (security None), Raw encoding only, then
//   throughput: BENCH_VNC_FRAMES full, non-incremental framebuffer updates (width × height × 4 bytes
//               each), one request at a time;
//   latency:    BENCH_VNC_ROUNDS requests for a 1×1 update, round trip from request to the whole answer.
// The bridge client runs in a worker thread (vnc-client.worker.ts), so its WebSocket decoding is on
// another core than the service, as a browser's is; the direct anchor reads in the main thread.
// Memory: the service's RSS for BENCH_VNC_SESSIONS idle bridge sessions (past the handshake).
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { makeUser } from '../integration/helpers/users.ts';
import {
  handshake,
  measurePass,
  openBridge,
  type PassResult,
  pct,
  Reader,
  type Rfb,
  update,
} from './rfb-client.ts';

const FRAMES = Number(process.env.BENCH_VNC_FRAMES ?? 40);
const ROUNDS = Number(process.env.BENCH_VNC_ROUNDS ?? 300);
const SESSIONS = Number(process.env.BENCH_VNC_SESSIONS ?? 8);
const PASSES = Number(process.env.BENCH_VNC_PASSES ?? 6);

const median = (xs: number[]) => pct(xs, 50);

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
  const bridge = () => openBridge(`ws://127.0.0.1:${port}/vnc/${applyId}`, u.token);

  // The desktop starts on the first connection: once, before measuring.
  const warm = await direct();
  console.log(`board ${deviceId}: desktop ${warm.width}×${warm.height}, Raw encoding, 32 bpp`);
  await update(warm, warm.width, warm.height);
  warm.close();

  const results: Record<'direct' | 'bridge', { mibs: number[]; p50: number[]; p99: number[] }> = {
    direct: { mibs: [], p50: [], p99: [] },
    bridge: { mibs: [], p50: [], p99: [] },
  };
  // The bridge's client runs in a worker thread (vnc-client.worker.ts): its WebSocket decoding is not
  // charged to the service's thread, as a browser's is not.
  const bridgeInWorker = () =>
    new Promise<PassResult>((resolve, reject) => {
      // Node 20 workers do not inherit tsx's loader: the entry registers it, then loads the TypeScript.
      const entry = new URL('./vnc-client.worker.ts', import.meta.url).href;
      const w = new Worker(
        `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`,
        {
          eval: true,
          workerData: {
            url: `ws://127.0.0.1:${port}/vnc/${applyId}`,
            token: u.token,
            frames: FRAMES,
            rounds: ROUNDS,
          },
        },
      );
      w.once('message', (m: PassResult) => resolve(m));
      w.once('error', reject);
      w.once('exit', (code) => code !== 0 && reject(new Error(`worker exited ${code}`)));
    });
  // Pairs in alternating order (direct then bridge, bridge then direct, …), so a drift of the machine
  // or of Xvnc over the run weighs on both sides alike; each pair gives one ratio.
  const ratios: number[] = [];
  for (let pass = 0; pass < PASSES; pass++) {
    const order = pass % 2 === 0 ? (['direct', 'bridge'] as const) : (['bridge', 'direct'] as const);
    for (const name of order) {
      let res: PassResult;
      if (name === 'direct') {
        const r = await direct();
        res = await measurePass(r, FRAMES, ROUNDS);
        r.close();
      } else res = await bridgeInWorker();
      results[name].mibs.push(res.mibs);
      results[name].p50.push(res.p50);
      results[name].p99.push(res.p99);
      console.log(
        `pass ${pass + 1} ${name.padEnd(6)} ${res.mibs.toFixed(0).padStart(5)} MiB/s   1×1 round trip p50 ${res.p50.toFixed(3)} ms p99 ${res.p99.toFixed(3)} ms`,
      );
    }
    ratios.push(results.bridge.mibs[pass] / results.direct.mibs[pass]);
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
    `  bridge / direct: ${((median(b.mibs) / median(d.mibs)) * 100).toFixed(0)}% of the median throughputs; per pair ${ratios.map((r) => `${(r * 100).toFixed(0)}%`).join(' ')} (median ${(median(ratios) * 100).toFixed(0)}%); +${(median(b.p50) - median(d.p50)).toFixed(3)} ms p50`,
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
