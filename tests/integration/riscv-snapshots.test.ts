// Snapshots of a riscv64 board's whole disk (issue 36; docs/riscv-snapshots.md). First the disk
// files alone: qemu-img on small real qcow2 overlays over raw bases (save, restore, delete, a flash's
// swap, export, and processes killed with SIGKILL at each step of a restore, then recovered: nothing
// lost). Then one real board under QEMU, driven by a user over the REST API, the CLI and a sequence,
// and a service killed during a restore.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { boardImageTag } from '#server/boards/qemu/board-images.ts';
import { BoardDisk, JOURNAL_NAME, PRE_RESTORE } from '#server/boards/qemu/snapshot-disk.ts';
import { type CliEnv, runCli } from './helpers/cli-run.ts';
import { boardImagesDir, requireBoardImages, writeRiscvLab } from './helpers/riscv-lab.ts';

const MIB = 1024 * 1024;

/** Writes `pattern` over `mib` MiB at `offsetMib` of the overlay (through qcow2, as a guest would). */
function write(dir: string, pattern: number, offsetMib: number, mib = 1): void {
  execFileSync('qemu-io', ['-f', 'qcow2', '-c', `write -P ${pattern} ${offsetMib}M ${mib}M`, 'disk.qcow2'], {
    cwd: dir,
    stdio: 'pipe',
  });
}

/** Whether the overlay reads `pattern` over that range. */
function holds(dir: string, pattern: number, offsetMib: number, mib = 1): boolean {
  const out = execFileSync(
    'qemu-io',
    ['-f', 'qcow2', '-r', '-U', '-c', `read -P ${pattern} ${offsetMib}M ${mib}M`, 'disk.qcow2'],
    { cwd: dir, encoding: 'utf8', stdio: 'pipe' },
  );
  return !/verification failed/i.test(out);
}

function newDisk(root: string, name: string, baseMib = 64): BoardDisk {
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  // A base with bytes of its own (0x11 over its first MiB), as a flashed image has.
  fs.writeFileSync(path.join(dir, 'disk.img'), Buffer.alloc(baseMib * MIB));
  const fd = fs.openSync(path.join(dir, 'disk.img'), 'r+');
  fs.writeSync(fd, Buffer.alloc(MIB, 0x11), 0, MIB, 0);
  fs.closeSync(fd);
  return new BoardDisk(dir);
}

/** Runs a restore in a process of its own, killed with SIGKILL at `at`. */
async function restoreKilledAt(dir: string, target: string, at: string, epoch?: number): Promise<void> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(import.meta.dirname, 'helpers', 'restore-then-die.ts')],
    {
      cwd: process.cwd(),
      env: { ...process.env, BIANBU_CRASH_RESTORE: JSON.stringify({ dir, target, at, epoch }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the restore never reached ${at}: ${out}`)), 60_000);
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes(`AT ${at}`)) {
        clearTimeout(t);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`the restore process exited (${code}): ${out}`)));
  });
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
}

describe('a board disk: a qcow2 overlay over the raw base, its snapshots', () => {
  let root = '';
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-snapdisk-'));
  });
  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('gives a raw-only board dir its overlay, saves, restores and deletes snapshots', async () => {
    const d = newDisk(root, 'basic');
    await d.prepare();
    expect(fs.existsSync(d.overlay)).toBe(true);
    // The overlay reads through to the base.
    expect(holds(d.dir, 0x11, 0)).toBe(true);
    write(d.dir, 0xaa, 4);
    await d.create('one');
    write(d.dir, 0xbb, 4);
    write(d.dir, 0xcc, 8);
    expect((await d.snapshots()).map((s) => s.name)).toEqual(['one']);
    await d.restore('one');
    expect(holds(d.dir, 0xaa, 4)).toBe(true);
    expect(holds(d.dir, 0, 8)).toBe(true);
    expect(holds(d.dir, 0x11, 0)).toBe(true);
    // The restore left nothing of its own.
    expect(fs.existsSync(path.join(d.dir, JOURNAL_NAME))).toBe(false);
    expect((await d.allSnapshots()).map((s) => s.name)).toEqual(['one']);
    // The base is never written.
    const base = fs.readFileSync(d.base);
    expect(base.subarray(4 * MIB, 5 * MIB).every((b) => b === 0)).toBe(true);
    await d.remove('one');
    expect(await d.snapshots()).toEqual([]);
    await expect(d.restore('one')).rejects.toMatchObject({ key: 'snapshot.not_found' });
  });

  it('costs the changed clusters only: a snapshot of a 32 MiB-written overlay adds well under 1 MiB', async () => {
    const d = newDisk(root, 'cost', 128);
    await d.prepare();
    write(d.dir, 0x5a, 16, 32);
    const before = d.allocatedBytes();
    await d.create('cheap');
    const after = d.allocatedBytes();
    expect(before).toBeGreaterThan(32 * MIB);
    expect(after - before).toBeLessThan(MIB);
  });

  it('after a kill at each step of a restore, recovery ends on the target and leaves nothing behind', async () => {
    for (const at of ['journal', 'pre', 'applied']) {
      const d = newDisk(root, `kill-${at}`);
      await d.prepare();
      write(d.dir, 0xaa, 2);
      await d.create('good');
      write(d.dir, 0xbb, 2);
      await restoreKilledAt(d.dir, 'good', at);
      expect(fs.existsSync(d.journal)).toBe(true);
      expect(await d.recover()).toBe('restored');
      expect(holds(d.dir, 0xaa, 2)).toBe(true);
      expect(fs.existsSync(d.journal)).toBe(false);
      expect((await d.allSnapshots()).map((s) => s.name)).toEqual(['good']);
      // The recovered overlay is sound.
      execFileSync('qemu-img', ['check', '-f', 'qcow2', 'disk.qcow2'], { cwd: d.dir, stdio: 'pipe' });
    }
  }, 120_000);

  it('recovery waits for a process still holding the overlay before it repairs and applies', async () => {
    const d = newDisk(root, 'locked');
    await d.prepare();
    write(d.dir, 0xaa, 2);
    await d.create('good');
    write(d.dir, 0xbb, 2);
    await restoreKilledAt(d.dir, 'good', 'pre');
    // A qemu-img left running by the killed service, as a writer holding the image's lock for 3 s.
    const holder = spawn('qemu-io', ['-f', 'qcow2', '-c', 'sleep 3000', 'disk.qcow2'], { cwd: d.dir });
    const gone = new Promise((r) => holder.once('exit', r));
    await new Promise((r) => setTimeout(r, 500));
    const begun = Date.now();
    expect(await d.recover()).toBe('restored');
    expect(Date.now() - begun).toBeGreaterThan(1500);
    await gone;
    expect(holds(d.dir, 0xaa, 2)).toBe(true);
    expect((await d.allSnapshots()).some((s) => s.name === PRE_RESTORE)).toBe(false);
  }, 60_000);

  it('drops a journal that has no overlay left to finish on, and one that names nothing', async () => {
    const d = newDisk(root, 'stale');
    fs.writeFileSync(d.journal, JSON.stringify({ target: 'gone', at: new Date().toISOString() }));
    expect(await d.recover()).toBe('dropped');
    expect(fs.existsSync(d.journal)).toBe(false);
    await d.prepare();
    write(d.dir, 0xaa, 2);
    fs.writeFileSync(d.journal, 'not json');
    expect(await d.recover()).toBe('dropped');
    expect(holds(d.dir, 0xaa, 2)).toBe(true);
    expect(fs.existsSync(d.journal)).toBe(false);
  });

  it('a restore that fails puts the disk back as it was', async () => {
    const d = newDisk(root, 'fails');
    await d.prepare();
    write(d.dir, 0xaa, 2);
    await d.create('good');
    write(d.dir, 0xbb, 2);
    // The target's apply fails: the target goes just before it is applied.
    await expect(
      d.restore('good', (step) => {
        if (step === 'pre')
          execFileSync('qemu-img', ['snapshot', '-d', 'good', 'disk.qcow2'], { cwd: d.dir, stdio: 'pipe' });
      }),
    ).rejects.toMatchObject({ key: 'snapshot.failed' });
    expect(holds(d.dir, 0xbb, 2)).toBe(true);
    expect(await d.allSnapshots()).toEqual([]);
    expect(fs.existsSync(d.journal)).toBe(false);
  });

  it('a flash swap killed before its commit keeps the old disk; after it, finishes the new one', async () => {
    const d = newDisk(root, 'flash');
    await d.prepare();
    write(d.dir, 0xaa, 2);
    // Before the commit: the new base and its overlay beside the old pair.
    fs.writeFileSync(`${d.base}.next`, Buffer.alloc(32 * MIB, 0x22));
    await d.createOverlay(`${d.overlay}.next`, 32 * MIB);
    await d.prepare();
    expect(fs.existsSync(`${d.base}.next`)).toBe(false);
    expect(fs.existsSync(`${d.overlay}.next`)).toBe(false);
    expect(holds(d.dir, 0xaa, 2)).toBe(true);
    // After it: the base renamed, the old overlay still in place.
    fs.writeFileSync(`${d.base}.next`, Buffer.alloc(32 * MIB, 0x22));
    await d.createOverlay(`${d.overlay}.next`, 32 * MIB);
    fs.renameSync(`${d.base}.next`, d.base);
    await d.prepare();
    expect(holds(d.dir, 0x22, 2)).toBe(true);
  });

  /** A flash as the driver does it: a new base (0x22 over its first MiB) and its overlay, then the swap. */
  async function flashNew(d: BoardDisk, keep: boolean): Promise<void> {
    fs.writeFileSync(`${d.base}.next`, Buffer.alloc(64 * MIB));
    const fd = fs.openSync(`${d.base}.next`, 'r+');
    fs.writeSync(fd, Buffer.alloc(MIB, 0x22), 0, MIB, 0);
    fs.closeSync(fd);
    await d.createOverlay(`${d.overlay}.next`, 64 * MIB);
    d.commitFlash(keep);
  }

  it('a flash keeps the snapshots of the disk it replaces in an epoch; restoring one makes it current', async () => {
    const d = newDisk(root, 'epochs');
    await d.prepare();
    write(d.dir, 0xaa, 2);
    await d.create('e0');
    await flashNew(d, true);
    expect(d.currentEpoch()).toBe(1);
    expect(d.epochs()).toEqual([0]);
    expect(holds(d.dir, 0x22, 0)).toBe(true);
    expect(holds(d.dir, 0, 2)).toBe(true);
    expect((await d.everySnapshot()).map((x) => [x.name, x.epoch])).toEqual([['e0', 0]]);
    // The new disk holds no snapshot: restoring the old epoch's removes it.
    write(d.dir, 0xcc, 4);
    await d.restoreFrom(0, 'e0');
    expect(d.currentEpoch()).toBe(0);
    expect(d.epochs()).toEqual([]);
    expect(holds(d.dir, 0x11, 0)).toBe(true);
    expect(holds(d.dir, 0xaa, 2)).toBe(true);
    expect(fs.existsSync(d.journal)).toBe(false);
    // Flashed again, and a snapshot on the new disk: restoring the old one keeps the new one's epoch.
    await flashNew(d, true);
    write(d.dir, 0xdd, 4);
    await d.create('e1');
    const e1 = d.currentEpoch();
    await d.restoreFrom(0, 'e0');
    expect(holds(d.dir, 0xaa, 2)).toBe(true);
    expect((await d.everySnapshot()).map((x) => [x.name, x.epoch]).sort()).toEqual([
      ['e0', 0],
      ['e1', e1],
    ]);
    expect(await d.chargedBytes()).toBeGreaterThan(64 * MIB);
    // And back: the newer epoch's snapshot, its data over its own base.
    await d.restoreFrom(e1, 'e1');
    expect(holds(d.dir, 0x22, 0)).toBe(true);
    expect(holds(d.dir, 0xdd, 4)).toBe(true);
    // An epoch left without snapshots goes.
    await d.removeIn(0, 'e0');
    expect(d.epochs()).toEqual([]);
    // A flash over a disk without snapshots keeps nothing.
    await d.remove('e1');
    await flashNew(d, false);
    expect(d.epochs()).toEqual([]);
  });

  it('an older epoch restore killed at each step finishes at the next start, nothing lost', async () => {
    for (const at of ['journal', 'moved', 'applied']) {
      const d = newDisk(root, `epoch-kill-${at}`);
      await d.prepare();
      write(d.dir, 0xaa, 2);
      await d.create('old');
      await flashNew(d, true);
      write(d.dir, 0xbb, 4);
      await d.create('new');
      await restoreKilledAt(d.dir, 'old', at, 0);
      expect(fs.existsSync(d.journal)).toBe(true);
      await d.prepare();
      expect(await d.recover()).toBe('restored');
      expect(holds(d.dir, 0x11, 0)).toBe(true);
      expect(holds(d.dir, 0xaa, 2)).toBe(true);
      expect(d.currentEpoch()).toBe(0);
      expect((await d.everySnapshot()).map((x) => [x.name, x.epoch]).sort()).toEqual([
        ['new', 1],
        ['old', 0],
      ]);
      // The newer epoch is whole: its snapshot restores.
      await d.restoreFrom(1, 'new');
      expect(holds(d.dir, 0xbb, 4)).toBe(true);
    }
  }, 120_000);

  it('a flash swap killed while the old pair moves into its epoch is undone, or finished once it moved', async () => {
    const d = newDisk(root, 'epoch-flash');
    await d.prepare();
    write(d.dir, 0xaa, 2);
    await d.create('s');
    // The overlay moved, the base not yet: undone.
    fs.writeFileSync(`${d.base}.next`, Buffer.alloc(64 * MIB, 0x22));
    await d.createOverlay(`${d.overlay}.next`, 64 * MIB);
    fs.mkdirSync(d.epochDir(0), { recursive: true });
    fs.renameSync(d.overlay, path.join(d.epochDir(0), 'disk.qcow2'));
    await d.prepare();
    expect(holds(d.dir, 0xaa, 2)).toBe(true);
    expect(d.epochs()).toEqual([]);
    expect(d.currentEpoch()).toBe(0);
    // Both moved, not committed: the flash goes forward, the old pair is epoch 0.
    fs.writeFileSync(`${d.base}.next`, Buffer.alloc(64 * MIB, 0x22));
    await d.createOverlay(`${d.overlay}.next`, 64 * MIB);
    fs.mkdirSync(d.epochDir(0), { recursive: true });
    fs.renameSync(d.overlay, path.join(d.epochDir(0), 'disk.qcow2'));
    fs.renameSync(d.base, path.join(d.epochDir(0), 'disk.img'));
    await d.prepare();
    expect(holds(d.dir, 0x22, 2)).toBe(true);
    expect(d.currentEpoch()).toBe(1);
    expect((await d.everySnapshot()).map((x) => [x.name, x.epoch])).toEqual([['s', 0]]);
  });

  it('exports a snapshot as a raw disk: the snapshot over its base, not the disk as it is now', async () => {
    const d = newDisk(root, 'export');
    await d.prepare();
    write(d.dir, 0xaa, 2);
    await d.create('keep');
    write(d.dir, 0xbb, 2);
    const out = path.join(root, 'export.raw');
    await d.exportRaw('keep', out);
    const raw = fs.readFileSync(out);
    expect(raw.length).toBe(64 * MIB);
    expect(raw.subarray(0, MIB).every((b) => b === 0x11)).toBe(true);
    expect(raw.subarray(2 * MIB, 3 * MIB).every((b) => b === 0xaa)).toBe(true);
  });
});

const IMAGES = boardImagesDir();
const BOARD = 'snap-rv';
const NAME = 'rv';

/** One service process on the test's data directory (helpers/snapshot-service.ts). */
interface Service {
  child: ReturnType<typeof spawn>;
  url: string;
  key?: string;
  exited: Promise<unknown>;
}

/** Both starts of the service append to one log beside the data directory. */
const serviceLog = (dataDir: string) => path.join(path.dirname(dataDir), 'service.log');

/** A failed test says what the service and its board did: the log's last lines. */
function printServiceLog(dataDir: string): void {
  let text = '';
  try {
    text = fs.readFileSync(serviceLog(dataDir), 'utf8');
  } catch {
    return;
  }
  console.log(`the service's log, last lines:\n${text.split('\n').slice(-80).join('\n')}`);
}

function startService(o: { dataDir: string; labFile: string; quotaMb?: number }): Promise<Service> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(import.meta.dirname, 'helpers', 'snapshot-service.ts')],
    {
      cwd: process.cwd(),
      env: {
        ...process.env,
        DATABASE_URL: '',
        BIANBU_SNAPSHOT_SERVICE: JSON.stringify({ ...o, images: IMAGES, logFile: serviceLog(o.dataDir) }),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise((r) => child.once('exit', r));
  let out = '';
  return new Promise<Service>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the service did not start: ${out}`)), 300_000);
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const url = /URL (\S+)/.exec(out)?.[1];
      if (url) {
        clearTimeout(t);
        resolve({ child, url, key: /KEY (\S+)/.exec(out)?.[1], exited });
      }
    });
    child.once('exit', (code) => reject(new Error(`the service exited (${code}): ${out}`)));
  });
}

describe('a riscv64 board under QEMU: a user saves, deletes, restores; a service killed mid-restore', () => {
  // Made in beforeAll: a run filtered to other tests leaves no directory behind.
  let work = '';
  let dataDir = '';
  let labFile = '';
  let boardDir = '';
  let svc: Service | null = null;
  let env: CliEnv;
  const bianbu = (args: string[], timeoutMs = 600_000) => runCli(env, args, { timeoutMs });
  async function sh(cmd: string): Promise<string> {
    const r = await bianbu(['exec', NAME, '--', 'sh', '-c', cmd]);
    if (r.code !== 0) throw new Error(`exec ${cmd}: ${r.code} ${r.stderr}`);
    return r.stdout.trim();
  }

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-snap-'));
    dataDir = path.join(work, 'data');
    labFile = path.join(work, 'lab.yaml');
    boardDir = path.join(dataDir, 'boards', BOARD);
    requireBoardImages(IMAGES, ['minimal']);
    writeRiscvLab(labFile, { id: BOARD, image: 'minimal', cores: 2, memoryMb: 1024 });
    svc = await startService({ dataDir, labFile });
    env = { url: svc.url, key: svc.key!, configFile: path.join(work, 'cli.json') };
    // The board comes into service once its first disk is written and its machine answers.
    for (const deadline = Date.now() + 600_000; ; ) {
      const r = await bianbu(['request', NAME, '--duration', '48h']);
      if (r.code === 0) break;
      if (Date.now() > deadline) throw new Error(`no lease: ${r.stderr}`);
      await new Promise((res) => setTimeout(res, 3000));
    }
  }, 900_000);

  afterAll(async () => {
    if (svc) {
      svc.child.kill('SIGTERM');
      await Promise.race([svc.exited, new Promise((r) => setTimeout(r, 20_000))]);
      svc.child.kill('SIGKILL');
    }
    if (work) fs.rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it('with the CLI: a file written, saved, deleted and restored is there again', async () => {
    onTestFailed(() => printServiceLog(dataDir));
    await sh('echo kept-1 > /root/snap.txt && sync');
    const save = await bianbu(['snapshot', 'save', NAME, 'first']);
    expect(save.code, save.stderr).toBe(0);
    // Saving costs no copy of the disk: the overlay grew by metadata only.
    const ls = await bianbu(['snapshot', 'ls', NAME, '--json']);
    expect(ls.code, ls.stderr).toBe(0);
    const listed = JSON.parse(ls.stdout) as { items: { name: string }[]; usage: { chargedBytes: number } };
    expect(listed.items.map((i) => i.name)).toEqual(['first']);
    expect(listed.usage.chargedBytes).toBeGreaterThan(0);
    expect(fs.readdirSync(boardDir).sort()).toEqual(expect.arrayContaining(['disk.img', 'disk.qcow2']));
    await sh('rm /root/snap.txt && sync');
    expect(await sh('test -e /root/snap.txt && echo yes || echo no')).toBe('no');
    const dup = await bianbu(['snapshot', 'save', NAME, 'first']);
    expect(dup.code).not.toBe(0);
    expect(dup.stderr).toMatch(/snapshot\.name_taken/);
    const bad = await bianbu(['snapshot', 'save', NAME, '_bianbu_pre_restore']);
    expect(bad.code).not.toBe(0);
    const restore = await bianbu(['snapshot', 'restore', NAME, 'first']);
    expect(restore.code, restore.stderr).toBe(0);
    // The CLI waits for the board to boot again.
    expect(await sh('cat /root/snap.txt')).toBe('kept-1');
    // The snapshot as a private image: a compressed raw disk in the flash catalogue, on the quota.
    const img = await bianbu(['snapshot', 'image', NAME, 'first', 'snap-first', '--json']);
    expect(img.code, img.stderr).toBe(0);
    const made = JSON.parse(img.stdout) as { tag: string; size: number };
    const cat = JSON.parse((await bianbu(['images', '--json'])).stdout) as {
      items: { tag: string; format: string; source: string; ownerId: string | null; size: number }[];
    };
    const mine = cat.items.find((i) => i.tag === 'snap-first');
    expect(mine).toMatchObject({ format: 'img.zst', source: 'user', size: made.size });
    expect(mine?.ownerId).toBeTruthy();
    // A flash keeps the snapshots: the disk it replaces becomes an older epoch, still restorable.
    const flash = await bianbu(['flash', boardImageTag('minimal'), NAME, '--wait']);
    expect(flash.code, flash.stderr).toBe(0);
    expect(await sh('test -e /root/snap.txt && echo yes || echo no')).toBe('no');
    const after = JSON.parse((await bianbu(['snapshot', 'ls', NAME, '--json'])).stdout) as {
      items: { name: string }[];
    };
    expect(after.items.map((i) => i.name)).toEqual(['first']);
    expect(fs.readdirSync(path.join(boardDir, 'epochs'))).toEqual(['0']);
    const back = await bianbu(['snapshot', 'restore', NAME, 'first']);
    expect(back.code, back.stderr).toBe(0);
    expect(await sh('cat /root/snap.txt')).toBe('kept-1');
    // The flashed disk held no snapshot: it went; the first epoch is current again.
    expect(fs.readdirSync(path.join(boardDir, 'epochs'))).toEqual([]);
    expect(fs.readFileSync(path.join(boardDir, 'epoch'), 'utf8').trim()).toBe('0');
  }, 900_000);

  it('with a sequence: snapshot save, delete, snapshot restore, the file is back', async () => {
    onTestFailed(() => printServiceLog(dataDir));
    const file = path.join(work, 'snap-seq.yaml');
    fs.writeFileSync(
      file,
      [
        'name: snap-roundtrip',
        'steps:',
        '  - exec: echo kept-2 > /root/seq.txt && sync',
        '  - snapshot: { save: second }',
        '  - exec: rm /root/seq.txt && sync',
        '  - snapshot: { restore: second }',
        '  - exec: grep -q kept-2 /root/seq.txt',
      ].join('\n'),
    );
    const imp = await bianbu(['seq', 'import', file]);
    expect(imp.code, imp.stderr).toBe(0);
    const run = await bianbu(['seq', 'run', 'snap-roundtrip', NAME, '--wait', '--json']);
    expect(run.code, `${run.stdout} ${run.stderr}`).toBe(0);
    const r = JSON.parse(run.stdout) as { boards: { state: string; steps: { state: string }[] }[] };
    expect(r.boards[0].state).toBe('success');
    expect(r.boards[0].steps.map((x) => x.state)).toEqual(Array(5).fill('success'));
  }, 900_000);

  it('a service killed with SIGKILL during a restore: restarted, the restore is finished, the board boots', async () => {
    onTestFailed(() => printServiceLog(dataDir));
    await sh('echo after-second > /root/late.txt && rm -f /root/snap.txt && sync');
    const leases = JSON.parse((await bianbu(['leases', '--json'])).stdout) as {
      items: { serverName: string; applyId: string | null }[];
    };
    const lease = leases.items;
    const applyId = lease.find((l) => l.serverName === NAME)?.applyId;
    expect(applyId).toBeTruthy();
    // The kill lands the moment the journal appears: the restore has begun, not ended.
    let seenJournal = false;
    const watcher = fs.watch(boardDir, (_ev, f) => {
      if (f === JOURNAL_NAME && !seenJournal && fs.existsSync(path.join(boardDir, JOURNAL_NAME))) {
        seenJournal = true;
        svc!.child.kill('SIGKILL');
      }
    });
    const answer = fetch(`${svc!.url}/api/device/snapshot-restore`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: env.key, ApplyAccess: applyId! },
      body: JSON.stringify({ name: 'first' }),
    }).catch((e: unknown) => e);
    await svc!.exited;
    watcher.close();
    await answer;
    expect(seenJournal).toBe(true);
    expect(fs.existsSync(path.join(boardDir, JOURNAL_NAME))).toBe(true);
    // Started again on the same data (with a 1 MiB private-image quota, for the last check): the
    // driver finishes the restore before the machine boots.
    svc = await startService({ dataDir, labFile, quotaMb: 1 });
    env = { ...env, url: svc.url };
    expect(await sh('cat /root/snap.txt')).toBe('kept-1');
    expect(await sh('test -e /root/late.txt && echo yes || echo no')).toBe('no');
    expect(fs.existsSync(path.join(boardDir, JOURNAL_NAME))).toBe(false);
    const ls = JSON.parse((await bianbu(['snapshot', 'ls', NAME, '--json'])).stdout) as {
      items: { name: string }[];
    };
    expect(ls.items.map((i) => i.name).sort()).toEqual(['first', 'second']);
    const info = execFileSync('qemu-img', ['info', '-U', '--output=json', '-f', 'qcow2', 'disk.qcow2'], {
      cwd: boardDir,
      encoding: 'utf8',
    });
    expect(info).not.toMatch(/_bianbu_/);
    // Snapshots count against the holder's private-image quota: the overlay is past 1 MiB.
    const over = await bianbu(['snapshot', 'save', NAME, 'third']);
    expect(over.code).not.toBe(0);
    expect(over.stderr).toMatch(/flash\.quota_exceeded/);
    // Deleted snapshots are gone from the disk too.
    const rm = await bianbu(['snapshot', 'rm', NAME, 'second']);
    expect(rm.code, rm.stderr).toBe(0);
    expect(
      execFileSync('qemu-img', ['snapshot', '-U', '-l', 'disk.qcow2'], { cwd: boardDir, encoding: 'utf8' }),
    ).not.toMatch(/second/);
    // Snapshots end with the lease: returning the board puts its default image back, every snapshot
    // gone with the old overlay (the image saved from one stays the user's).
    const off = await bianbu(['unlock', NAME, '--yes']);
    expect(off.code, off.stderr).toBe(0);
    const snapsLeft = () =>
      execFileSync('qemu-img', ['snapshot', '-U', '-l', 'disk.qcow2'], { cwd: boardDir, encoding: 'utf8' });
    for (const deadline = Date.now() + 300_000; /first/.test(snapsLeft()); ) {
      if (Date.now() > deadline) throw new Error(`snapshots outlived the lease: ${snapsLeft()}`);
      await new Promise((res) => setTimeout(res, 2000));
    }
    expect(snapsLeft().trim()).toBe('');
    expect(fs.existsSync(path.join(boardDir, 'epochs'))).toBe(false);
    const cat = JSON.parse((await bianbu(['images', '--json'])).stdout) as { items: { tag: string }[] };
    expect(cat.items.some((i) => i.tag === 'snap-first')).toBe(true);
  }, 900_000);
});
