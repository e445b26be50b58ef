// A local board's disk (BoardDisk): what it finds already mounted is not trusted, and what a service
// killed during replace() left behind is cleaned up at the next attach. Real ext4 images on real loop
// devices; needs root, like the isolated boards themselves (no skipping: a host that cannot fails).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BoardDisk, isMountPoint } from '#server/boards/local/disk.ts';
import { LocalDriver } from '#server/boards/local/local-driver.ts';
import { localDriverOptions } from '#shared/boards.ts';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-disk-'));
const mounted: string[] = [];

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' }).trim();
/** Loop devices backed by `file` (`losetup -j`). */
const loopsOf = (file: string) => sh('losetup', ['-j', file]).split('\n').filter(Boolean);
/** The mount source at `dir`, topmost. */
const sourceAt = (dir: string) =>
  sh('findmnt', ['-n', '-o', 'SOURCE', '--mountpoint', dir]).split('\n').at(-1);

/** An ext4 image that is not the board's, with one file in it. */
function foreignImage(name: string, marker: string): string {
  const img = path.join(work, `${name}.img`);
  fs.writeFileSync(img, '');
  fs.truncateSync(img, 32 * 1024 * 1024);
  sh('mkfs.ext4', ['-q', '-F', img]);
  const at = path.join(work, `${name}.mnt`);
  fs.mkdirSync(at);
  sh('mount', ['-o', 'loop', img, at]);
  fs.writeFileSync(path.join(at, 'marker'), marker);
  sh('umount', [at]);
  fs.rmdirSync(at);
  return img;
}

function makeDisk(name: string, loop = true) {
  const boardDir = path.join(work, name, 'board');
  const mountAt = path.join(work, name, 'run', 'root');
  fs.mkdirSync(boardDir, { recursive: true, mode: 0o700 });
  const disk = new BoardDisk({ boardDir, mountAt, sizeMb: 32, ownerBase: 0, loop });
  mounted.push(mountAt);
  const populate = async (dir: string) => {
    fs.writeFileSync(path.join(dir, 'marker'), `board ${name}`);
  };
  return { disk, boardDir, mountAt, populate };
}

afterEach(() => {
  for (const at of mounted.splice(0)) {
    while (isMountPoint(at)) execFileSync('umount', ['-l', at]);
  }
});
afterAll(() => {
  fs.rmSync(work, { recursive: true, force: true });
});

describe('a board disk trusts no mount it did not verify', () => {
  it('keeps its own image mounted, and remounts when another image sits at its mount point', async () => {
    const { disk, boardDir, mountAt, populate } = makeDisk('other-image');
    await disk.attach(populate);
    const image = path.join(boardDir, 'disk.img');
    const own = sourceAt(mountAt);
    expect(loopsOf(image)).toHaveLength(1);
    // Attached again while mounted: the same loop device, nothing new.
    await disk.attach(populate);
    expect(sourceAt(mountAt)).toBe(own);
    expect(loopsOf(image)).toHaveLength(1);

    await disk.detach();
    // Something else is mounted where the board's root belongs: another ext4 image.
    const other = foreignImage('stranger', 'not this board');
    execFileSync('mount', ['-o', 'loop', other, mountAt]);
    expect(fs.readFileSync(path.join(mountAt, 'marker'), 'utf8')).toBe('not this board');
    await disk.attach(populate);
    expect(fs.readFileSync(path.join(mountAt, 'marker'), 'utf8')).toBe('board other-image');
    expect(loopsOf(image)).toHaveLength(1);
    expect(loopsOf(other)).toHaveLength(0);
    // Exactly one mount there: the stranger is gone, not hidden underneath.
    expect(sh('findmnt', ['-n', '-o', 'SOURCE', '--mountpoint', mountAt]).split('\n')).toHaveLength(1);
  });

  it('remounts when its own image file was replaced under a live mount (a stale loop device)', async () => {
    const { disk, boardDir, mountAt, populate } = makeDisk('stale');
    await disk.attach(populate);
    await disk.detach();
    // The mount is of an older image that has since been renamed away (as a crashed swap leaves it).
    const image = path.join(boardDir, 'disk.img');
    const old = path.join(boardDir, 'disk.prev.img');
    fs.copyFileSync(image, old);
    execFileSync('mount', ['-o', 'loop', old, mountAt]);
    fs.writeFileSync(path.join(mountAt, 'marker'), 'the old image');
    fs.rmSync(old);
    await disk.attach(populate);
    expect(fs.readFileSync(path.join(mountAt, 'marker'), 'utf8')).toBe('board stale');
    expect(loopsOf(image)).toHaveLength(1);
  });

  it('without loop devices: remounts when its mount point binds another folder', async () => {
    const { disk, mountAt, populate } = makeDisk('bind', false);
    await disk.attach(populate);
    await disk.detach();
    const elsewhere = path.join(work, 'elsewhere');
    fs.mkdirSync(elsewhere);
    fs.writeFileSync(path.join(elsewhere, 'marker'), 'a host folder');
    execFileSync('mount', ['--bind', elsewhere, mountAt]);
    await disk.attach(populate);
    expect(fs.readFileSync(path.join(mountAt, 'marker'), 'utf8')).toBe('board bind');
    expect(fs.readFileSync(path.join(elsewhere, 'marker'), 'utf8')).toBe('a host folder');
  });

  it('a local board started on a mount point holding another image boots on its own disk', async () => {
    const board = new LocalDriver({
      boardId: 'disk-remount',
      name: 'disk-remount',
      model: 'Test Board',
      options: localDriverOptions.parse({ memoryMb: 256, diskQuotaMb: 64, maxProcesses: 128 }),
      boardDir: path.join(work, 'data', 'boards', 'disk-remount'),
      pluginsDir: path.join(work, 'plugins'),
      sandboxed: true,
    });
    try {
      await board.start();
      await board.files.write('/root/mine.txt', 'mine');
      await board.stop();
      const stranger = foreignImage('board-stranger', 'not this board');
      execFileSync('mount', ['-o', 'loop', stranger, board.rootPath]);
      mounted.push(board.rootPath);
      await board.start();
      expect((await board.files.read('/root/mine.txt')).toString()).toBe('mine');
      expect(loopsOf(stranger)).toHaveLength(0);
    } finally {
      await board.stop();
    }
  }, 60_000);
});

describe('a board disk cleans up after a replace() cut short', () => {
  it('unmounts and removes the fresh roots and images a killed service left, following no link', async () => {
    const { disk, boardDir, mountAt, populate } = makeDisk('crash');
    await disk.attach(populate);
    // replace() stopped for good while it populated the new image (as a killed service would):
    // disk.new-*.img is mounted at root.new-*.
    let started!: () => void;
    const populating = new Promise<void>((r) => {
      started = r;
    });
    void disk.replace(
      async () => {
        started();
        await new Promise(() => {});
      },
      async () => {},
    );
    await populating;
    const leftRoot = fs.readdirSync(boardDir).find((n) => n.startsWith('root.new-')) as string;
    const leftImage = fs.readdirSync(boardDir).find((n) => n.startsWith('disk.new-')) as string;
    expect(leftRoot).toBeDefined();
    expect(leftImage).toBeDefined();
    expect(isMountPoint(path.join(boardDir, leftRoot))).toBe(true);
    mounted.push(path.join(boardDir, leftRoot));
    // An image that was built but never mounted, an old tree of a plain-directory swap, and a link
    // with a leftover's name that points at a host folder.
    fs.writeFileSync(path.join(boardDir, 'disk.new-0123abcd.img'), 'half an image');
    fs.mkdirSync(path.join(boardDir, 'root.old-89abcdef', 'etc'), { recursive: true });
    const hostDir = path.join(work, 'host-folder');
    fs.mkdirSync(hostDir);
    fs.writeFileSync(path.join(hostDir, 'keep'), 'host file');
    fs.symlinkSync(hostDir, path.join(boardDir, 'root.new-feedf00d'));
    // Not leftovers: kept.
    fs.writeFileSync(path.join(boardDir, 'uploads.journal'), '');
    fs.writeFileSync(path.join(boardDir, 'root.new-notours'), 'x');

    await disk.detach();
    // The next service start attaches the board again.
    const next = new BoardDisk({ boardDir, mountAt, sizeMb: 32, ownerBase: 0, loop: true });
    const swept = await next.attach(populate);
    expect(swept.sort()).toEqual(
      [leftRoot, leftImage, 'disk.new-0123abcd.img', 'root.old-89abcdef', 'root.new-feedf00d'].sort(),
    );
    expect(fs.readdirSync(boardDir).sort()).toEqual(['disk.img', 'root.new-notours', 'uploads.journal']);
    expect(isMountPoint(path.join(boardDir, leftRoot))).toBe(false);
    expect(sh('losetup', ['-a'])).not.toContain(leftImage);
    expect(fs.readFileSync(path.join(hostDir, 'keep'), 'utf8')).toBe('host file');
    expect(fs.readFileSync(path.join(mountAt, 'marker'), 'utf8')).toBe('board crash');
  });
});
