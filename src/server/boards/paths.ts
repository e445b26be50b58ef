// Board paths. A path given by a user names a file of the board, absolute from the board's root
// ("/home/user/a.txt"; a relative path is taken from the root too). Both drivers validate it here and
// decide containment on resolved path components, never on a string prefix: the root /x/board1 must
// not admit /x/board10.
import fs from 'node:fs';
import path from 'node:path';
import { DriverError } from './driver.ts';

export const MAX_PATH_BYTES = 4096;
export const MAX_NAME_BYTES = 255;
const MAX_SYMLINK_HOPS = 40;

/** Validates a board path and answers its components (`.` and empty ones dropped, `..` kept). */
export function splitBoardPath(p: string): string[] {
  if (typeof p !== 'string') throw new DriverError('path.invalid', 'Path must be a string');
  if (p.includes('\0')) throw new DriverError('path.invalid', 'Path contains a NUL byte');
  if (Buffer.byteLength(p) > MAX_PATH_BYTES) throw new DriverError('path.too_long', `Path is over ${MAX_PATH_BYTES} bytes`);
  const parts = p.split('/').filter((c) => c !== '' && c !== '.');
  for (const c of parts) {
    if (Buffer.byteLength(c) > MAX_NAME_BYTES) throw new DriverError('path.name_too_long', `A name is over ${MAX_NAME_BYTES} bytes`);
  }
  return parts;
}

/**
 * Lexical normalisation: `..` pops a component, and a `..` at the root is an escape attempt, refused.
 * Answers the components of the normalised board path.
 */
export function normaliseBoardPath(p: string): string[] {
  const out: string[] = [];
  for (const c of splitBoardPath(p)) {
    if (c === '..') {
      if (!out.length) throw new DriverError('path.outside_root', 'Path leaves the board root');
      out.pop();
    } else out.push(c);
  }
  return out;
}

export const boardPathOf = (components: readonly string[]) => `/${components.join('/')}`;

/** True when `candidate` is `root` or below it, compared component by component (both absolute). */
export function isWithin(root: string, candidate: string, sep: typeof path.posix | typeof path = path.posix): boolean {
  const r = root.split(sep.sep).filter(Boolean);
  const c = candidate.split(sep.sep).filter(Boolean);
  if (c.length < r.length) return false;
  for (let i = 0; i < r.length; i++) if (r[i] !== c[i]) return false;
  return true;
}

export interface Resolved {
  /** The host path inside the root. */
  hostPath: string;
  /** The same file as a board path. */
  boardPath: string;
  /** False when the final component does not exist (allowed only with `allowMissing`). */
  exists: boolean;
}

/**
 * Resolves a board path inside a host directory the way the board itself sees it: component by
 * component with lstat, symlinks followed with the board root as `/` (an absolute target is taken
 * from the board root, a `..` above the root is refused), so no path or planted symlink ever names a
 * host file outside `rootReal`. `rootReal` must already be a realpath.
 */
export async function resolveInRoot(
  rootReal: string,
  boardPath: string,
  opts: { followFinal?: boolean; allowMissing?: boolean } = {},
): Promise<Resolved> {
  const followFinal = opts.followFinal ?? true;
  // A `..` that climbs above the root as written is an escape attempt, whatever exists on the way.
  normaliseBoardPath(boardPath);
  const queue = splitBoardPath(boardPath);
  const stack: string[] = [];
  let hops = 0;
  let exists = true;
  while (queue.length) {
    const c = queue.shift() as string;
    if (c === '..') {
      if (!stack.length) throw new DriverError('path.outside_root', 'Path leaves the board root');
      stack.pop();
      continue;
    }
    const host = path.join(rootReal, ...stack, c);
    let st: fs.Stats;
    try {
      st = await fs.promises.lstat(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && !queue.length && opts.allowMissing) {
        stack.push(c);
        exists = false;
        break;
      }
      if (code === 'ENOENT') throw new DriverError('path.not_found', `No such file: ${boardPathOf([...stack, c])}`);
      if (code === 'ENOTDIR') throw new DriverError('path.not_a_directory', `Not a directory: ${boardPathOf(stack)}`);
      throw err;
    }
    if (st.isSymbolicLink() && (queue.length || followFinal)) {
      if (++hops > MAX_SYMLINK_HOPS) throw new DriverError('path.invalid', 'Too many levels of symbolic links');
      const target = await fs.promises.readlink(host);
      const parts = splitBoardPath(target);
      if (target.startsWith('/')) stack.length = 0;
      queue.unshift(...parts);
      continue;
    }
    if (queue.length && !st.isDirectory()) {
      throw new DriverError('path.not_a_directory', `Not a directory: ${boardPathOf([...stack, c])}`);
    }
    stack.push(c);
  }
  const hostPath = path.join(rootReal, ...stack);
  if (!isWithin(rootReal, hostPath)) throw new DriverError('path.outside_root', 'Path leaves the board root');
  return { hostPath, boardPath: boardPathOf(stack), exists };
}

/**
 * After opening a file, confirms through /proc/self/fd that the open file really is inside the root:
 * closes the race where a board process swaps a directory for a symlink between resolve and open.
 */
export async function assertFdWithin(rootReal: string, fd: number): Promise<void> {
  const actual = await fs.promises.readlink(`/proc/self/fd/${fd}`);
  if (!isWithin(rootReal, actual)) throw new DriverError('path.outside_root', 'Path leaves the board root');
}
