// Benchmark of the raw disk image writer that flashes QEMU boards: a GPT disk (2 GiB, about 0.9 GB of
// random data in four regions, the rest holes) compressed as .img.zst, written to a new sparse file
// by writeRawImage (zstd in its sandbox, sha256 of the whole stream, fsync), then read back by
// verifyRawImage. In the same run, interleaved round by round, the anchors on the same file system:
// `zstd -dc | dd conv=sparse,fsync` (decompress and sparse write, nothing hashed) and `bmaptool copy`
// (its .bmap made beforehand, not timed; it decompresses, writes only the mapped ranges, checks their
// sha256 and syncs). Each round runs the three in a rotated order. Reports medians, MiB/s of the
// logical size, and each median over bmaptool's.
//
//   node --import tsx tests/bench/flash-raw.bench.ts
//   BENCH_RAW_DISK_MIB=2048 BENCH_RAW_DATA_MIB=860 BENCH_RAW_ROUNDS=3 BENCH_DIR=/var/tmp ...   (defaults)
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { verifyRawImage, writeRawImage } from '#server/boards/qemu/raw-image.ts';

const MIB = 1024 * 1024;
const diskMib = Number(process.env.BENCH_RAW_DISK_MIB ?? 2048);
const dataMib = Number(process.env.BENCH_RAW_DATA_MIB ?? 860);
const rounds = Number(process.env.BENCH_RAW_ROUNDS ?? 3);
const work = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? '/var/tmp', 'bench-flash-raw-'));

function run(cmd: string, args: string[], opts: { input?: string } = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, {
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'ignore', 'inherit'],
    });
    if (opts.input !== undefined) p.stdin?.end(opts.input);
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}`))));
  });
}

/** A GPT disk of `diskMib` MiB, `dataMib` MiB of random bytes in four regions inside its partitions. */
async function makeDisk(file: string): Promise<void> {
  fs.writeFileSync(file, '');
  fs.truncateSync(file, diskMib * MIB);
  await run('sfdisk', ['--quiet', file], {
    input:
      'label: gpt\n' +
      'start=2048, size=262144, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="boot"\n' +
      'type=0FC63DAF-8483-4772-8E79-3D69E4477DE4, name="rootfs"\n',
  });
  const fd = fs.openSync(file, 'r+');
  try {
    const regions = 4;
    const piece = Buffer.allocUnsafe(16 * MIB);
    const stride = Math.floor((diskMib - 16) / regions);
    for (let r = 0; r < regions; r++) {
      let at = (2 + r * stride) * MIB;
      for (let left = Math.floor((dataMib * MIB) / regions); left > 0; ) {
        const n = Math.min(piece.length, left);
        crypto.randomFillSync(piece, 0, n);
        fs.writeSync(fd, piece, 0, n, at);
        at += n;
        left -= n;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

async function main() {
  const img = path.join(work, 'disk.img');
  const zst = `${img}.zst`;
  const bmap = path.join(work, 'disk.img.bmap');
  const dest = path.join(work, 'dest.img');
  try {
    await makeDisk(img);
    await run('zstd', ['-q', '-3', '-T0', img, '-o', zst]);
    await run('bmaptool', ['-q', 'create', '-o', bmap, img]);
    // The disk's own sha256, taken independently: every timed write must produce it.
    const hash = crypto.createHash('sha256');
    for await (const chunk of fs.createReadStream(img, { highWaterMark: 4 * MIB }))
      hash.update(chunk as Buffer);
    const expected = { bytes: diskMib * MIB, sha256: hash.digest('hex') };
    const logical = fs.statSync(img).size;
    console.log(
      `disk: ${diskMib} MiB GPT, ${(fs.statSync(img).blocks * 512) / MIB} MiB allocated; .zst ${(fs.statSync(zst).size / MIB).toFixed(0)} MiB; ${os.cpus().length} cores; load ${loadavg()}`,
    );
    fs.rmSync(img);
    const times: Record<string, number[]> = { write: [], verify: [], dd: [], bmaptool: [] };
    const loads: string[] = [loadavg()];
    const runs: Record<string, () => Promise<void>> = {
      write: async () => {
        let result = { bytes: 0, sha256: '', allocatedBytes: 0 };
        times.write.push(
          await timed(async () => {
            result = await writeRawImage(zst, dest, { maxBytes: 4 * logical });
          }),
        );
        if (result.sha256 !== expected.sha256 || result.bytes !== logical) throw new Error('write differs');
        times.verify.push(await timed(() => verifyRawImage(dest, result)));
      },
      dd: async () => {
        times.dd.push(
          await timed(() =>
            run('sh', [
              '-c',
              `zstd -dc -q '${zst}' | dd of='${dest}' bs=4M iflag=fullblock conv=sparse,fsync status=none`,
            ]),
          ),
        );
      },
      bmaptool: async () => {
        times.bmaptool.push(await timed(() => run('bmaptool', ['-q', 'copy', '--bmap', bmap, zst, dest])));
      },
    };
    const order = Object.keys(runs);
    for (let r = 0; r < rounds; r++) {
      // Each round starts with the next one, so that none always follows the same neighbour.
      for (const name of [...order.slice(r % order.length), ...order.slice(0, r % order.length)]) {
        await runs[name]();
        fs.rmSync(dest);
      }
      loads.push(loadavg());
      console.log(
        `round ${r + 1}: write ${times.write[r].toFixed(2)} s, verify ${times.verify[r].toFixed(2)} s, dd ${times.dd[r].toFixed(2)} s, bmaptool ${times.bmaptool[r].toFixed(2)} s; load ${loads[loads.length - 1]}`,
      );
    }
    const b = median(times.bmaptool);
    const row = (what: string, xs: number[], anchor = false) =>
      `| ${what}${anchor ? ' (anchor)' : ''} | ${median(xs).toFixed(2)} | ${(logical / MIB / median(xs)).toFixed(0)} | ${(median(xs) / b).toFixed(2)} |`;
    console.log(`\nload average (1, 5, 15 min) before and after each round: ${loads.join(' → ')}`);
    console.log('| what | median s | MiB/s (logical) | ratio to bmaptool copy |');
    console.log('|---|---|---|---|');
    console.log(row('writeRawImage from .img.zst', times.write));
    console.log(row('verifyRawImage', times.verify));
    console.log(row('zstd -dc | dd conv=sparse,fsync bs=4M', times.dd, true));
    console.log(row('bmaptool copy .img.zst', times.bmaptool, true));
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

await main();
