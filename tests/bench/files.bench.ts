// Files benchmark (node --import tsx tests/bench/files.bench.ts). Prints figures; not pass/fail.
//
// A BENCH_MB file (default 1024 MiB; BENCH_MB=2048 for the 2 GiB case) of random bytes is uploaded
// to a local board with uploadFile and downloaded again with downloadFile, by curl in its own
// process (so the client's memory is not the service's), through the whole service: auth, apply,
// multipart streaming into the driver's temporary file and the rename, the read stream to the
// socket. The same file copied with plain `cp` on the same disk is the yardstick (the ratio). The
// service's peak RSS is sampled every 20 ms during each transfer. The downloaded file is compared
// with the original by sha256.
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import YAML from 'yaml';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { makeUser } from '../integration/helpers/users.ts';

const MB = Number(process.env.BENCH_MB ?? 1024);
const SIZE = MB * 1024 * 1024;
const mib = (n: number) => n / 1024 / 1024;

function sampler() {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage().rss);
    },
  };
}

function run(cmd: string, args: string[]): Promise<{ code: number; out: string; seconds: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code: code ?? -1, out, seconds: (performance.now() - started) / 1000 }),
    );
  });
}

async function sha256(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  for await (const c of fs.createReadStream(file, { highWaterMark: 1 << 20 })) h.update(c as Buffer);
  return h.digest('hex');
}

async function main() {
  const work = fs.mkdtempSync('/tmp/bianbu-files-bench-');
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
    await t.app.boards.driver(deviceId).probe(20_000);
    // The board's file system as the host sees it (its mount point, outside the data dir).
    const boardRoot = (t.app.boards.driver(deviceId) as unknown as { rootPath: string }).rootPath;

    const src = path.join(work, 'source.bin');
    console.log(
      `file: ${MB} MiB of random bytes; board ${deviceId} (local); disk: ${execFileSync('df', ['-h', '--output=source,fstype', work], { encoding: 'utf8' }).split('\n')[1]?.trim()}`,
    );
    execFileSync('head', ['-c', String(SIZE), '/dev/urandom'], {
      stdio: ['ignore', fs.openSync(src, 'w'), 'inherit'],
    });
    const want = await sha256(src);

    // Yardstick: cp on the same disk, into the board's folder.
    const cpDst = path.join(boardRoot, 'root', 'cp-copy.bin');
    const cp = await run('cp', [src, cpDst]);
    fs.rmSync(cpDst);
    const cpRate = MB / cp.seconds;

    globalThis.gc?.();
    const baseRss = process.memoryUsage().rss;

    // Upload: multipart with the spec's fields, streamed by curl from the file.
    let s = sampler();
    const up = await run('curl', [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-H',
      `authorization: ${u.token}`,
      '-H',
      `ApplyAccess: ${applyId}`,
      '-F',
      `applyId=${applyId}`,
      '-F',
      'path=/root',
      '-F',
      `file=@${src};filename=uploaded.bin`,
      `http://127.0.0.1:${port}/api/device/uploadFile`,
    ]);
    const upPeak = s.stop();
    const uploaded = path.join(boardRoot, 'root', 'uploaded.bin');
    if (up.out !== '200' || fs.statSync(uploaded).size !== SIZE)
      throw new Error(`upload failed: HTTP ${up.out}`);

    globalThis.gc?.();
    const downBase = process.memoryUsage().rss;
    const dst = path.join(work, 'downloaded.bin');
    s = sampler();
    const down = await run('curl', [
      '-sS',
      '-o',
      dst,
      '-w',
      '%{http_code}',
      '-H',
      `authorization: ${u.token}`,
      '-H',
      `ApplyAccess: ${applyId}`,
      '-H',
      'content-type: application/json',
      '--data',
      JSON.stringify({ deviceId, filePath: '/root/uploaded.bin' }),
      `http://127.0.0.1:${port}/api/device/downloadFile`,
    ]);
    const downPeak = s.stop();
    if (down.out !== '200') throw new Error(`download failed: HTTP ${down.out}`);
    const same = (await sha256(dst)) === want;

    const upRate = MB / up.seconds;
    const downRate = MB / down.seconds;
    console.log(`cp (same disk)        ${cp.seconds.toFixed(2)} s   ${cpRate.toFixed(0)} MiB/s`);
    console.log(
      `upload   (uploadFile) ${up.seconds.toFixed(2)} s   ${upRate.toFixed(0)} MiB/s   ratio to cp ${(upRate / cpRate).toFixed(2)}`,
    );
    console.log(
      `download (downloadFile) ${down.seconds.toFixed(2)} s   ${downRate.toFixed(0)} MiB/s   ratio to cp ${(downRate / cpRate).toFixed(2)}   sha256 ${same ? 'matches' : 'DIFFERS'}`,
    );
    console.log(
      `service RSS: before ${mib(baseRss).toFixed(0)} MiB; peak during upload ${mib(upPeak).toFixed(0)} MiB (+${mib(upPeak - baseRss).toFixed(0)}); peak during download ${mib(downPeak).toFixed(0)} MiB (+${mib(downPeak - downBase).toFixed(0)})`,
    );
    if (!same) process.exitCode = 1;
  } finally {
    await t.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
