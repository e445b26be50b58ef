// Files benchmark (node --expose-gc --import tsx tests/bench/files.bench.ts). Prints figures; not
// pass/fail.
//
// A BENCH_MB file (default 1024 MiB) of random bytes is uploaded to a local board with uploadFile
// and downloaded again with downloadFile, by curl in its own process (so the client's memory is not
// the service's), through the whole service: auth, apply, multipart streaming into the driver's
// temporary file and the rename, the read stream to the socket. The board is a real sandboxed local
// board: the driver speaks SFTP over a pipe to OpenSSH's sftp-server inside it, which writes onto the
// board's ext4 image on a loop device. The client's files live in /dev/shm, so the host disk is not
// part of the client's side; the downloaded file is compared with the original by sha256.
//
// Each layer is measured on its own too, so a slow figure can be placed: `dd` from the host onto the
// board's file system (its mount point: loop device and ext4, no SFTP), and the driver's own streams
// (SFTP over the pipe into the board, no HTTP). BENCH_RUNS (default 3) rounds; each figure is given as
// best / median, with the load average, because other work on the machine moves these a lot. CPU is
// the service process's user+system seconds per GiB (`process.cpuUsage`), which moves less with load.
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import YAML from 'yaml';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { makeUser } from '../integration/helpers/users.ts';

const MB = Number(process.env.BENCH_MB ?? 1024);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SIZE = MB * 1024 * 1024;
const mib = (n: number) => n / 1024 / 1024;

function sampler() {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  return () => {
    clearInterval(timer);
    return Math.max(peak, process.memoryUsage().rss);
  };
}

function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

async function sha256(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  for await (const c of fs.createReadStream(file, { highWaterMark: 1 << 20 })) h.update(c as Buffer);
  return h.digest('hex');
}

interface Sample {
  rate: number;
  cpuPerGiB: number;
  sysPerGiB: number;
  rssGrowth: number;
  load: number;
}

/** Times `work`, with the service's CPU and peak RSS over it. */
async function measure(work: () => Promise<void>): Promise<Sample> {
  globalThis.gc?.();
  const base = process.memoryUsage().rss;
  const load = os.loadavg()[0];
  const stop = sampler();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    rate: MB / seconds,
    cpuPerGiB: (used.user + used.system) / 1e6 / (MB / 1024),
    sysPerGiB: used.system / 1e6 / (MB / 1024),
    rssGrowth: mib(stop() - base),
    load,
  };
}

function summary(what: string, samples: Sample[], cpu = true): string {
  const rates = samples.map((s) => s.rate).sort((a, b) => b - a);
  const median = rates[Math.floor(rates.length / 2)];
  const cpus = samples.map((s) => s.cpuPerGiB).sort((a, b) => a - b);
  const sys = Math.min(...samples.map((s) => s.sysPerGiB));
  const rss = Math.max(...samples.map((s) => s.rssGrowth));
  const loads = samples.map((s) => s.load.toFixed(1)).join(' ');
  return `${what.padEnd(40)} best ${rates[0].toFixed(0).padStart(4)} / median ${median.toFixed(0).padStart(4)} MiB/s${cpu ? `   service CPU ${cpus[0].toFixed(2)} s/GiB (system ${sys.toFixed(2)})   RSS +${rss.toFixed(0)} MiB` : ''}   (load ${loads})`;
}

async function main() {
  const work = fs.mkdtempSync('/tmp/bianbu-files-bench-');
  const shm = fs.mkdtempSync('/dev/shm/bianbu-files-bench-');
  const labFile = path.join(work, 'lab.yaml');
  fs.writeFileSync(
    labFile,
    YAML.stringify({
      boards: [{ id: 'bench-files', name: 'bench-files', driver: 'local', options: { diskQuotaMb: MB * 4 } }],
    }),
  );
  const t = await makeTestApp({ env: { LOG_LEVEL: 'silent', BIANBU_LAB_FILE: labFile } as never });
  try {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as AddressInfo).port;
    const u = await makeUser(t.app);
    const inject = async (url: string, body: object) =>
      (await t.app.inject({ method: 'POST', url, headers: u.headers, payload: body })).json();
    const lease = await inject('/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: { name: 'bench-files' },
      serverName: 'bench',
    });
    const deviceId: string = lease.data.deviceId;
    const applyId: string = (await inject('/api/device/apply-device', { deviceId })).data.applyId;
    const driver = t.app.boards.driver(deviceId);
    await driver.probe(20_000);
    // The board's file system as the host sees it (its mount point, outside the data dir).
    const boardRoot = (driver as unknown as { rootPath: string }).rootPath;
    const mount = execFileSync('findmnt', ['-n', '-o', 'SOURCE,FSTYPE,OPTIONS', boardRoot], {
      encoding: 'utf8',
    }).trim();
    const loop = mount.split(' ')[0];
    const dio = loop.startsWith('/dev/loop')
      ? execFileSync('losetup', ['-n', '-O', 'DIO', loop], { encoding: 'utf8' }).trim()
      : '-';
    console.log(
      `file: ${MB} MiB of random bytes, ${RUNS} rounds; ${os.cpus().length} cores; board disk: ${mount} (loop direct I/O ${dio === '1' ? 'on' : 'off'}); backing file on ${execFileSync('df', ['--output=source,fstype', work], { encoding: 'utf8' }).split('\n')[1]?.trim()}`,
    );

    const src = path.join(shm, 'source.bin');
    execFileSync('head', ['-c', String(SIZE), '/dev/urandom'], {
      stdio: ['ignore', fs.openSync(src, 'w'), 'inherit'],
    });
    const want = await sha256(src);
    const onBoard = (name: string) => path.join(boardRoot, 'root', name);
    const headers = ['-H', `authorization: ${u.token}`, '-H', `ApplyAccess: ${applyId}`];

    const dd: Sample[] = [];
    const drvUp: Sample[] = [];
    const drvDown: Sample[] = [];
    const up: Sample[] = [];
    const down: Sample[] = [];
    let same = true;
    for (let round = 0; round < RUNS; round++) {
      // Layer 1: the board's file system from the host (page cache, ext4, loop device).
      dd.push(
        await measure(async () => {
          await run('dd', [`if=${src}`, `of=${onBoard('dd.bin')}`, 'bs=1M', 'status=none']);
        }),
      );
      fs.rmSync(onBoard('dd.bin'));
      // Layer 2: the driver's streams (SFTP over the pipe to the sftp-server inside the board).
      drvUp.push(
        await measure(async () => {
          const sink = await driver.files.createWriteStream('/root/driver.bin');
          await pipeline(fs.createReadStream(src, { highWaterMark: 256 * 1024 }), sink.stream);
          await sink.commit();
        }),
      );
      drvDown.push(
        await measure(async () => {
          const sink = fs.createWriteStream(path.join(shm, 'driver-down.bin'), { highWaterMark: 1 << 20 });
          await pipeline(await driver.files.createReadStream('/root/driver.bin'), sink);
        }),
      );
      same &&= (await sha256(path.join(shm, 'driver-down.bin'))) === want;
      fs.rmSync(path.join(shm, 'driver-down.bin'));
      await driver.files.remove('/root/driver.bin');

      // Layer 3: the whole service. Upload: multipart with the spec's fields, streamed by curl.
      up.push(
        await measure(async () => {
          const r = await run('curl', [
            '-sS',
            '-o',
            '/dev/null',
            '-w',
            '%{http_code}',
            ...headers,
            '-F',
            `applyId=${applyId}`,
            '-F',
            'path=/root',
            '-F',
            `file=@${src};filename=uploaded.bin`,
            `http://127.0.0.1:${port}/api/device/uploadFile`,
          ]);
          if (r.out !== '200') throw new Error(`upload failed: HTTP ${r.out}`);
        }),
      );
      if (fs.statSync(onBoard('uploaded.bin')).size !== SIZE) throw new Error('upload incomplete');
      const dst = path.join(shm, 'downloaded.bin');
      down.push(
        await measure(async () => {
          const r = await run('curl', [
            '-sS',
            '-o',
            dst,
            '-w',
            '%{http_code}',
            ...headers,
            '-H',
            'content-type: application/json',
            '--data',
            JSON.stringify({ deviceId, filePath: '/root/uploaded.bin' }),
            `http://127.0.0.1:${port}/api/device/downloadFile`,
          ]);
          if (r.out !== '200') throw new Error(`download failed: HTTP ${r.out}`);
        }),
      );
      same &&= (await sha256(dst)) === want;
      fs.rmSync(dst);
      await driver.files.remove('/root/uploaded.bin');
    }
    console.log(summary('dd host -> board file system (no SFTP)', dd, false));
    console.log(summary('driver upload (SFTP into the board)', drvUp));
    console.log(summary('driver download', drvDown));
    console.log(summary('upload   (uploadFile, whole service)', up));
    console.log(summary('download (downloadFile, whole service)', down));
    console.log(`sha256 of every download: ${same ? 'matches' : 'DIFFERS'}`);
    if (!same) process.exitCode = 1;
  } finally {
    await t.close();
    fs.rmSync(work, { recursive: true, force: true });
    fs.rmSync(shm, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
