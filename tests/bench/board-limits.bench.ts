// A board at its limits, and what it costs the others (node --import tsx tests/bench/board-limits.bench.ts).
// Prints figures; not pass/fail.
//
// Two local boards on one service. Idle first: the keystroke echo of a shell on board B (a byte
// written to its terminal until the line discipline's echo comes back, through the board's PTY host)
// and the latency of an API call over HTTP on loopback (GET /api/device/store-all-num, keep-alive).
// Then board A gets four busy loops and a fork bomb (`f(){ f|f& }; f`) until it holds its process
// limit, and both are measured again, in the same run: the idle figures are the anchor. Last, the
// holder's power reset of the bombed board (POST /api/device/power-reset) is timed until a new shell
// of A answers. BENCH_SAMPLES (default 300) samples each, 10 ms apart.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { PtyHandle } from '#server/boards/driver.ts';
import { hostSupport } from '#server/boards/local/host-support.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { call, endIn, H48, makeUser } from '../integration/leases.fixtures.ts';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function echoLatencies(sh: PtyHandle): Promise<number[]> {
  const out: number[] = [];
  let waiting: (() => void) | null = null;
  const off = sh.onData((b) => {
    if (b.includes(0x78)) waiting?.();
  });
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      waiting = resolve;
      sh.write('x');
    });
    out.push(performance.now() - t0);
    await sleep(10);
  }
  off();
  sh.write('\u0015'); // ^U: the typed line goes
  return out;
}

async function apiLatencies(base: string, token: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    const r = await fetch(`${base}/api/device/store-all-num`, { headers: { authorization: token } });
    await r.arrayBuffer();
    out.push(performance.now() - t0);
    await sleep(10);
  }
  return out;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-bench-limits-'));
const labFile = path.join(work, 'lab.yaml');
const board = (id: string) => ({
  id,
  name: id,
  model: 'K1',
  driver: 'local',
  options: { memoryMb: 1024, diskQuotaMb: 256 },
});
fs.writeFileSync(labFile, JSON.stringify({ boards: [board('limits-a'), board('limits-b')] }));
const t = await makeTestApp({
  env: {
    BIANBU_LAB_FILE: labFile,
    BIANBU_PROBE_INTERVAL_MS: process.env.BENCH_PROBE_MS ?? '5000',
    BIANBU_METRICS_INTERVAL_MS: process.env.BENCH_METRICS_MS ?? '5000',
  },
});
try {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = t.app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const u = await makeUser(t.app);
  const lease = await call(t.app, u, 'POST', '/api/device/request-device', {
    requestDate: endIn(t.app.clock.now(), H48),
    filterReq: {},
    serverName: 'bench',
  });
  const a: string = lease.data.deviceId;
  const b = a === 'limits-a' ? 'limits-b' : 'limits-a';
  const { applyId } = (await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: a })).data;
  const shB = await t.app.boards.driver(b).openShell({ cols: 120, rows: 30 });
  await sleep(1500);

  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const idleEcho = await echoLatencies(shB);
  const idleLoop = loop.percentile(99) / 1e6;
  loop.reset();
  const idleApi = await apiLatencies(base, u.token);

  const shA = await t.app.boards.driver(a).openShell({ cols: 120, rows: 30 });
  await sleep(500);
  shA.write('for i in 1 2 3 4; do (while :; do :; done) & done; f(){ f|f& }; f\r');
  const pids = hostSupport().cgroups.pids;
  const group = pids ? fs.readdirSync(pids.base).find((n) => n.startsWith(`${a}-`)) : undefined;
  const current = () =>
    pids && group ? Number(fs.readFileSync(path.join(pids.base, group, 'pids.current'), 'utf8')) : 0;
  const max = pids && group ? Number(fs.readFileSync(path.join(pids.base, group, 'pids.max'), 'utf8')) : 0;
  const until = performance.now() + 30_000;
  while (current() < max * 0.95 && performance.now() < until) await sleep(100);
  const bombPids = current();
  await sleep(2000);

  loop.reset();
  const bombEcho = await echoLatencies(shB);
  const bombLoop = loop.percentile(99) / 1e6;
  loop.disable();
  const bombApi = await apiLatencies(base, u.token);

  const r0 = performance.now();
  const reset = await call(t.app, u, 'POST', '/api/device/power-reset', {}, { applyaccess: applyId });
  const resetMs = performance.now() - r0;
  const fresh = await t.app.boards.driver(a).openShell({ cols: 80, rows: 24 });
  const answered = new Promise<void>((resolve) => fresh.onData((d) => d.includes('back-up') && resolve()));
  fresh.write('echo back""-up\r');
  await answered;
  const backMs = performance.now() - r0;
  fresh.close();
  shA.close();
  shB.close();

  const row = (what: string, idle: number[], bomb: number[]) =>
    `| ${what} | ${pct(idle, 50).toFixed(2)} / ${pct(idle, 99).toFixed(2)} | ${pct(bomb, 50).toFixed(2)} / ${pct(bomb, 99).toFixed(2)} | ${(pct(bomb, 99) / pct(idle, 99)).toFixed(2)}× |`;
  console.log(
    `\nboard limits: ${os.availableParallelism()} cores, ${SAMPLES} samples each, the bombed board at ${bombPids} of ${max} processes`,
  );
  console.log('| measured | idle p50 / p99 (ms) | bomb p50 / p99 (ms) | p99 bomb / idle |');
  console.log('|---|---|---|---|');
  console.log(row("another board's shell echo", idleEcho, bombEcho));
  console.log(row('API call (store-all-num, HTTP)', idleApi, bombApi));
  console.log(
    `| the service's event-loop delay p99 (ms) | ${idleLoop.toFixed(2)} | ${bombLoop.toFixed(2)} | |`,
  );
  console.log(
    `holder's power reset: answered ${reset.code} in ${resetMs.toFixed(0)} ms; a new shell of the board answered ${backMs.toFixed(0)} ms after the reset began`,
  );
} finally {
  await t.close();
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(0);
