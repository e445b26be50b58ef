// Host-side work on a tree that a board or an image controls (a freshly unpacked image, a board's
// root while the board is down), done by descriptor walks that never leave the tree: each step opens
// one name relative to the directory already open, with O_NOFOLLOW, through that directory's
// /proc/self/fd link (the kernel resolves the link to the open directory itself, not to a path, so the
// only name resolved is the last one: this is openat(dirfd, name, O_NOFOLLOW), which Node lacks). A
// symbolic link anywhere on the way is refused, never followed; `..` and `/` never appear in a name.
// What the walk changes (mkdir, chmod, chown, write) is done on the descriptor or on a name inside
// the open directory, so a link the tree holds can never make host root touch a host file.
import fs from 'node:fs';
import { DriverError } from '../driver.ts';

// libuv opens every descriptor close-on-exec already.
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = fs.constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** The name `name` inside the open directory `fd`, as a path the kernel resolves relative to `fd`. */
export const at = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;

/** An entry of a tree that is a link or not what it must be: refused, with the board path named. */
export class UnsafeEntry extends DriverError {
  constructor(
    readonly boardPath: string,
    why: string,
  ) {
    super('path.unsafe', `${boardPath} ${why}`);
  }
}

function checkName(name: string): void {
  if (!name || name === '.' || name === '..' || name.includes('/') || name.includes('\0'))
    throw new DriverError('path.invalid', `Bad path component ${JSON.stringify(name)}`);
}

const components = (rel: string) => rel.split('/').filter((c) => c !== '' && c !== '.');

/** Opens the tree's top directory itself (not followed if it is a link). */
export function openRoot(root: string): number {
  try {
    return fs.openSync(root, DIR_FLAGS);
  } catch (err) {
    throw new DriverError('driver.failed', `Cannot open the board's tree: ${(err as Error).message}`);
  }
}

/** Opens a directory `name` inside `dirFd` without following a link; throws UnsafeEntry for a non-directory. */
function openChild(dirFd: number, name: string, shown: string): number {
  checkName(name);
  try {
    return fs.openSync(at(dirFd, name), DIR_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new UnsafeEntry(shown, 'is a symbolic link');
    if (code === 'ENOTDIR') throw new UnsafeEntry(shown, 'is not a directory');
    throw err;
  }
}

/**
 * Opens the directory `rel` (components below `rootFd`), every component a real directory; with
 * `create`, missing ones are made with exactly `mode`. Answers the directory's descriptor (the
 * caller closes it).
 */
export function openDirIn(
  rootFd: number,
  rel: string,
  opts: { create?: boolean; mode?: number } = {},
): number {
  // A second descriptor of the root (the magic link is followed to the open directory itself).
  let fd = fs.openSync(`/proc/self/fd/${rootFd}`, O_RDONLY | O_DIRECTORY);
  let shown = '';
  try {
    for (const c of components(rel)) {
      shown += `/${c}`;
      let next: number;
      try {
        next = openChild(fd, c, shown);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !opts.create) throw err;
        // mkdir never follows a link at its last component: a link planted there fails with EEXIST.
        try {
          fs.mkdirSync(at(fd, c), opts.mode ?? 0o755);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        }
        next = openChild(fd, c, shown);
        fs.fchmodSync(next, opts.mode ?? 0o755);
      }
      fs.closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/** Runs `fn` with the directory `rel` of the tree at `root` open, closing it after. */
export function withDir<T>(
  root: string,
  rel: string,
  fn: (fd: number) => T,
  opts?: { create?: boolean; mode?: number },
): T {
  const rootFd = openRoot(root);
  try {
    const fd = openDirIn(rootFd, rel, opts);
    try {
      return fn(fd);
    } finally {
      fs.closeSync(fd);
    }
  } finally {
    fs.closeSync(rootFd);
  }
}

/**
 * lstat of `rel` inside the tree: every directory on the way a real one (a link on the way is an
 * UnsafeEntry); the last component is not followed. Null when something on the way is missing.
 */
export function lstatIn(root: string, rel: string): fs.Stats | null {
  const comps = components(rel);
  if (!comps.length) return fs.lstatSync(root);
  const last = comps.pop() as string;
  checkName(last);
  try {
    return withDir(
      root,
      comps.join('/'),
      (fd) => fs.lstatSync(at(fd, last), { throwIfNoEntry: false }) ?? null,
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** The target text of the link `rel` inside the tree (the directories on the way real ones). */
export function readlinkIn(root: string, rel: string): string {
  const comps = components(rel);
  const last = comps.pop() as string;
  checkName(last);
  return withDir(root, comps.join('/'), (fd) => fs.readlinkSync(at(fd, last)));
}

/** Opens the regular file `rel` inside the tree for reading (a link anywhere refused); the caller closes it. */
export function openFileIn(root: string, rel: string): number {
  const comps = components(rel);
  const last = comps.pop() as string;
  checkName(last);
  return withDir(root, comps.join('/'), (dir) => {
    let fd: number;
    try {
      fd = fs.openSync(at(dir, last), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOOP')
        throw new UnsafeEntry(`/${rel}`, 'is a symbolic link');
      throw err;
    }
    if (!fs.fstatSync(fd).isFile()) {
      fs.closeSync(fd);
      throw new UnsafeEntry(`/${rel}`, 'is not a regular file');
    }
    return fd;
  });
}

/** mkdir -p of `rel` inside the tree, every directory it makes with exactly `mode`; a link on the way is refused. */
export function mkdirIn(root: string, rel: string, mode = 0o755): void {
  withDir(root, rel, () => {}, { create: true, mode });
}

/** chmod of the directory `rel` (a real directory, reached through real directories). */
export function chmodDirIn(root: string, rel: string, mode: number): void {
  withDir(root, rel, (fd) => fs.fchmodSync(fd, mode));
}

/**
 * Writes `data` as the file `rel` of the tree with exactly `mode`, replacing what was there
 * atomically (a temporary name in the same directory, then rename; rename replaces a link itself,
 * never what it points to).
 */
export function writeFileIn(root: string, rel: string, data: string | Buffer, mode = 0o644): void {
  const comps = components(rel);
  const last = comps.pop() as string;
  checkName(last);
  withDir(root, comps.join('/'), (dir) => {
    const tmp = `.${last}.bianbu-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
    const fd = fs.openSync(at(dir, tmp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    try {
      fs.writeFileSync(fd, data);
      fs.fchmodSync(fd, mode);
    } catch (err) {
      fs.closeSync(fd);
      fs.rmSync(at(dir, tmp), { force: true });
      throw err;
    }
    fs.closeSync(fd);
    fs.renameSync(at(dir, tmp), at(dir, last));
  });
}

/**
 * Calls `visit` for every entry of the tree below `root` (the root itself first), depth first,
 * without following links and without leaving the root's file system. `visit` gets the entry's lstat
 * and, for a directory, its open descriptor; for others, the directory's descriptor and the name.
 */
export function walkTree(
  root: string,
  visit: (e: { st: fs.Stats; fd: number | null; parentFd: number | null; name: string }) => void,
): void {
  const rootFd = openRoot(root);
  const dev = fs.fstatSync(rootFd).dev;
  const walkDir = (fd: number) => {
    for (const name of fs.readdirSync(`/proc/self/fd/${fd}`)) {
      const st = fs.lstatSync(at(fd, name), { throwIfNoEntry: false });
      if (!st || st.dev !== dev) continue;
      if (st.isDirectory()) {
        let child: number;
        try {
          child = fs.openSync(at(fd, name), DIR_FLAGS);
        } catch {
          continue; // replaced since the lstat: nothing to do with it
        }
        try {
          const now = fs.fstatSync(child);
          if (now.ino !== st.ino || now.dev !== dev) continue;
          visit({ st: now, fd: child, parentFd: fd, name });
          walkDir(child);
        } finally {
          fs.closeSync(child);
        }
      } else {
        visit({ st, fd: null, parentFd: fd, name });
      }
    }
  };
  try {
    visit({ st: fs.fstatSync(rootFd), fd: rootFd, parentFd: null, name: '' });
    walkDir(rootFd);
  } finally {
    fs.closeSync(rootFd);
  }
}

/** Opens a regular file found by walkTree for a metadata change (never a link: O_NOFOLLOW). */
export function openEntry(parentFd: number, name: string, ino: number): number | null {
  let fd: number;
  try {
    fd = fs.openSync(at(parentFd, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch {
    return null;
  }
  if (fs.fstatSync(fd).ino !== ino) {
    fs.closeSync(fd);
    return null;
  }
  return fd;
}
