// A riscv64 board's disk as files: the raw image a flash wrote (`disk.img`, never written after the
// flash) and the qcow2 overlay over it that the machine runs on (`disk.qcow2`), whose internal
// snapshots are the board's snapshots (docs/riscv-snapshots.md). Every operation here is a qemu-img
// child the service waits for, on files of the board's own directory only; the overlay's header is
// written by the service alone (a guest writes data clusters, never the header), and every qemu-img
// call names the formats (`-f qcow2`, backing `raw`), so nothing is probed.
//
// Lifecycle of a restore (the machine off): the journal `restore.json` names the target (written to a
// temporary file, then renamed), the current state is saved as `_bianbu_pre_restore`, the target is
// applied, then the pre-restore snapshot and the journal go. A failure applies `_bianbu_pre_restore`
// back (the disk as it was). A service killed mid-way leaves the journal: `recover()` at the next
// start waits for a qemu-img still running on the overlay (it holds the image's lock), repairs the
// overlay (`check -r all`), applies the target again (idempotent) and removes what the restore left.
//
// A flash writes `disk.img.next` and a fresh overlay `disk.qcow2.next` over it; the rename of the base
// is the commit point: at start, a `disk.img.next` beside a base means the flash never committed (both
// `.next` files go), a lone `disk.qcow2.next` means it did (it replaces the old overlay).
//
// Epochs: a flash over a disk whose overlay holds snapshots first moves the pair (overlay, then base)
// into `epochs/<n>/` (renames), n being the current epoch's number (the file `epoch`), and the new
// pair becomes epoch n+1; a base already moved away with `disk.qcow2.next` ready means the commit
// goes forward. Restoring a snapshot of an older epoch k makes k current again: the journal names k,
// the current pair moves to `epochs/<current>/` (removed at the end when it held no snapshots), k's
// pair moves in, the target is applied; each step is a rename checked by the files, so a recovery
// runs them again from where a kill stopped them. An epoch without snapshots is removed.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { RESERVED_SNAPSHOT_PREFIX } from '#shared/snapshots.ts';
import { DriverError } from '../driver.ts';
import { sleep } from '../util.ts';

export const QEMU_IMG = '/usr/bin/qemu-img';
export const BASE_NAME = 'disk.img';
export const OVERLAY_NAME = 'disk.qcow2';
export const JOURNAL_NAME = 'restore.json';
export const EPOCHS_DIR = 'epochs';
const TAG_NAME = `${BASE_NAME}.image`;
const EPOCH_FILE = 'epoch';
/** The overlay as `--image-opts` name it (`qemu-img snapshot` has no `-f`): its format is never probed. */
const OVERLAY_OPTS = `driver=qcow2,file.driver=file,file.filename=${OVERLAY_NAME}`;
/** The state of the disk before a restore, while the restore runs. */
export const PRE_RESTORE = `${RESERVED_SNAPSHOT_PREFIX}pre_restore`;
/** How long recovery waits for a qemu-img a killed service left running on the overlay. */
const LOCK_WAIT_MS = 10 * 60_000;

export class QemuImgError extends Error {
  constructor(
    message: string,
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(message);
  }
  /** Another process (a machine, a qemu-img) holds the image's lock. */
  get locked(): boolean {
    return /lock/i.test(this.stderr);
  }
}

/** Runs qemu-img in `cwd`; answers its stdout, or rejects with its exit code and stderr. */
export function qemuImg(args: string[], cwd: string, okCodes: readonly number[] = [0]): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(QEMU_IMG, args, {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin', LANG: 'C' },
    });
    let out = '';
    let err = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => {
      if (out.length < 4 * 1024 * 1024) out += d;
    });
    p.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (err.length < 64 * 1024) err += d;
    });
    p.once('error', (e) => reject(new QemuImgError(`qemu-img: ${e.message}`, null, '')));
    p.once('close', (code) => {
      if (code !== null && okCodes.includes(code)) resolve(out);
      else
        reject(
          new QemuImgError(
            `qemu-img ${args[0]} failed (${code}): ${err.trim().split('\n').slice(-2).join(' ')}`,
            code,
            err,
          ),
        );
    });
  });
}

/** A snapshot as qcow2 holds it. */
export interface DiskSnapshot {
  name: string;
  createdAt: Date;
}

/** A user's snapshot and the epoch (flash) of the disk it belongs to. */
export interface EpochSnapshot extends DiskSnapshot {
  epoch: number;
}

const infoJson = z.object({
  'virtual-size': z.number(),
  snapshots: z
    .array(z.object({ name: z.string(), 'date-sec': z.number(), 'date-nsec': z.number().optional() }))
    .optional(),
});

const journalJson = z.object({
  target: z.string().min(1).max(200),
  at: z.string(),
  /** An older epoch's restore: the epoch made current, the one that was, and whether it goes. */
  epoch: z.number().int().nonnegative().optional(),
  from: z.number().int().nonnegative().optional(),
  dropFrom: z.boolean().optional(),
});
export type RestoreJournal = z.infer<typeof journalJson>;

/** Writes a file whole or not at all: a temporary file beside it, synced, then renamed over it. */
export function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  syncDir(path.dirname(file));
}

function syncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {}
}

export class BoardDisk {
  /** Operations on the disk's files take turns. */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    readonly dir: string,
    private readonly log?: (msg: string, extra?: Record<string, unknown>) => void,
  ) {}

  get base(): string {
    return path.join(this.dir, BASE_NAME);
  }
  get overlay(): string {
    return path.join(this.dir, OVERLAY_NAME);
  }
  get journal(): string {
    return path.join(this.dir, JOURNAL_NAME);
  }

  /** Runs `fn` when every disk operation before it has ended. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => {});
    return run;
  }

  /**
   * A new empty overlay over the base named `backing` (a name in this directory), `bytes` large,
   * written as `file`. `-u`: the backing need not exist yet (a flash makes the overlay before its
   * base takes the name).
   */
  async createOverlay(file: string, bytes: number, backing = BASE_NAME): Promise<void> {
    const size = Math.ceil(bytes / 512) * 512;
    const tmp = `${file}.tmp`;
    fs.rmSync(tmp, { force: true });
    await qemuImg(
      ['create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', backing, '-u', path.basename(tmp), String(size)],
      this.dir,
    );
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, file);
    syncDir(this.dir);
  }

  /**
   * Before the machine starts: a flash that a killed service left half done is undone or finished,
   * and a board whose directory holds only the raw disk (boards of earlier versions) gets its overlay.
   */
  async prepare(): Promise<void> {
    const nextBase = `${this.base}.next`;
    const nextOverlay = `${this.overlay}.next`;
    const archive = this.epochDir(this.currentEpoch());
    if (fs.existsSync(nextBase)) {
      const archivedBase = path.join(archive, BASE_NAME);
      if (!fs.existsSync(this.base) && fs.existsSync(archivedBase) && fs.existsSync(nextOverlay)) {
        // The old pair went into its epoch and the new one is whole: the flash commits.
        fs.renameSync(nextBase, this.base);
        fs.renameSync(nextOverlay, this.overlay);
      } else {
        // Not committed: an overlay already moved into its epoch comes back.
        const archivedOverlay = path.join(archive, OVERLAY_NAME);
        if (fs.existsSync(this.base) && !fs.existsSync(this.overlay) && fs.existsSync(archivedOverlay)) {
          fs.renameSync(archivedOverlay, this.overlay);
          fs.rmSync(archive, { recursive: true, force: true });
        }
        fs.rmSync(nextBase, { force: true });
        fs.rmSync(nextOverlay, { force: true });
      }
      syncDir(this.dir);
    } else if (fs.existsSync(nextOverlay)) {
      fs.renameSync(nextOverlay, this.overlay);
      syncDir(this.dir);
    }
    // An archive whose epoch number was not moved on yet (a restore in flight sets its own).
    if (!fs.existsSync(this.journal)) {
      let n = this.currentEpoch();
      while (fs.existsSync(path.join(this.epochDir(n), BASE_NAME)) && fs.existsSync(this.base)) n++;
      if (n !== this.currentEpoch()) this.setEpoch(n);
    }
    fs.rmSync(`${nextOverlay}.tmp`, { force: true });
    fs.rmSync(`${this.overlay}.tmp`, { force: true });
    if (fs.existsSync(this.base) && !fs.existsSync(this.overlay)) {
      await this.createOverlay(this.overlay, fs.statSync(this.base).size);
      this.log?.('the board disk got its qcow2 overlay');
    }
  }

  /** Every snapshot of the overlay (the service's own too), read from the file (force-share). */
  async allSnapshots(dir = this.dir): Promise<DiskSnapshot[]> {
    if (!fs.existsSync(path.join(dir, OVERLAY_NAME))) return [];
    const out = await qemuImg(['info', '--output=json', '-U', '-f', 'qcow2', OVERLAY_NAME], dir);
    const info = infoJson.parse(JSON.parse(out));
    return (info.snapshots ?? []).map((s) => ({
      name: s.name,
      createdAt: new Date(s['date-sec'] * 1000 + Math.floor((s['date-nsec'] ?? 0) / 1e6)),
    }));
  }

  /** The users' snapshots (not the service's own). */
  async snapshots(dir = this.dir): Promise<DiskSnapshot[]> {
    return (await this.allSnapshots(dir)).filter((s) => !s.name.startsWith(RESERVED_SNAPSHOT_PREFIX));
  }

  // ---- epochs -----------------------------------------------------------------------------------

  epochDir(n: number): string {
    return path.join(this.dir, EPOCHS_DIR, String(n));
  }

  /** The number of the epoch the board's dir holds now (0 before any flash kept snapshots). */
  currentEpoch(): number {
    try {
      const n = Number(fs.readFileSync(path.join(this.dir, EPOCH_FILE), 'utf8').trim());
      return Number.isInteger(n) && n >= 0 ? n : 0;
    } catch {
      return 0;
    }
  }

  private setEpoch(n: number): void {
    writeAtomic(path.join(this.dir, EPOCH_FILE), `${n}\n`);
  }

  /** Older epochs kept (their pair whole), by number. */
  epochs(): number[] {
    let names: string[] = [];
    try {
      names = fs.readdirSync(path.join(this.dir, EPOCHS_DIR));
    } catch {}
    return names
      .filter((n) => /^\d{1,9}$/.test(n))
      .map(Number)
      .filter(
        (n) =>
          fs.existsSync(path.join(this.epochDir(n), BASE_NAME)) &&
          fs.existsSync(path.join(this.epochDir(n), OVERLAY_NAME)),
      )
      .sort((a, b) => a - b);
  }

  /** Every user snapshot of the board, the current epoch's and the older ones'. */
  async everySnapshot(current?: DiskSnapshot[]): Promise<EpochSnapshot[]> {
    const cur = this.currentEpoch();
    const out: EpochSnapshot[] = (current ?? (await this.snapshots())).map((x) => ({ ...x, epoch: cur }));
    for (const n of this.epochs())
      for (const x of await this.snapshots(this.epochDir(n))) out.push({ ...x, epoch: n });
    return out;
  }

  /** The epoch that holds snapshot `name`, or null. */
  async epochOf(name: string, current?: DiskSnapshot[]): Promise<number | null> {
    return (await this.everySnapshot(current)).find((x) => x.name === name)?.epoch ?? null;
  }

  /**
   * A flash's swap, the machine off, `disk.img.next` verified and `disk.qcow2.next` made over it: the
   * current pair moves into its epoch when its overlay holds snapshots (`keep`), then the new pair
   * takes the names (the base's rename commits), then the epoch number moves on.
   */
  commitFlash(keep: boolean): void {
    const cur = this.currentEpoch();
    if (keep) {
      const into = this.epochDir(cur);
      fs.mkdirSync(into, { recursive: true, mode: 0o700 });
      fs.renameSync(this.overlay, path.join(into, OVERLAY_NAME));
      fs.renameSync(this.base, path.join(into, BASE_NAME));
      // Which image the pair holds (the catalogue's tag) goes with it.
      if (fs.existsSync(`${this.base}.image`)) fs.renameSync(`${this.base}.image`, path.join(into, TAG_NAME));
      syncDir(into);
    }
    fs.renameSync(`${this.base}.next`, this.base);
    fs.renameSync(`${this.overlay}.next`, this.overlay);
    fs.rmSync(this.journal, { force: true });
    syncDir(this.dir);
    if (keep) this.setEpoch(cur + 1);
  }

  /** Every older epoch goes (lease end). */
  dropEpochs(): void {
    fs.rmSync(path.join(this.dir, EPOCHS_DIR), { recursive: true, force: true });
  }

  /** Host bytes of what snapshots keep: the current overlay when it holds some, every older epoch. */
  async chargedBytes(current?: DiskSnapshot[]): Promise<number> {
    const alloc = (f: string) => {
      try {
        return fs.statSync(f).blocks * 512;
      } catch {
        return 0;
      }
    };
    let bytes = (current ?? (await this.snapshots())).length ? alloc(this.overlay) : 0;
    for (const n of this.epochs())
      bytes +=
        alloc(path.join(this.epochDir(n), OVERLAY_NAME)) + alloc(path.join(this.epochDir(n), BASE_NAME));
    return bytes;
  }

  /** Deletes snapshot `name` of older epoch `n`; an epoch left without snapshots goes. */
  async removeIn(n: number, name: string): Promise<void> {
    const dir = this.epochDir(n);
    await this.remove(name, dir);
    if (!(await this.snapshots(dir)).length) fs.rmSync(dir, { recursive: true, force: true });
  }

  /**
   * The machine off: snapshot `name` of older epoch `k` (see the head of this file). A failure of the
   * apply puts both pairs back as they were.
   */
  async restoreFrom(
    k: number,
    name: string,
    hook?: (step: 'journal' | 'moved' | 'applied') => void,
  ): Promise<void> {
    if (!(await this.snapshots(this.epochDir(k))).some((x) => x.name === name))
      throw new DriverError('snapshot.not_found', `No snapshot named ${name}`);
    const from = this.currentEpoch();
    const j: RestoreJournal = {
      target: name,
      at: new Date().toISOString(),
      epoch: k,
      from,
      dropFrom: (await this.snapshots()).length === 0,
    };
    writeAtomic(this.journal, JSON.stringify(j));
    hook?.('journal');
    this.swapEpochs(j);
    hook?.('moved');
    try {
      await this.apply(name);
    } catch (err) {
      this.log?.('snapshot restore failed; the disk goes back as it was', { err: (err as Error).message });
      this.swapEpochs({ ...j, epoch: from, from: k, dropFrom: false });
      fs.rmSync(this.journal, { force: true });
      throw new DriverError('snapshot.failed', `The restore failed: ${(err as Error).message}`);
    }
    hook?.('applied');
    this.endEpochRestore(j);
  }

  /** The renames of an epoch restore, each done only if not done yet (a recovery runs them again). */
  private swapEpochs(j: RestoreJournal): void {
    const from = this.epochDir(j.from!);
    const into = this.epochDir(j.epoch!);
    fs.mkdirSync(from, { recursive: true, mode: 0o700 });
    for (const f of [OVERLAY_NAME, BASE_NAME]) {
      const here = path.join(this.dir, f);
      if (fs.existsSync(path.join(into, f)) && fs.existsSync(here) && !fs.existsSync(path.join(from, f)))
        fs.renameSync(here, path.join(from, f));
    }
    for (const f of [OVERLAY_NAME, BASE_NAME]) {
      const there = path.join(into, f);
      if (fs.existsSync(there) && !fs.existsSync(path.join(this.dir, f)))
        fs.renameSync(there, path.join(this.dir, f));
    }
    // The image tags follow their pairs (best effort: the catalogue's words only).
    const tag = `${this.base}.image`;
    if (fs.existsSync(path.join(into, TAG_NAME))) {
      if (fs.existsSync(tag) && !fs.existsSync(path.join(from, TAG_NAME)))
        fs.renameSync(tag, path.join(from, TAG_NAME));
      fs.renameSync(path.join(into, TAG_NAME), tag);
    }
    fs.rmSync(into, { recursive: true, force: true });
    syncDir(from);
    syncDir(this.dir);
    this.setEpoch(j.epoch!);
  }

  private endEpochRestore(j: RestoreJournal): void {
    if (j.dropFrom) fs.rmSync(this.epochDir(j.from!), { recursive: true, force: true });
    fs.rmSync(this.journal, { force: true });
    syncDir(this.dir);
  }

  /** The machine off: a snapshot of the overlay as it is. */
  async create(name: string): Promise<void> {
    await qemuImg(['snapshot', '-q', '--image-opts', '-c', name, OVERLAY_OPTS], this.dir);
  }

  async remove(name: string, dir = this.dir): Promise<void> {
    await qemuImg(['snapshot', '-q', '--image-opts', '-d', name, OVERLAY_OPTS], dir);
  }

  private async apply(name: string): Promise<void> {
    await qemuImg(['snapshot', '-q', '--image-opts', '-a', name, OVERLAY_OPTS], this.dir);
  }

  /** Bytes the overlay takes on the host's disk (what snapshots cost: their clusters are in it). */
  allocatedBytes(): number {
    try {
      return fs.statSync(this.overlay).blocks * 512;
    } catch {
      return 0;
    }
  }

  /**
   * The machine off: the overlay goes back to snapshot `name`, atomically (journal, pre-restore
   * snapshot; see the head of this file). `hook` runs between the steps (tests kill there).
   */
  async restore(name: string, hook?: (step: 'journal' | 'pre' | 'applied') => void): Promise<void> {
    const have = await this.allSnapshots();
    if (!have.some((s) => s.name === name))
      throw new DriverError('snapshot.not_found', `No snapshot named ${name}`);
    writeAtomic(this.journal, JSON.stringify({ target: name, at: new Date().toISOString() }));
    hook?.('journal');
    if (have.some((s) => s.name === PRE_RESTORE)) await this.remove(PRE_RESTORE);
    await this.create(PRE_RESTORE);
    hook?.('pre');
    try {
      await this.apply(name);
      hook?.('applied');
    } catch (err) {
      this.log?.('snapshot restore failed; the disk goes back as it was', { err: (err as Error).message });
      await this.apply(PRE_RESTORE);
      await this.remove(PRE_RESTORE).catch(() => {});
      fs.rmSync(this.journal, { force: true });
      throw new DriverError('snapshot.failed', `The restore failed: ${(err as Error).message}`);
    }
    await this.remove(PRE_RESTORE);
    fs.rmSync(this.journal, { force: true });
    syncDir(this.dir);
  }

  /** The journal a killed restore left, or null. */
  readJournal(): RestoreJournal | null {
    let text: string;
    try {
      text = fs.readFileSync(this.journal, 'utf8');
    } catch {
      return null;
    }
    try {
      return journalJson.parse(JSON.parse(text));
    } catch {
      // A journal is written by rename: an unreadable one is no journal of ours.
      return { target: '', at: '' };
    }
  }

  /**
   * At start, before the machine: finishes a restore a killed service left (see the head of this
   * file). Answers what it did, or null when there was nothing to do.
   */
  async recover(): Promise<'restored' | 'rolled-back' | 'dropped' | null> {
    const j = this.readJournal();
    fs.rmSync(`${this.journal}.tmp`, { force: true });
    if (!j) return null;
    // An older epoch's restore: its renames first (each only if not done), then as any restore.
    if (j.epoch !== undefined && j.from !== undefined && j.target) this.swapEpochs(j);
    if (!fs.existsSync(this.overlay)) {
      // No overlay to finish a restore on (a disk written afresh since): the journal is stale.
      fs.rmSync(this.journal, { force: true });
      return 'dropped';
    }
    // A qemu-img of the killed service may still run on the overlay: it holds the image's lock.
    const begun = Date.now();
    for (;;) {
      try {
        await qemuImg(['check', '-q', '-r', 'all', '-f', 'qcow2', OVERLAY_NAME], this.dir, [0, 3]);
        break;
      } catch (err) {
        if (!(err instanceof QemuImgError) || !err.locked || Date.now() - begun > LOCK_WAIT_MS) throw err;
        await sleep(500);
      }
    }
    const names = (await this.allSnapshots()).map((s) => s.name);
    let done: 'restored' | 'rolled-back' | 'dropped';
    if (j.target && names.includes(j.target)) {
      try {
        await this.apply(j.target);
        done = 'restored';
      } catch (err) {
        if (!names.includes(PRE_RESTORE)) throw err;
        await this.apply(PRE_RESTORE);
        done = 'rolled-back';
      }
    } else if (names.includes(PRE_RESTORE)) {
      await this.apply(PRE_RESTORE);
      done = 'rolled-back';
    } else done = 'dropped';
    if (names.includes(PRE_RESTORE)) await this.remove(PRE_RESTORE);
    if (j.epoch !== undefined && j.from !== undefined && done === 'restored') this.endEpochRestore(j);
    fs.rmSync(this.journal, { force: true });
    syncDir(this.dir);
    this.log?.('a restore the stopped service left was finished', { target: j.target, done });
    return done;
  }

  /**
   * Snapshot `name` as a raw disk image at `out` (the overlay's snapshot over its base). Reads
   * while a machine runs (force-share): a snapshot's clusters never change.
   */
  async exportRaw(name: string, out: string, dir = this.dir): Promise<void> {
    await qemuImg(
      ['convert', '-U', '-f', 'qcow2', '-l', `snapshot.name=${name}`, '-O', 'raw', OVERLAY_NAME, out],
      dir,
    );
  }

  /** Lease end: the overlay and all its snapshots go; a fresh overlay comes over the base. */
  async dropAll(): Promise<void> {
    fs.rmSync(this.overlay, { force: true });
    fs.rmSync(this.journal, { force: true });
    if (fs.existsSync(this.base)) await this.createOverlay(this.overlay, fs.statSync(this.base).size);
  }
}
