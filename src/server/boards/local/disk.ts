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
    await run(file, args, { timeout: TOOL_TIMEOUT_MS, killSignal: 'SIGKILL', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new DriverError('driver.failed', `${file} ${args[0] ?? ''}: ${(e.stderr || e.message).trim().slice(-300)}`);
  }
}

/** Whether `dir` is a mount point (its realpath appears in this process's mountinfo). */
export function isMountPoint(dir: string): boolean {
  let real: string;
  try {
    real = fs.realpathSync(dir);
  } catch {
    return false;
  }
  const escaped = real.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  try {
    return fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .some((l) => l.split(' ')[4] === escaped);
  } catch {
    return false;
  }
}

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
    await tool('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', `root_owner=${owner},lazy_itable_init=1,lazy_journal_init=1`, file]);
  }

  private async mount(file: string, at: string): Promise<void> {
    await fs.promises.mkdir(at, { recursive: true, mode: 0o755 });
    if (isMountPoint(at)) return;
    if (this.init.loop) await tool('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', file, at]);
    else {
      await tool('mount', ['--bind', file, at]);
      await tool('mount', ['-o', 'remount,bind,nosuid,nodev', at]);
    }
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
  async attach(populate: (dir: string) => Promise<void>): Promise<void> {
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
    if (!this.init.loop || !isMountPoint(this.root)) return null;
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
