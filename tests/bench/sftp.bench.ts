// SFTP over a pipe benchmark (node --expose-gc --import tsx tests/bench/sftp.bench.ts). Prints
// figures; not pass/fail.
//
// A BENCH_MB file (default 1024 MiB) of random bytes on the host is uploaded with the shared file
// implementation (sftpFiles: createWriteStream, then commit's rename) to OpenSSH's sftp-server run on
// the host over its stdin/stdout (openSftpOverStdio), the way a sandboxed local board's file calls
// run; then downloaded with createReadStream into a host file. For comparison, the same transfer
// through ssh2's own createWriteStream/createReadStream (one request in flight at a time), and `cp`
// of the file on the same disk. The downloaded file is compared with the original by sha256. Peak
// RSS of this process is sampled every 20 ms during each transfer.
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { type Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { SFTPWrapper } from 'ssh2';
import { sftpFiles } from '#server/boards/sftp/sftp-files.ts';
import { openSftpOverStdio } from '#server/boards/sftp/stdio-sftp.ts';
import { TempJournal } from '#server/boards/sftp/temp-journal.ts';

const MB = Number(process.env.BENCH_MB ?? 1024);
const SIZE = MB * 1024 * 1024;
const SERVER = process.env.SFTP_SERVER ?? '/usr/lib/openssh/sftp-server';
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

async function sha256(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  for await (const c of fs.createReadStream(file, { highWaterMark: 1 << 20 })) h.update(c as Buffer);
  return h.digest('hex');
}

async function timed(
  what: string,
  work: () => Promise<void>,
): Promise<{ seconds: number; rate: number; rss: number }> {
  globalThis.gc?.();
  const base = process.memoryUsage().rss;
  const stop = sampler();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const rss = mib(stop() - base);
  const rate = MB / seconds;
  console.log(
    `${what.padEnd(44)} ${seconds.toFixed(2).padStart(6)} s  ${rate.toFixed(0).padStart(5)} MiB/s   RSS +${rss.toFixed(0)} MiB`,
  );
  return { seconds, rate, rss };
}

async function main() {
  const work = fs.mkdtempSync('/tmp/bianbu-sftp-bench-');
  const root = path.join(work, 'board');
  fs.mkdirSync(root);
  const child = spawn(SERVER, ['-e'], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const sftp = await openSftpOverStdio({
      stdin: child.stdin as Writable,
      stdout: child.stdout as Readable,
      kill: () => child.kill('SIGKILL'),
    });
    const files = sftpFiles({
      sftp: async () => sftp,
      rootDir: root,
      timeoutMs: 60_000,
      journal: new TempJournal(path.join(work, 'uploads.journal')),
    });
    const src = path.join(work, 'source.bin');
    console.log(
      `file: ${MB} MiB of random bytes; ${SERVER} on the host over a pipe; ${execFileSync('nproc', { encoding: 'utf8' }).trim()} cores; disk: ${execFileSync('df', ['-h', '--output=source,fstype', work], { encoding: 'utf8' }).split('\n')[1]?.trim()}`,
    );
    execFileSync('head', ['-c', String(SIZE), '/dev/urandom'], {
      stdio: ['ignore', fs.openSync(src, 'w'), 'inherit'],
    });
    const want = await sha256(src);

    const cpStart = performance.now();
    execFileSync('cp', [src, path.join(root, 'cp-copy.bin')]);
    const cpSeconds = (performance.now() - cpStart) / 1000;
    fs.rmSync(path.join(root, 'cp-copy.bin'));
    console.log(
      `${'cp (same disk)'.padEnd(44)} ${cpSeconds.toFixed(2).padStart(6)} s  ${(MB / cpSeconds).toFixed(0).padStart(5)} MiB/s`,
    );

    const up = await timed('upload   sftpFiles.createWriteStream + commit', async () => {
      const sink = await files.createWriteStream('/uploaded.bin');
      await pipeline(fs.createReadStream(src, { highWaterMark: 1 << 20 }), sink.stream);
      await sink.commit();
    });
    if (fs.statSync(path.join(root, 'uploaded.bin')).size !== SIZE) throw new Error('upload incomplete');
    const dst = path.join(work, 'downloaded.bin');
    const down = await timed('download sftpFiles.createReadStream', async () => {
      await pipeline(
        await files.createReadStream('/uploaded.bin'),
        fs.createWriteStream(dst, { highWaterMark: 1 << 20 }),
      );
    });
    const same = (await sha256(dst)) === want && (await sha256(path.join(root, 'uploaded.bin'))) === want;
    fs.rmSync(dst);
    // The same download into a sink that drops the bytes: the adapter without this disk's writeback.
    await timed('download sftpFiles.createReadStream, no sink', async () => {
      const sink = new Writable({ highWaterMark: 1 << 20, write: (_c, _e, cb) => cb() });
      await pipeline(await files.createReadStream('/uploaded.bin'), sink);
    });

    // ssh2's own streams over the same pipe, for comparison.
    const s = sftp as SFTPWrapper;
    const ssh2Up = await timed('upload   ssh2 createWriteStream (serial)', async () => {
      await pipeline(
        fs.createReadStream(src, { highWaterMark: 1 << 20 }),
        s.createWriteStream(path.join(root, 'ssh2.bin')),
      );
    });
    const ssh2Down = await timed('download ssh2 createReadStream (serial)', async () => {
      await pipeline(
        s.createReadStream(path.join(root, 'ssh2.bin')),
        fs.createWriteStream(dst, { highWaterMark: 1 << 20 }),
      );
    });
    const ssh2Same = (await sha256(dst)) === want;

    console.log(
      `sha256: pipelined ${same ? 'matches' : 'DIFFERS'}, ssh2 ${ssh2Same ? 'matches' : 'DIFFERS'}; pipelined/ssh2: upload ${(up.rate / ssh2Up.rate).toFixed(1)}x, download ${(down.rate / ssh2Down.rate).toFixed(1)}x`,
    );
    if (!same || !ssh2Same) process.exitCode = 1;
    s.end();
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
