// SFTP failures as the drivers' DriverError keys. The status code says enough for a few of them;
// OpenSSH's sftp-server says little beyond it: ENOENT, ENOTDIR and ELOOP all answer NO_SUCH_FILE, and
// EEXIST, ENOTEMPTY, EISDIR and ENOSPC all answer FAILURE with the text "Failure" (checked against
// OpenSSH 9.2). Where the key matters, the mapper looks at the tree (a walk of the path's components)
// or at the free space after the failure to tell them apart, so the keys match the host-side
// implementation (local/files.ts). Those looks happen only on the failure path.
import path from 'node:path';
import type { SFTPWrapper, Stats } from 'ssh2';
import { DriverError, type FileEntry } from '../driver.ts';
import { isWithin } from '../paths.ts';

export const S_IFMT = 0o170000;
export const S_IFDIR = 0o040000;
export const S_IFREG = 0o100000;
export const S_IFLNK = 0o120000;
export const S_IFIFO = 0o010000;
export const S_IFSOCK = 0o140000;
const MAX_SYMLINK_HOPS = 40;
/** Below this much room a failed write is taken for a full disk. */
const FULL_BELOW_BYTES = 1024 * 1024;

/** SFTP status codes (draft-ietf-secsh-filexfer-02, the version OpenSSH speaks). */
export const FX = {
  EOF: 1,
  NO_SUCH_FILE: 2,
  PERMISSION_DENIED: 3,
  FAILURE: 4,
  BAD_MESSAGE: 5,
  NO_CONNECTION: 6,
  CONNECTION_LOST: 7,
  OP_UNSUPPORTED: 8,
} as const;

export const isType = (mode: number, t: number) => (mode & S_IFMT) === t;

export function typeOf(mode: number): FileEntry['type'] {
  return isType(mode, S_IFDIR)
    ? 'dir'
    : isType(mode, S_IFREG)
      ? 'file'
      : isType(mode, S_IFLNK)
        ? 'symlink'
        : 'other';
}

export function sftpCall<T>(fn: (cb: (err: Error | null | undefined, v: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}
export const done = (cb: (err: Error | null | undefined, v: undefined) => void) => (err?: Error | null) =>
  cb(err, undefined);

export const statusOf = (err: unknown) => (err as { code?: unknown }).code;

/** Texts of errno values, as servers other than OpenSSH's put them in a FAILURE's message. */
const BY_MESSAGE: Array<[RegExp, (p: string) => DriverError]> = [
  [/no space|quota/i, (p) => new DriverError('path.no_space', `No space left: ${p}`)],
  [/exists|not empty/i, (p) => new DriverError('path.exists', `Already exists or not empty: ${p}`)],
  [/not a directory/i, (p) => new DriverError('path.not_a_directory', `Not a directory: ${p}`)],
  [/is a directory/i, (p) => new DriverError('path.is_a_directory', `Is a directory: ${p}`)],
  [/symbolic links/i, (p) => new DriverError('path.invalid', `Too many symbolic links: ${p}`)],
  [/name too long/i, (p) => new DriverError('path.name_too_long', `Name too long: ${p}`)],
  [/read-only/i, (p) => new DriverError('path.denied', `Not permitted: ${p}`)],
];

/** An SFTP failure as a DriverError, from its status code (and its text where the code is generic). */
export function sftpError(err: unknown, p: string): DriverError {
  if (err instanceof DriverError) return err;
  const code = statusOf(err);
  const message = String((err as Error)?.message ?? err);
  if (code === FX.NO_SUCH_FILE) return new DriverError('path.not_found', `No such file: ${p}`);
  if (code === FX.PERMISSION_DENIED) return new DriverError('path.denied', `Not permitted: ${p}`);
  if (code === FX.FAILURE || code === FX.BAD_MESSAGE) {
    for (const [re, make] of BY_MESSAGE) if (re.test(message)) return make(p);
  }
  return new DriverError('driver.failed', `${message} (${p})`);
}

/** The SFTP session failed (no status answer): the call may be retried on a new session. */
export const sessionLost = (err: unknown) =>
  typeof statusOf(err) !== 'number' && !(err instanceof DriverError);

export const lstatOrNull = (sftp: SFTPWrapper, p: string) =>
  sftpCall<Stats>((cb) => sftp.lstat(p, cb)).catch(() => null);
export const statOrNull = (sftp: SFTPWrapper, p: string) =>
  sftpCall<Stats>((cb) => sftp.stat(p, cb)).catch(() => null);

export interface Located {
  /** The path as the server names it (under the root). */
  real: string;
  /** The same path as a board path, for messages. */
  board: string;
}

/** The failure mappers of one board root; `root` answers the server's realpath of it. */
export function sftpErrors(root: (sftp: SFTPWrapper) => Promise<string>) {
  /**
   * Why `server` (a path under the root) was "no such file": ENOENT, ENOTDIR or ELOOP look the same
   * from OpenSSH's sftp-server. Walks the components under the root, as the kernel did.
   */
  const whyMissing = async (
    sftp: SFTPWrapper,
    rootReal: string,
    server: string,
    board: string,
    wantDir: boolean,
  ): Promise<DriverError> => {
    const notFound = new DriverError('path.not_found', `No such file: ${board}`);
    if (!isWithin(rootReal, server)) return notFound;
    const comps = path.posix.relative(rootReal, server).split('/').filter(Boolean);
    let cur = rootReal;
    for (let i = 0; i < comps.length; i++) {
      cur = path.posix.join(cur, comps[i]);
      const l = await lstatOrNull(sftp, cur);
      if (!l) return notFound;
      let st: Stats | null = l;
      if (isType(l.mode, S_IFLNK)) {
        st = await statOrNull(sftp, cur);
        if (!st)
          return (await isLoop(sftp, cur))
            ? new DriverError('path.invalid', `Too many symbolic links: ${board}`)
            : notFound;
      }
      if ((i < comps.length - 1 || wantDir) && !isType(st.mode, S_IFDIR))
        return new DriverError('path.not_a_directory', `Not a directory: ${board}`);
    }
    return notFound;
  };
  /** A symlink that does not resolve: a loop (ELOOP) rather than a dangling link (ENOENT)? */
  const isLoop = async (sftp: SFTPWrapper, link: string): Promise<boolean> => {
    let cur = link;
    for (let hops = 0; hops < MAX_SYMLINK_HOPS; hops++) {
      const target = await sftpCall<string>((cb) => sftp.readlink(cur, cb)).catch(() => null);
      if (target === null) return false;
      cur = path.posix.resolve(path.posix.dirname(cur), target);
      const st = await lstatOrNull(sftp, cur);
      if (!st || !isType(st.mode, S_IFLNK)) return false;
    }
    return true;
  };
  const freeBytes = async (sftp: SFTPWrapper, p: string): Promise<number | null> => {
    const v = await sftpCall<{ f_bavail: number; f_frsize: number; f_bsize: number }>((cb) =>
      sftp.ext_openssh_statvfs(p, cb),
    ).catch(() => null);
    return v ? Number(v.f_bavail) * Number(v.f_frsize || v.f_bsize) : null;
  };
  /** A failed write or create: a full disk when the filesystem has (next to) no room left. */
  const writeError = async (
    sftp: SFTPWrapper,
    err: unknown,
    dir: string,
    board: string,
  ): Promise<DriverError> => {
    const e = sftpError(err, board);
    if (e.key !== 'driver.failed' || statusOf(err) !== FX.FAILURE) return e;
    const free = await freeBytes(sftp, dir);
    return free !== null && free < FULL_BELOW_BYTES
      ? new DriverError('path.no_space', `No space left: ${board}`)
      : e;
  };

  /**
   * Maps a failure of a call on `server` (under the root): NO_SUCH_FILE is told apart by a walk;
   * `wantDir` when the call needed `server` itself to be a directory (opendir).
   */
  const mapped = async (
    sftp: SFTPWrapper,
    err: unknown,
    server: string,
    board: string,
    wantDir = false,
  ): Promise<DriverError> => {
    if (statusOf(err) === FX.NO_SUCH_FILE) return whyMissing(sftp, await root(sftp), server, board, wantDir);
    return sftpError(err, board);
  };
  const at = <T>(
    sftp: SFTPWrapper,
    server: string,
    board: string,
    call: Promise<T>,
    wantDir = false,
  ): Promise<T> =>
    call.catch(async (err) => {
      throw await mapped(sftp, err, server, board, wantDir);
    });

  /**
   * What a failed rename was. OpenSSH answers ENOTDIR (a directory over a file) as NO_SUCH_FILE and
   * EISDIR / ENOTEMPTY as FAILURE: the two sides' types tell them apart.
   */
  const renameError = async (
    sftp: SFTPWrapper,
    err: unknown,
    from: Located,
    to: Located,
  ): Promise<DriverError> => {
    const status = statusOf(err);
    const e = sftpError(err, from.board);
    if (
      (status !== FX.NO_SUCH_FILE && status !== FX.FAILURE) ||
      (status === FX.FAILURE && e.key !== 'driver.failed')
    )
      return e;
    const [a, b] = await Promise.all([lstatOrNull(sftp, from.real), lstatOrNull(sftp, to.real)]);
    if (!a) return mapped(sftp, { code: FX.NO_SUCH_FILE }, from.real, from.board);
    if (b && isType(b.mode, S_IFDIR)) {
      return isType(a.mode, S_IFDIR)
        ? new DriverError('path.exists', `Already exists or not empty: ${to.board}`)
        : new DriverError('path.is_a_directory', `Is a directory: ${to.board}`);
    }
    if (b && isType(a.mode, S_IFDIR))
      return new DriverError('path.not_a_directory', `Not a directory: ${to.board}`);
    if (status === FX.NO_SUCH_FILE) return mapped(sftp, err, to.real, to.board);
    return writeError(sftp, err, path.posix.dirname(to.real), to.board);
  };

  return { mapped, at, writeError, renameError };
}
