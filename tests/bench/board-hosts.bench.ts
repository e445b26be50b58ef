// Board hosts benchmark (issue 37): the same work on a board the service runs in-process and on a
// board run by a board host process linked over loopback, interleaved in one run, so the figures
// differ only by the path (instance → link → host). Prints figures; not pass/fail.
//
//   files    a BENCH_MB (default 1024) MiB file of random bytes up (uploadFile) and down
//            (downloadFile) through the whole service by curl, each way checked by sha256
//   shell    output throughput of a login shell over STOMP (BENCH_SHELL_MB of `yes`), and echo
//            latency of 300 keystrokes (p50 / p99), through the realtime path a console uses
//   host     a host's kill -9 → its board shown offline; its restart → online (3 rounds)
//
// Both boards are real sandboxed local boards on this machine; the host's link is plain ws on
// loopback (TLS on a real network adds its own cost, not measured here).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { HOUR_MS } from '#shared/constants.ts';
import { Destinations } from '#shared/realtime.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { startHost, waitFor, writeLab } from '../integration/helpers/board-host.ts';
import { listenOnLoopback } from '../integration/helpers/realtime-app.ts';
import { openSocket, type TestStompClient } from '../integration/helpers/stomp-client.ts';
import { makeUser } from '../integration/helpers/users.ts';

const MB = Number(process.env.BENCH_MB ?? 1024);
const SHELL_MB = Number(process.env.BENCH_SHELL_MB ?? 64);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

async function sha256(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  for await (const c of fs.createReadStream(file, { highWaterMark: 1 << 20 })) h.update(c as Buffer);
  return h.digest('hex');
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-hosts-bench-'));
  const shm = fs.mkdtempSync('/dev/shm/bianbu-hosts-bench-');
  const lab = path.join(dir, 'lab.yaml');
  writeLab(lab, ['inproc-1'], Math.max(256, 2 * MB + 512));
  const t = await makeTestApp({ env: { BIANBU_LAB_FILE: lab, BIANBU_PROBE_INTERVAL_MS: '500' } });
  const port = await listenOnLoopback(t);
  const base = `http://127.0.0.1:${port}`;
  const admin = await makeUser(t.app, {
    perms: ['device.view_device', 'device.add_device', 'device.change_device', 'device.del_device'],
  });
  const add = await t.app.inject({
    method: 'POST',
    url: '/api/admin/hosts/add',
    headers: admin.headers,
    payload: { name: 'bench' },
  });
  const token = String(add.json().data.token);
  const hostLab = path.join(dir, 'host.yaml');
  writeLab(hostLab, ['hosted-1'], Math.max(256, 2 * MB + 512));
  let host = startHost({ serviceUrl: base, token, dataDir: path.join(dir, 'host'), labFile: hostLab });
  // A failed run must not leave its host (and the host's boards) running.
  process.once('exit', () => host.proc.kill('SIGTERM'));
  const state = async (id: string) =>
    (await t.app.storage.query<{ state: string }>('select state from boards where id = $1', [id]))[0]?.state;
  await waitFor(
    'hosted-1 idle',
    async () => t.app.boards.driverIfAny('hosted-1') && (await state('hosted-1')) === 'idle',
    60_000,
  );
  await waitFor('inproc-1 idle', async () => (await state('inproc-1')) === 'idle', 60_000);

  const user = await makeUser(t.app);
  const post = async (url: string, payload: object, headers: Record<string, string> = {}) =>
    (await t.app.inject({ method: 'POST', url, headers: { ...user.headers, ...headers }, payload })).json();
  const applies: Record<string, string> = {};
  for (const id of ['inproc-1', 'hosted-1']) {
    const lease = await post('/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: { name: id },
      serverName: id,
    });
    if (lease.code !== 20000) throw new Error(`lease ${id}: ${JSON.stringify(lease)}`);
    const apply = await post('/api/device/apply-device', { deviceId: id });
    applies[id] = String(apply.data.applyId);
  }
  const boards = ['inproc-1', 'hosted-1'] as const;
  const label = { 'inproc-1': 'in-process board', 'hosted-1': 'board on a board host' } as const;
  console.log(
    `board hosts bench: ${os.availableParallelism()} cores, load ${os.loadavg()[0].toFixed(2)}, ${MB} MiB files, ${SHELL_MB} MiB shell output, ${RUNS} rounds`,
  );

  // ---- files -------------------------------------------------------------------------------
  const src = path.join(shm, 'src.bin');
  await run('sh', ['-c', `head -c ${MB}M /dev/urandom > ${src}`]);
  const want = await sha256(src);
  const up: Record<string, number[]> = { 'inproc-1': [], 'hosted-1': [] };
  const down: Record<string, number[]> = { 'inproc-1': [], 'hosted-1': [] };
  let same = true;
  for (let r = 0; r < RUNS; r++) {
    for (const id of boards) {
      const headers = ['-H', `authorization: ${user.token}`, '-H', `applyaccess: ${applies[id]}`];
      let t0 = performance.now();
      const code = await run('curl', [
        '-sS',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        ...headers,
        '-F',
        `applyId=${applies[id]}`,
        '-F',
        'path=/root',
        '-F',
        `file=@${src};filename=up.bin`,
        `${base}/api/device/uploadFile`,
      ]);
      if (code !== '200') throw new Error(`upload to ${id}: HTTP ${code}`);
      up[id].push(MB / ((performance.now() - t0) / 1000));
      const dst = path.join(shm, 'down.bin');
      t0 = performance.now();
      const code2 = await run('curl', [
        '-sS',
        '-o',
        dst,
        '-w',
        '%{http_code}',
        ...headers,
        '-H',
        'content-type: application/json',
        '--data',
        JSON.stringify({ deviceId: id, filePath: '/root/up.bin' }),
        `${base}/api/device/downloadFile`,
      ]);
      if (code2 !== '200') throw new Error(`download from ${id}: HTTP ${code2}`);
      down[id].push(MB / ((performance.now() - t0) / 1000));
      same &&= (await sha256(dst)) === want;
      fs.rmSync(dst);
      await t.app.boards.driver(id).files.remove('/root/up.bin');
    }
  }
  fs.rmSync(src);
  for (const id of boards)
    console.log(
      `files ${label[id]}: upload ${median(up[id]).toFixed(0)} MiB/s (best ${Math.max(...up[id]).toFixed(0)}), download ${median(down[id]).toFixed(0)} MiB/s (best ${Math.max(...down[id]).toFixed(0)})`,
    );
  console.log(`files: every download identical to the upload (sha256): ${same}`);

  // ---- shell over STOMP ------------------------------------------------------------------------
  const thr: Record<string, number[]> = { 'inproc-1': [], 'hosted-1': [] };
  const echo: Record<string, number[]> = { 'inproc-1': [], 'hosted-1': [] };
  for (let r = 0; r < RUNS; r++) {
    for (const id of boards) {
      const applyId = applies[id];
      const opened = await post(
        '/api/device/apply-device-shell',
        { applyId, shellType: 'login' },
        { applyaccess: applyId },
      );
      const shellId = String(opened.data.clientId);
      const c = await openSocket(`ws://127.0.0.1:${port}/ws`);
      c.sendFrame('CONNECT', { 'accept-version': '1.2', 'heart-beat': '0,0', token: user.token, applyId });
      await c.waitFor((f) => f.command === 'CONNECTED');
      const follow = follower(c, shellId);
      await follow.until('# ', 20_000);
      // Echo: one key at a time, the time until it comes back.
      for (let i = 0; i < (r === 0 ? 300 : 100); i++) {
        const ch = String.fromCharCode(97 + (i % 26));
        const before = follow.bytes;
        const t0 = performance.now();
        c.sendFrame('SEND', { destination: Destinations.shellInput(shellId) }, ch);
        await follow.untilBytes(before + 1, 5000);
        echo[id].push(performance.now() - t0);
      }
      c.sendFrame('SEND', { destination: Destinations.shellInput(shellId) }, '\x15');
      await new Promise((res) => setTimeout(res, 100));
      const start = follow.bytes;
      const t0 = performance.now();
      c.sendFrame(
        'SEND',
        { destination: Destinations.shellInput(shellId) },
        `yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde | head -c ${SHELL_MB}M; echo END-$((1+1))\r`,
      );
      await follow.until('END-2', 120_000);
      thr[id].push((follow.bytes - start) / 2 ** 20 / ((performance.now() - t0) / 1000));
      c.close();
      await post(
        '/api/device/unapply-device-shell',
        { applyId, clientId: shellId },
        { applyaccess: applyId },
      );
    }
  }
  for (const id of boards)
    console.log(
      `shell ${label[id]}: ${median(thr[id]).toFixed(1)} MiB/s (best ${Math.max(...thr[id]).toFixed(1)}), echo p50 ${pct(echo[id], 0.5).toFixed(2)} ms, p99 ${pct(echo[id], 0.99).toFixed(2)} ms`,
    );

  // ---- a host's death and return -------------------------------------------------------------
  const off: number[] = [];
  const on: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    let t0 = performance.now();
    await host.kill9();
    await waitFor('offline', async () => (await state('hosted-1')) === 'offline', 30_000);
    off.push(performance.now() - t0);
    t0 = performance.now();
    host = startHost({ serviceUrl: base, token, dataDir: path.join(dir, 'host'), labFile: hostLab });
    await waitFor(
      'online',
      async () => (await state('hosted-1')) !== 'offline' && !!t.app.boards.driverIfAny('hosted-1'),
      60_000,
    );
    on.push(performance.now() - t0);
  }
  console.log(
    `host kill -9 → board offline: median ${median(off).toFixed(0)} ms (${off.map((x) => x.toFixed(0)).join(', ')}); restart → online: median ${median(on).toFixed(0)} ms (${on.map((x) => x.toFixed(0)).join(', ')})`,
  );

  await host.stop();
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(shm, { recursive: true, force: true });
}

/** Follows a shell subscription's bytes (offsets checked), acknowledging as it goes. */
function follower(c: TestStompClient, shellId: string) {
  c.sendFrame('SUBSCRIBE', { id: 's', destination: Destinations.shellOutput(shellId), offset: '0' });
  let seen = 0;
  let next = 0;
  let tail = '';
  const pump = () => {
    for (; seen < c.frames.length; seen++) {
      const f = c.frames[seen];
      if (f.command !== 'MESSAGE' || f.headers.subscription !== 's' || f.headers.event) continue;
      const o = Number(f.headers.offset);
      const body = Buffer.from(f.body);
      const fresh = body.subarray(Math.max(0, next - o));
      next = Math.max(next, o + body.length);
      tail = (tail + fresh.toString('latin1')).slice(-512);
      c.sendFrame('SEND', { destination: Destinations.shellAck(shellId), offset: String(next) });
    }
    // The frames already read are dropped: a long run must not keep them all.
    if (seen > 1000) {
      c.frames.splice(0, seen);
      seen = 0;
    }
  };
  const wait = async (done: () => boolean, ms: number) => {
    const end = Date.now() + ms;
    for (;;) {
      pump();
      if (done()) return;
      if (Date.now() > end)
        throw new Error(
          `timed out; next ${next} seen ${seen} frames ${c.frames.length}; tail ${JSON.stringify(tail)}; last frames ${JSON.stringify(c.frames.slice(-3).map((f) => [f.command, f.headers, Buffer.from(f.body).toString().slice(0, 80)]))}`,
        );
      await new Promise((r) => setImmediate(r));
    }
  };
  return {
    get bytes() {
      return next;
    },
    until: (s: string, ms: number) => wait(() => tail.includes(s), ms),
    untilBytes: (n: number, ms: number) => wait(() => next >= n, ms),
  };
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
