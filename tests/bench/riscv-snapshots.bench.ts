// Benchmark of riscv64 board snapshots (docs/riscv-snapshots.md) at the level of the disk files: the
// board image (developer if built, else minimal) decompressed as the raw base, a qcow2 overlay over
// it (BoardDisk), 1 GiB of user data written into the overlay by qemu-io (as a guest's writes land:
// through the qcow2 layer, 64 MiB at a time, a byte pattern per round), then per round: save (an
// internal snapshot, `qemu-img snapshot -c`, what a save of a powered-off board runs; a running
// board's save is the same qcow2 operation in QEMU over QMP), the overlay's allocated bytes before
// and after (what a snapshot costs), the bytes it keeps once 256 MiB of the saved data is rewritten
// (copy-on-write), restore (BoardDisk.restore: journal, pre-restore snapshot, apply, clean-up), and
// delete. The guest's own writes and the reboot after a restore are not timed here (a board boots
// in about a minute under TCG, docs/riscv-boards.md).
//
//   node --import tsx tests/bench/riscv-snapshots.bench.ts
//   BENCH_SNAP_DATA_MIB=1024 BENCH_SNAP_ROUNDS=3 BENCH_DIR=/var/tmp BIANBU_BOARD_IMAGES=...   (defaults)
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { BoardImages, boardImageTag } from '#server/boards/qemu/board-images.ts';
import { BoardDisk } from '#server/boards/qemu/snapshot-disk.ts';

const MIB = 1024 * 1024;
const dataMib = Number(process.env.BENCH_SNAP_DATA_MIB ?? 1024);
const rounds = Number(process.env.BENCH_SNAP_ROUNDS ?? 3);
const images = new BoardImages(path.resolve(process.env.BIANBU_BOARD_IMAGES ?? 'data/images/board'));
const img = images.find(boardImageTag('developer')) ?? images.find(boardImageTag('minimal'));
if (!img) throw new Error('no board image built (scripts/board-images/build.sh)');
const work = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? '/var/tmp', 'bench-snap-'));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0: number) => performance.now() - t0;
const mib = (b: number) => (b / MIB).toFixed(1);
const kib = (b: number) => (b / 1024).toFixed(0);

/** `mib` MiB of `pattern` written through the overlay from `offsetMib`, 64 MiB per qemu-io command. */
function writeData(dir: string, pattern: number, offsetMib: number, total: number): void {
  const cmds: string[] = [];
  for (let o = 0; o < total; o += 64) cmds.push('-c', `write -q -P ${pattern} ${offsetMib + o}M 64M`);
  execFileSync('qemu-io', ['-f', 'qcow2', ...cmds, 'disk.qcow2'], { cwd: dir, stdio: 'ignore' });
}

async function main() {
  const dir = path.join(work, 'board');
  fs.mkdirSync(dir);
  let t0 = performance.now();
  const z = spawnSync('zstd', ['-dqf', img!.file, '-o', path.join(dir, 'disk.img')], { stdio: 'inherit' });
  if (z.status !== 0) throw new Error('zstd failed');
  const base = fs.statSync(path.join(dir, 'disk.img'));
  console.log(
    `image ${path.basename(img!.file)}: raw ${mib(base.size)} MiB (${mib(base.blocks * 512)} MiB allocated), decompressed in ${(ms(t0) / 1000).toFixed(1)} s`,
  );
  const disk = new BoardDisk(dir);
  t0 = performance.now();
  await disk.prepare();
  console.log(`overlay made in ${ms(t0).toFixed(0)} ms (${mib(disk.allocatedBytes())} MiB)`);
  // The user data sits past the image's own files (its middle), never past the disk's end.
  const at = Math.floor(base.size / MIB / 2) - Math.ceil(dataMib / 2);
  if (at < 0) throw new Error(`the disk is smaller than ${dataMib} MiB`);
  t0 = performance.now();
  writeData(dir, 0x5a, at, dataMib);
  console.log(`${dataMib} MiB user data written by qemu-io in ${(ms(t0) / 1000).toFixed(1)} s`);

  const rows: { save: number; restore: number; del: number; cost: number; kept: number }[] = [];
  for (let r = 0; r < rounds; r++) {
    const name = `round-${r}`;
    const before = disk.allocatedBytes();
    t0 = performance.now();
    await disk.create(name);
    const save = ms(t0);
    const after = disk.allocatedBytes();
    // The guest rewrites 256 MiB of what the snapshot holds: those clusters are now kept twice.
    writeData(dir, 0x10 + r, at, 256);
    const kept = disk.allocatedBytes() - after;
    t0 = performance.now();
    await disk.restore(name);
    const restore = ms(t0);
    t0 = performance.now();
    await disk.remove(name);
    const del = ms(t0);
    rows.push({ save, restore, del, cost: after - before, kept });
    console.log(
      `round ${r}: save ${save.toFixed(0)} ms (+${kib(after - before)} KiB), rewrite 256 MiB keeps +${mib(kept)} MiB, restore ${restore.toFixed(0)} ms, delete ${del.toFixed(0)} ms`,
    );
  }
  // One export of a snapshot as an image: raw via qemu-img convert, then zstd -3 (what snapshotImage does).
  await disk.create('export');
  t0 = performance.now();
  await disk.exportRaw('export', path.join(work, 'export.raw'));
  const convert = ms(t0);
  t0 = performance.now();
  execFileSync('zstd', [
    '-q',
    '-3',
    '-T0',
    '-f',
    '-o',
    path.join(work, 'export.img.zst'),
    path.join(work, 'export.raw'),
  ]);
  const zst = ms(t0);
  const zsize = fs.statSync(path.join(work, 'export.img.zst')).size;
  console.log('');
  console.log(`| ${dataMib} MiB user data, ${rounds} rounds (median) | value |`);
  console.log('| --- | --- |');
  console.log(`| save (internal snapshot) | ${median(rows.map((x) => x.save)).toFixed(0)} ms |`);
  console.log(
    `| restore (journal + pre-restore snapshot + apply) | ${median(rows.map((x) => x.restore)).toFixed(0)} ms |`,
  );
  console.log(`| delete | ${median(rows.map((x) => x.del)).toFixed(0)} ms |`);
  console.log(`| host bytes a snapshot costs when saved | ${kib(median(rows.map((x) => x.cost)))} KiB |`);
  console.log(`| … after the guest rewrites 256 MiB of it | ${mib(median(rows.map((x) => x.kept)))} MiB |`);
  console.log(
    `| overlay allocated (${dataMib} MiB data + snapshot tables) | ${mib(disk.allocatedBytes())} MiB |`,
  );
  console.log(`| export: qemu-img convert to raw | ${(convert / 1000).toFixed(1)} s |`);
  console.log(`| export: zstd -3 | ${(zst / 1000).toFixed(1)} s, ${mib(zsize)} MiB |`);
}

try {
  await main();
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
