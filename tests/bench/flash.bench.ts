// Benchmark of flashing: 1, 4 and 16 real local boards (bubblewrap sandboxes, ext4 loop disks)
// flashed at once from one image through the whole service (post-multi-flash → sha256 check → write
// → read-back verify → swap → boot). Reports wall time, MiB/s per board and in all, and the
// service's peak RSS. In the same run, as the physical reference, `tar -x` of the same image into a
// fresh directory on the same file system (one, and as many at once as boards are flashed).
//
//   node --import tsx tests/bench/flash.bench.ts
//   BENCH_FLASH_MIB=512 BENCH_FLASH_BOARDS=1,4,16 BENCH_FLASH_CONCURRENCY=4 ...   (these defaults)
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import tar from 'tar-stream';
import { ManualClock } from '#server/clock.ts';
import type { FlashJobDto } from '#shared/flash.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { makeUser } from '../integration/helpers/users.ts';
import { call, endIn, H48 } from '../integration/leases.fixtures.ts';

const MIB = 1024 * 1024;
const imageMib = Number(process.env.BENCH_FLASH_MIB ?? 512);
const counts = (process.env.BENCH_FLASH_BOARDS ?? '1,4,16').split(',').map(Number);
const concurrency = process.env.BENCH_FLASH_CONCURRENCY ?? '4';
const maxBoards = Math.max(...counts);

const work = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? os.tmpdir(), 'bench-flash-'));

/** An uncompressed tar of `imageMib` MiB: 8 MiB files of pseudo-random bytes (not compressible), a root's /etc. */
async function makeImage(file: string): Promise<number> {
  const pack = tar.pack();
  const out = fs.createWriteStream(file);
  const done = new Promise<void>((r) => out.on('finish', () => r()));
  pack.pipe(out);
  const add = (name: string, body: Buffer) =>
    new Promise<void>((r, j) => pack.entry({ name, mode: 0o644 }, body, (e) => (e ? j(e) : r())));
  await add('etc/passwd', Buffer.from('root:x:0:0:root:/root:/bin/bash\n'));
  await add('etc/os-release', Buffer.from('PRETTY_NAME="Bench image"\n'));
  const seed = crypto.randomBytes(8 * MIB);
  for (let i = 0; i < imageMib / 8; i++) {
    seed.writeUInt32LE(i, 0);
    await add(`opt/bench/blob-${String(i).padStart(3, '0')}.bin`, seed);
  }
  pack.finalize();
  await done;
  return fs.statSync(file).size;
}

function tarExtract(image: string, n: number): Promise<number> {
  const t0 = performance.now();
  return Promise.all(
    Array.from({ length: n }, (_, i) => {
      const dest = fs.mkdtempSync(path.join(work, `tar-${i}-`));
      return new Promise<void>((resolve, reject) => {
        const p = spawn('tar', ['-x', '-f', image, '-C', dest], { stdio: 'inherit' });
        p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tar exited ${code}`))));
      })
        .then(() => new Promise<void>((r) => spawn('sync', [], { stdio: 'inherit' }).on('exit', () => r())))
        .finally(() => fs.rmSync(dest, { recursive: true, force: true }));
    }),
  ).then(() => performance.now() - t0);
}

const fmt = (n: number, d = 0) => n.toFixed(d);

async function main() {
  const image = path.join(work, 'bench.tar');
  const bytes = await makeImage(image);
  console.log(
    `image: ${fmt(bytes / MIB)} MiB tar, ${imageMib / 8} files of 8 MiB; host: ${os.cpus().length} cores; flash concurrency ${concurrency}`,
  );
  const labFile = path.join(work, 'lab.yaml');
  fs.writeFileSync(
    labFile,
    JSON.stringify({
      images: [{ tag: 'bench', name: 'Bench image', path: image }],
      boards: Array.from({ length: maxBoards }, (_, i) => ({
        id: `fb-${i}`,
        name: `fb-${i}`,
        model: 'K1',
        attributes: { n: i },
        driver: 'local',
        options: { memoryMb: 256, diskQuotaMb: imageMib + 256, maxProcesses: 256 },
      })),
    }),
  );
  const clock = new ManualClock(Date.now());
  const t = await makeTestApp({
    clock,
    env: {
      BIANBU_LAB_FILE: labFile,
      BIANBU_DATA_DIR: path.join(work, 'svc'),
      BIANBU_FLASH_CONCURRENCY: concurrency,
      BIANBU_PROBE_INTERVAL_MS: '600000',
      BIANBU_METRICS_INTERVAL_MS: '600000',
      BIANBU_LEASE_TICK_MS: '0',
    },
  });
  try {
    const u = await makeUser(t.app, { perms: ['device.add_flash', 'device.view_flash'] });
    await t.app.storage.query('update credentials set expires_at = null where user_id = $1', [u.id]);
    for (let i = 0; i < maxBoards; i++) {
      const r = await call(t.app, u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: { n: i },
        serverName: `b${i}`,
      });
      if (r.code !== 20000) throw new Error(JSON.stringify(r));
      await t.app.boards.driver(`fb-${i}`).probe(30_000);
    }
    const rows: string[] = [];
    for (const n of counts) {
      const ref1 = await tarExtract(image, 1);
      const refN = n > 1 ? await tarExtract(image, n) : ref1;
      global.gc?.();
      const rss0 = process.memoryUsage().rss;
      let peak = rss0;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      const t0 = performance.now();
      const r = await call(t.app, u, 'POST', '/api/device/post-multi-flash', {
        flashImageTag: 'bench',
        devices: Array.from({ length: n }, (_, i) => ({ deviceId: `fb-${i}` })),
      });
      if (r.code !== 20000) throw new Error(JSON.stringify(r));
      let jobs: FlashJobDto[] = [];
      for (;;) {
        jobs = (
          await call(t.app, u, 'POST', '/api/device/fetch-multi-flash-job', { multiIds: [r.data.multiId] })
        ).data.jobs;
        if (jobs.every((j) => ['SUCCESS', 'FAILURE', 'CANCELLED'].includes(j.state))) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      const wall = performance.now() - t0;
      if (process.env.BENCH_FLASH_LOG) {
        const log = (await call(t.app, u, 'GET', '/api/device/fetch-flash-job', { deviceId: 'fb-0' })).data
          .log;
        console.log(log.join('\n'));
      }
      clearInterval(sampler);
      const failed = jobs.filter((j) => j.state !== 'SUCCESS');
      if (failed.length)
        throw new Error(
          `failed: ${JSON.stringify(failed.map((j) => [j.deviceId, j.errorKey, j.errorMessage]))}`,
        );
      const perBoard = jobs.map((j) => bytes / MIB / ((j.durationMs ?? wall) / 1000));
      const mean = perBoard.reduce((a, b) => a + b, 0) / perBoard.length;
      rows.push(
        `| ${n} | ${fmt(wall / 1000, 1)} s | ${fmt(mean)} MiB/s | ${fmt((n * bytes) / MIB / (wall / 1000))} MiB/s | ${fmt((peak - rss0) / MIB)} MiB (peak ${fmt(peak / MIB)}) | ${fmt(ref1 / 1000, 1)} s → ${fmt(bytes / MIB / (ref1 / 1000))} MiB/s | ${fmt(refN / 1000, 1)} s → ${fmt((n * bytes) / MIB / (refN / 1000))} MiB/s |`,
      );
      console.log(rows[rows.length - 1]);
    }
    console.log(
      '\n| boards | wall time | per board (own job time) | in all | service RSS growth | reference: tar -x ×1 + sync | reference: tar -x ×boards at once + sync |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    await t.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

await main();
