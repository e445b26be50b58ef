// The disk of a local board: an ext4 file system in a sparse image file the size of the board's
// declared quota (`<boardDir>/disk.img`, in the service's private data directory), mounted on a loop
// device, nosuid and nodev, at `<runDir>/<slot>/root` — outside the data directory, because the
// sandbox launcher runs as the board's own uid and must reach its root by path (bubblewrap resolves
// bind sources by path); `<runDir>/<slot>` belongs to that uid alone. The quota is then the file system's size: a board that fills it gets ENOSPC from the kernel,
// and the host disk grows by at most the quota. Lifecycle: `attach()` creates the image on first use
// (the default root written into it before any board process can see it) and mounts it; `detach()`
// unmounts it after the sandbox stopped; `replace()` builds a new image beside the old one (flash,
// restore) and swaps the two files while the board is down. Where loop devices are not available the
// root is a plain directory and disk use is measured instead (the start log says so).
//
// Nothing already mounted is trusted: `attach()` first removes what a service killed during
// `replace()` left in the board's directory (`root.new-*` mount points, still mounted, and their
// `disk.new-*.img` images; `root.old-*` trees), and a mount found at the board's mount point is kept
// only when it is this board's image (the loop device's backing file is `disk.img`, by device and
// inode) or, without loop devices, a bind of this board's tree; anything else is unmounted first.
// The loop device reads and writes its image with direct I/O where the kernel allows, so the board's
// data is cached once (in the board's own page cache), not a second time as the image's pages.
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { DriverError } from '../driver.ts';

const run = promisify(execFile);

const TOOL_TIMEOUT_MS = 120_000;

async function tool(file: string, args: string[]): Promise<void> {
  try {
    await run(file, args, {
      timeout: TOOL_TIMEOUT_MS,
      killSignal: 'SIGKILL',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new DriverError(
      'driver.failed',
      `${file} ${args[0] ?? ''}: ${(e.stderr || e.message).trim().slice(-300)}`,
    );
  }
}

const octal = (v: string) =>
  v.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
export const unOctal = (v: string) =>
  v.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));

interface MountEntry {
  /** st_dev of the mounted file system, `major:minor`. */
  majMin: string;
  fstype: string;
  source: string;
}

/** The mounts at `dir` (its realpath) in this process's mountinfo, the topmost (visible) last. */
function mountsAt(dir: string): MountEntry[] {
  let real: string;
  try {
    real = fs.realpathSync(dir);
  } catch {
    return [];
  }
  const escaped = octal(real);
  let text: string;
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f[4] !== escaped) continue;
    // After the optional fields: "-", the file system type, the source.
    const dash = f.indexOf('-', 6);
    out.push({ majMin: f[2], fstype: f[dash + 1] ?? '', source: unOctal(f[dash + 2] ?? '') });
  }
  return out;
}

/** Whether `dir` is a mount point (its realpath appears in this process's mountinfo). */
export function isMountPoint(dir: string): boolean {
  return mountsAt(dir).length > 0;
}

/** `major:minor` of a device number as Linux encodes it. */
function majMinOf(dev: number): string {
  const d = BigInt(dev);
  const major = ((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn);
  const minor = (d & 0xffn) | ((d >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}

async function output(file: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(file, args, {
      timeout: TOOL_TIMEOUT_MS,
      killSignal: 'SIGKILL',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
    return stdout;
  } catch {
    return '';
  }
}

/** Names a service killed during `replace()` leaves in a board's directory. */
const LEFTOVER = /^(?:root\.new-[0-9a-f]{8}|root\.old-[0-9a-f]{8}|disk\.new-[0-9a-f]{8}\.img)$/;

export interface DiskInit {
  boardDir: string;
  /** Where the board's root is mounted for its sandbox (`<runDir>/<slot>/root`). */
  mountAt: string;
  sizeMb: number;
  /** Host uid/gid of root inside the board (owner of the file system's root directory). */
  ownerBase: number;
  loop: boolean;
}

export class BoardDisk {
  /** The board's root as its sandbox binds it. */
  readonly root: string;
  private readonly image: string;
  /** Without loop devices: the plain directory that holds the board's files, bound at `root`. */
  private readonly tree: string;

  constructor(private readonly init: DiskInit) {
    this.root = init.mountAt;
    this.image = path.join(init.boardDir, 'disk.img');
    this.tree = path.join(init.boardDir, 'root');
  }

  /** True when the quota is the file system's size (a loop image), false for a plain directory. */
  get enforced(): boolean {
    return this.init.loop;
  }

  private async makeImage(file: string): Promise<void> {
    const fh = await fs.promises.open(file, 'wx', 0o600);
    try {
      await fh.truncate(this.init.sizeMb * 1024 * 1024);
    } finally {
      await fh.close();
    }
    // -m 0: no blocks reserved for root (the board's root is not the host's); root_owner gives the
    // file system's root directory to the board's root.
    const owner = `${this.init.ownerBase}:${this.init.ownerBase}`;
    await tool('mkfs.ext4', [
      '-q',
      '-F',
      '-m',
      '0',
      '-E',
      `root_owner=${owner},lazy_itable_init=1,lazy_journal_init=1`,
      file,
    ]);
  }

  /**
   * Mounts `file` (an image, or without loop devices a tree) at `at`. A mount already there is kept
   * only when it is `file` itself; anything else is unmounted first.
   */
  private async mount(file: string, at: string): Promise<void> {
    await fs.promises.mkdir(at, { recursive: true, mode: 0o755 });
    if (isMountPoint(at)) {
      if (await this.mountedFrom(file, at)) return;
      await this.unmount(at);
    }
    if (this.init.loop) {
      await tool('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', file, at]);
      // Direct I/O: the image's pages are not cached a second time by the host. Kernels or file
      // systems that refuse it keep the loop device buffered; the board works the same.
      const dev = mountsAt(at).at(-1)?.source;
      if (dev?.startsWith('/dev/loop')) await tool('losetup', ['--direct-io=on', dev]).catch(() => {});
    } else {
      await tool('mount', ['--bind', file, at]);
      await tool('mount', ['-o', 'remount,bind,nosuid,nodev', at]);
    }
  }

  /** Whether the visible mount at `at` is `file`: its loop device's backing file, or a bind of it. */
  private async mountedFrom(file: string, at: string): Promise<boolean> {
    const top = mountsAt(at).at(-1);
    if (!top) return false;
    let want: fs.Stats;
    try {
      want = await fs.promises.lstat(file);
    } catch {
      return false;
    }
    if (!this.init.loop) {
      // A bind of the tree shows the tree's own directory at the mount point.
      const seen = await fs.promises.lstat(at).catch(() => null);
      return !!seen && seen.dev === want.dev && seen.ino === want.ino && want.isDirectory();
    }
    if (top.fstype !== 'ext4' || !/^\/dev\/loop\d+$/.test(top.source)) return false;
    // The loop device must be the one mounted (its number is the file system's st_dev) and back onto
    // this very file (device and inode, whole: no offset, no size limit).
    const dev = await fs.promises.stat(top.source).catch(() => null);
    if (!dev || majMinOf(dev.rdev) !== top.majMin) return false;
    const line = (
      await output('losetup', ['-n', '--raw', '-O', 'BACK-MAJ:MIN,BACK-INO,OFFSET,SIZELIMIT', top.source])
    ).trim();
    const [backMajMin, backIno, offset, sizeLimit] = line.split(/\s+/);
    return (
      backMajMin === majMinOf(want.dev) &&
      backIno === String(want.ino) &&
      Number(offset) === 0 &&
      Number(sizeLimit) === 0
    );
  }

  /**
   * Removes what a `replace()` cut short by a crash left in the board's directory: fresh roots still
   * mounted (unmounted first), their images, old trees. Entries are looked at without following
   * links: a link is removed as a link; a directory that stays mounted is left for the next attach.
   */
  private async sweepLeftovers(): Promise<string[]> {
    const removed: string[] = [];
    let names: string[];
    try {
      names = await fs.promises.readdir(this.init.boardDir);
    } catch {
      return removed;
    }
    // Mount points first: an image is only worth removing once nothing has it mounted.
    const order = (n: string) => (n.startsWith('root.') ? 0 : 1);
    for (const name of names.filter((n) => LEFTOVER.test(n)).sort((a, b) => order(a) - order(b))) {
      const p = path.join(this.init.boardDir, name);
      const st = await fs.promises.lstat(p).catch(() => null);
      if (!st) continue;
      if (st.isDirectory()) {
        await this.unmount(p).catch(() => {});
        if (isMountPoint(p)) continue;
        await discardTree(p);
      } else {
        await fs.promises.unlink(p).catch(() => {});
      }
      if (!fs.existsSync(p)) removed.push(name);
    }
    return removed;
  }

  private async unmount(at: string): Promise<void> {
    for (let i = 0; isMountPoint(at); i++) {
      try {
        await tool('umount', [at]);
      } catch (err) {
        if (i >= 20) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /**
   * Makes the root available at `root`. `populate` writes a fresh default tree into a new, empty
   * root (before any board process exists) and is called only when there was no root yet.
   */
  async attach(populate: (dir: string) => Promise<void>): Promise<string[]> {
    const swept = await this.sweepLeftovers();
    await this.attachRoot(populate);
    return swept;
  }

  private async attachRoot(populate: (dir: string) => Promise<void>): Promise<void> {
    if (!this.init.loop) {
      if (!fs.existsSync(this.tree)) await this.fresh(this.tree, populate);
      await this.mount(this.tree, this.root);
      return;
    }
    if (!fs.existsSync(this.image)) {
      await this.unmount(this.root);
      await this.build(this.image, this.root, populate);
      return;
    }
    await this.mount(this.image, this.root);
  }

  async detach(): Promise<void> {
    await this.unmount(this.root);
  }

  /** Free and total bytes of the board's file system (statfs of its mount point). */
  async usage(): Promise<{ used: number; total: number } | null> {
    if (!this.init.loop) return null;
    // Mounted when the root is on another device than its parent: two stats, where reading the host's
    // mount table for every board at every sample grew with the number of boards (and held the loop).
    const [root, parent] = await Promise.all([
      fs.promises.stat(this.root).catch(() => null),
      fs.promises.stat(path.dirname(this.root)).catch(() => null),
    ]);
    if (!root || !parent || root.dev === parent.dev) return null;
    const s = await fs.promises.statfs(this.root);
    return { used: (s.blocks - s.bfree) * s.bsize, total: s.blocks * s.bsize };
  }

  private async fresh(dir: string, populate: (dir: string) => Promise<void>): Promise<void> {
    await fs.promises.mkdir(dir, { mode: 0o755 });
    await populate(dir);
  }

  private async build(image: string, at: string, populate: (dir: string) => Promise<void>): Promise<void> {
    await this.makeImage(image);
    try {
      await this.mount(image, at);
      await populate(at);
    } catch (err) {
      await this.unmount(at).catch(() => {});
      await fs.promises.rm(image, { force: true });
      throw err;
    }
  }

  /**
   * Builds a new root with `populate` (it runs while the board still runs on the old one), then
   * `swap` is called to stop the board; the new root takes the old one's place and the old one is
   * discarded without ever being walked by the host.
   */
  async replace(populate: (dir: string) => Promise<void>, stopBoard: () => Promise<void>): Promise<void> {
    const tag = crypto.randomBytes(4).toString('hex');
    const freshRoot = path.join(this.init.boardDir, `root.new-${tag}`);
    if (!this.init.loop) {
      try {
        await this.fresh(freshRoot, populate);
      } catch (err) {
        await discardTree(freshRoot);
        throw err;
      }
      await stopBoard();
      await this.unmount(this.root);
      const old = path.join(this.init.boardDir, `root.old-${tag}`);
      await fs.promises.rename(this.tree, old);
      await fs.promises.rename(freshRoot, this.tree);
      await this.mount(this.tree, this.root);
      void discardTree(old);
      return;
    }
    const freshImage = path.join(this.init.boardDir, `disk.new-${tag}.img`);
    await this.build(freshImage, freshRoot, populate);
    await this.unmount(freshRoot);
    await fs.promises.rmdir(freshRoot).catch(() => {});
    await stopBoard();
    await this.unmount(this.root);
    await fs.promises.rename(freshImage, this.image);
    await this.mount(this.image, this.root);
  }
}

/** Removes a root no board process can reach any more (its sandbox is gone); links are not followed. */
async function discardTree(dir: string): Promise<void> {
  await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => {});
}
