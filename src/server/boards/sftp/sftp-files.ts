// A board's file calls over SFTP: the one file implementation of the ssh driver (an SSH connection's
// SFTP subsystem) and of sandboxed local boards (an OpenSSH sftp-server run inside the sandbox, see
// stdio-sftp.ts). Paths are resolved by the server: its realpath of the configured root and of each
// path, kept inside the root by comparing components. With rootDir '/' and the server running inside a
// sandbox, containment is where the server runs: whatever a board user does to the tree, the server
// only ever sees the board's own files.
//
// Writes are atomic: the bytes go to a temporary file beside the target (journalled first, see
// temp-journal.ts), which is renamed over the target with posix-rename@openssh.com once complete.
// Errors answer the same DriverError keys as the host-side implementation (local/files.ts), through
// sftp-errors.ts.
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { FileEntryWithStats, OpenMode, SFTPWrapper, Stats } from 'ssh2';
import { type BoardDriver, DriverError, type FileEntry } from '../driver.ts';
import { boardPathOf, isWithin, normaliseBoardPath } from '../paths.ts';
import { withTimeout } from '../util.ts';
import {
  done,
  FX,
  isType,
  lstatOrNull,
  S_IFDIR,
  S_IFIFO,
  S_IFLNK,
  S_IFSOCK,
  sessionLost,
  sftpCall,
  sftpError,
  sftpErrors,
  statusOf,
  typeOf,
} from './sftp-errors.ts';
import { SftpReadStream, SftpWriteStream } from './sftp-streams.ts';
import { type TempJournal, tempPathBeside } from './temp-journal.ts';

const DEFAULT_READ_MAX = 16 * 1024 * 1024;

export interface SftpFilesOptions {
  /** An open SFTP session; called once per file call (the caller pools and reopens). */
  sftp: () => Promise<SFTPWrapper>;
  /** The board's root as the server names it: a directory of an ssh board, '/' inside a sandbox. */
  rootDir: string;
  /** Deadline of each call (and of opening a stream; the transfer itself has the caller's deadline). */
  timeoutMs: number;
  /** Where temporary files of writes in progress are recorded, for a sweep after a crash. */
  journal?: TempJournal;
}

export function sftpFiles(o: SftpFilesOptions): BoardDriver['files'] {
  // The root's realpath, once per session (a new session, e.g. after a reset or flash, asks again).
  const roots = new WeakMap<SFTPWrapper, Promise<string>>();
  const root = (sftp: SFTPWrapper): Promise<string> => {
    let r = roots.get(sftp);
    if (!r) {
      r = sftpCall<string>((cb) => sftp.realpath(o.rootDir, cb)).catch((err) => {
        roots.delete(sftp);
        throw new DriverError(
          'driver.failed',
          `The board's root directory is not usable: ${(err as Error).message}`,
        );
      });
      roots.set(sftp, r);
    }
    return r;
  };
  const toBoard = (rootReal: string, real: string) =>
    boardPathOf(path.posix.relative(rootReal, real).split('/').filter(Boolean));
  const { mapped, at, writeError, renameError } = sftpErrors(root);

  /** The server's realpath of a board path (which need not exist at its last component), inside the root. */
  const real = async (sftp: SFTPWrapper, p: string): Promise<{ real: string; board: string }> => {
    const comps = normaliseBoardPath(p);
    const rootReal = await root(sftp);
    const asked = path.posix.join(rootReal, ...comps);
    const r = await at(
      sftp,
      asked,
      boardPathOf(comps),
      sftpCall<string>((cb) => sftp.realpath(asked, cb)),
    );
    if (!isWithin(rootReal, r)) throw new DriverError('path.outside_root', 'Path leaves the board root');
    return { real: r, board: toBoard(rootReal, r) };
  };

  /** The resolved parent directory and the final name (never followed). */
  const parentOf = async (
    sftp: SFTPWrapper,
    p: string,
  ): Promise<{ real: string; board: string; name: string }> => {
    const comps = normaliseBoardPath(p);
    if (!comps.length) throw new DriverError('path.invalid', 'The board root itself cannot be replaced');
    const parent = await real(sftp, boardPathOf(comps.slice(0, -1)));
    const name = comps[comps.length - 1];
    return { real: path.posix.join(parent.real, name), board: path.posix.join(parent.board, name), name };
  };

  /** Where a write lands: through a symlink at the final name (if it resolves inside), else the name. */
  const writeTarget = async (sftp: SFTPWrapper, p: string) => {
    const t = await parentOf(sftp, p);
    const st = await lstatOrNull(sftp, t.real);
    let where: { real: string; board: string } = t;
    let target = st;
    if (st && isType(st.mode, S_IFLNK)) {
      where = await real(sftp, p);
      target = await lstatOrNull(sftp, where.real);
    }
    if (target && isType(target.mode, S_IFDIR))
      throw new DriverError('path.is_a_directory', `Is a directory: ${where.board}`);
    return {
      ...where,
      mode: target ? target.mode & 0o7777 : 0o644,
      owner: target ? { uid: target.uid, gid: target.gid } : null,
    };
  };

  /** Replaces `to` with `from` in one step (posix-rename@openssh.com). */
  const renameOver = async (sftp: SFTPWrapper, from: string, to: string): Promise<void> => {
    await sftpCall<void>((cb) => sftp.ext_openssh_rename(from, to, done(cb))).catch(async (err) => {
      if (!/not supported/i.test(String((err as Error).message))) throw err;
      // Without the extension the replacement is not atomic: the old target goes first.
      await sftpCall<void>((cb) => sftp.unlink(to, () => cb(null, undefined)));
      await sftpCall<void>((cb) => sftp.rename(from, to, done(cb)));
    });
  };
  /**
   * Removes a temporary file and forgets it in the journal. A session that failed (the reason a
   * transfer is being aborted, often) is replaced by a fresh one for the removal; a file that could
   * not be removed stays journalled for the next sweep.
   */
  const discard = async (sftp: SFTPWrapper, tmp: string): Promise<void> => {
    const unlink = (s: SFTPWrapper) =>
      sftpCall<void>((cb) => s.unlink(tmp, done(cb))).catch((err) => {
        if (statusOf(err) !== FX.NO_SUCH_FILE) throw err;
      });
    try {
      await withTimeout(
        unlink(sftp).catch(async (err) => {
          if (!sessionLost(err)) throw err;
          await unlink(await o.sftp());
        }),
        o.timeoutMs,
        'temporary file removal',
      );
    } catch {
      return;
    }
    await o.journal?.remove(tmp).catch(() => {});
  };

  const openHandle = (sftp: SFTPWrapper, p: string, flags: OpenMode, mode?: number) =>
    sftpCall<Buffer>((cb) =>
      mode === undefined ? sftp.open(p, flags, cb) : sftp.open(p, flags, { mode }, cb),
    );
  const closeHandle = (sftp: SFTPWrapper, handle: Buffer) =>
    sftpCall<void>((cb) => sftp.close(handle, done(cb)));
  /**
   * Opens a file to read. A FIFO is refused first: the server's open() of one would wait for a writer
   * and hold up every later call of the session.
   */
  const openToRead = async (sftp: SFTPWrapper, r: { real: string; board: string }) => {
    const st = await at(
      sftp,
      r.real,
      r.board,
      sftpCall<Stats>((cb) => sftp.stat(r.real, cb)),
    );
    if (isType(st.mode, S_IFIFO) || isType(st.mode, S_IFSOCK))
      throw new DriverError('path.invalid', `Not a regular file: ${r.board}`);
    return at(sftp, r.real, r.board, openHandle(sftp, r.real, 'r'));
  };

  /**
   * A new temporary file beside `t` for a write: journalled, created exclusively, given the target's
   * mode (and owner, where the server may set it).
   */
  const createTemp = async (sftp: SFTPWrapper, t: Awaited<ReturnType<typeof writeTarget>>) => {
    const tmp = tempPathBeside(t.real);
    await o.journal?.add(tmp).catch((err) => {
      throw new DriverError(
        'driver.failed',
        `Cannot record the temporary file of a write: ${(err as Error).message}`,
      );
    });
    let handle: Buffer | undefined;
    try {
      handle = await openHandle(sftp, tmp, 'wx', t.mode);
      // The server's umask applied at creation; the mode must be the target's exactly.
      await sftpCall<void>((cb) => sftp.fchmod(handle as Buffer, t.mode, done(cb)));
      if (t.owner)
        await sftpCall<void>((cb) =>
          sftp.fchown(handle as Buffer, t.owner!.uid, t.owner!.gid, () => cb(null, undefined)),
        );
      return { tmp, handle };
    } catch (err) {
      if (handle) await closeHandle(sftp, handle).catch(() => {});
      await discard(sftp, tmp);
      // NO_SUCH_FILE: a parent that is gone or is not a directory (the walk tells which).
      throw statusOf(err) === FX.NO_SUCH_FILE
        ? await mapped(sftp, err, t.real, t.board)
        : await writeError(sftp, err, path.posix.dirname(t.real), t.board);
    }
  };

  const streamOptions = (
    sftp: SFTPWrapper,
    server: string,
    board: string,
    writing: boolean,
    fsync = false,
  ) => ({
    settleMs: o.timeoutMs,
    fsync,
    mapError: (err: Error) =>
      writing ? writeError(sftp, err, path.posix.dirname(server), board) : mapped(sftp, err, server, board),
  });

  const entry = (name: string, board: string, a: Stats): FileEntry => ({
    name,
    path: board,
    type: typeOf(a.mode),
    size: Number(a.size),
    mtimeMs: a.mtime * 1000,
    mode: a.mode,
  });
  // A board decides how many entries its folders hold (millions, if it likes): listings stop at
  // LIST_MAX_ENTRIES and removal works one batch at a time, so the service's memory stays bounded.
  const removeTree = async (sftp: SFTPWrapper, dir: string): Promise<void> => {
    for (;;) {
      const batch = await readdirBounded(sftp, dir, REMOVE_BATCH);
      for (const e of batch) {
        const p = path.posix.join(dir, e.filename);
        if (isType(e.attrs.mode, S_IFDIR)) await removeTree(sftp, p);
        else await sftpCall<void>((cb) => sftp.unlink(p, done(cb)));
      }
      if (batch.length < REMOVE_BATCH) break;
    }
    await sftpCall<void>((cb) => sftp.rmdir(dir, done(cb)));
  };
  /** Reads an open file to its end, refusing more than `maxBytes`. */
  const readAll = async (
    sftp: SFTPWrapper,
    handle: Buffer,
    maxBytes: number,
    server: string,
    board: string,
  ): Promise<Buffer> => {
    const parts: Buffer[] = [];
    let size = 0;
    const stream = new SftpReadStream(sftp, handle, streamOptions(sftp, server, board, false));
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        stream.destroy();
        throw new DriverError('file.too_large', `File is larger than ${maxBytes} bytes`);
      }
      parts.push(chunk);
    }
    return Buffer.concat(parts, size);
  };

  // Every call: one session, the deadline, and SFTP errors worded for the board path.
  const op = <T>(what: string, fn: (sftp: SFTPWrapper) => Promise<T>) =>
    withTimeout(o.sftp().then(fn), o.timeoutMs, what);

  return {
    list: (dir) =>
      op('list', async (sftp) => {
        const r = await real(sftp, dir);
        const list = await at(
          sftp,
          r.real,
          r.board,
          readdirBounded(sftp, r.real, LIST_MAX_ENTRIES),
          true,
        );
        return list
          .map((e) => entry(e.filename, path.posix.join(r.board, e.filename), e.attrs))
          .sort(
            (a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name),
          );
      }),
    stat: (p) =>
      op('stat', async (sftp) => {
        if (!normaliseBoardPath(p).length) {
          return entry(
            '/',
            '/',
            await at(
              sftp,
              o.rootDir,
              '/',
              sftpCall<Stats>((cb) => sftp.stat(o.rootDir, cb)),
            ),
          );
        }
        const t = await parentOf(sftp, p);
        return entry(
          t.name,
          t.board,
          await at(
            sftp,
            t.real,
            t.board,
            sftpCall<Stats>((cb) => sftp.lstat(t.real, cb)),
          ),
        );
      }),
    read: (p, maxBytes = DEFAULT_READ_MAX) =>
      op('read', async (sftp) => {
        const r = await real(sftp, p);
        const handle = await openToRead(sftp, r);
        let owned = true;
        try {
          // Checked on the opened file, so what is read is what was checked.
          const st = await at(
            sftp,
            r.real,
            r.board,
            sftpCall<Stats>((cb) => sftp.fstat(handle, cb)),
          );
          if (isType(st.mode, S_IFDIR))
            throw new DriverError('path.is_a_directory', `Is a directory: ${r.board}`);
          if (Number(st.size) > maxBytes)
            throw new DriverError('file.too_large', `File is larger than ${maxBytes} bytes`);
          owned = false;
          return await readAll(sftp, handle, maxBytes, r.real, r.board);
        } finally {
          if (owned) await closeHandle(sftp, handle).catch(() => {});
        }
      }),
    write: (p, data) =>
      op('write', async (sftp) => {
        const t = await writeTarget(sftp, p);
        const { tmp, handle } = await createTemp(sftp, t);
        // Synced before the rename, as the host-side write does: a saved file survives a power loss whole.
        const stream = new SftpWriteStream(sftp, handle, streamOptions(sftp, tmp, t.board, true, true));
        stream.on('error', () => {});
        try {
          await new Promise<void>((resolve, reject) =>
            stream.end(typeof data === 'string' ? Buffer.from(data) : data, (err?: Error | null) =>
              err ? reject(err) : resolve(),
            ),
          );
          await renameOver(sftp, tmp, t.real).catch(async (err) => {
            throw await renameError(sftp, err, { real: tmp, board: t.board }, t);
          });
          await o.journal?.remove(tmp).catch(() => {});
        } catch (err) {
          stream.destroy();
          await discard(sftp, tmp);
          throw err instanceof DriverError ? err : sftpError(err, t.board);
        }
      }),
    remove: (p, opts) =>
      op('remove', async (sftp) => {
        const t = await parentOf(sftp, p);
        const st = await at(
          sftp,
          t.real,
          t.board,
          sftpCall<Stats>((cb) => sftp.lstat(t.real, cb)),
        );
        try {
          if (isType(st.mode, S_IFDIR)) {
            if (opts?.recursive) await removeTree(sftp, t.real);
            else await sftpCall<void>((cb) => sftp.rmdir(t.real, done(cb)));
          } else await sftpCall<void>((cb) => sftp.unlink(t.real, done(cb)));
        } catch (err) {
          const e = await mapped(sftp, err, t.real, t.board);
          // rmdir's FAILURE is ENOTEMPTY (or EBUSY on a mount point): the directory has content.
          throw e.key === 'driver.failed' && statusOf(err) === FX.FAILURE
            ? new DriverError('path.exists', `Already exists or not empty: ${t.board}`)
            : e;
        }
      }),
    mkdir: (p) =>
      op('mkdir', async (sftp) => {
        const t = await parentOf(sftp, p);
        if (await lstatOrNull(sftp, t.real))
          throw new DriverError('path.exists', `Already exists or not empty: ${t.board}`);
        await sftpCall<void>((cb) => sftp.mkdir(t.real, { mode: 0o755 }, done(cb))).catch(async (err) => {
          if (statusOf(err) === FX.FAILURE && (await lstatOrNull(sftp, t.real))) {
            throw new DriverError('path.exists', `Already exists or not empty: ${t.board}`);
          }
          throw statusOf(err) === FX.NO_SUCH_FILE
            ? await mapped(sftp, err, t.real, t.board)
            : await writeError(sftp, err, path.posix.dirname(t.real), t.board);
        });
      }),
    rename: (from, to) =>
      op('rename', async (sftp) => {
        const a = await parentOf(sftp, from);
        const b = await parentOf(sftp, to);
        await renameOver(sftp, a.real, b.real).catch(async (err) => {
          throw await renameError(sftp, err, a, b);
        });
      }),
    readlink: (p) =>
      op('readlink', async (sftp) => {
        // The parent is resolved inside the root like every other call; the link itself is only read.
        const t = await parentOf(sftp, p);
        const st = await at(
          sftp,
          t.real,
          t.board,
          sftpCall<Stats>((cb) => sftp.lstat(t.real, cb)),
        );
        if (!isType(st.mode, S_IFLNK))
          throw new DriverError('path.invalid', `Not a symbolic link: ${t.board}`);
        return at(
          sftp,
          t.real,
          t.board,
          sftpCall<string>((cb) => sftp.readlink(t.real, cb)),
        );
      }),
    createReadStream: (p, opts) =>
      op('read stream', async (sftp): Promise<Readable> => {
        const r = await real(sftp, p);
        const handle = await openToRead(sftp, r);
        const st = await at(
          sftp,
          r.real,
          r.board,
          sftpCall<Stats>((cb) => sftp.fstat(handle, cb)),
        ).catch(async (err) => {
          await closeHandle(sftp, handle).catch(() => {});
          throw err;
        });
        if (isType(st.mode, S_IFDIR)) {
          await closeHandle(sftp, handle).catch(() => {});
          throw new DriverError('path.is_a_directory', `Is a directory: ${r.board}`);
        }
        const start = Math.max(0, Math.floor(opts?.start ?? 0));
        return new SftpReadStream(sftp, handle, { ...streamOptions(sftp, r.real, r.board, false), start });
      }),
    createWriteStream: (p) =>
      op('write stream', async (sftp) => {
        const t = await writeTarget(sftp, p);
        const { tmp, handle } = await createTemp(sftp, t);
        const stream = new SftpWriteStream(sftp, handle, streamOptions(sftp, tmp, t.board, true));
        // Its errors reach the caller through commit(); a caller without an 'error' listener must not crash.
        stream.on('error', () => {});
        // Settles once the stream is done with its handle: after 'finish' (every write acknowledged,
        // the handle closed) or after a destroy or error has closed it.
        const settled = new Promise<Error | null>((resolve) => {
          stream.once('finish', () => resolve(null));
          stream.once('close', () =>
            resolve(
              stream.errored ??
                new DriverError('driver.failed', 'The write stream was closed before it ended'),
            ),
          );
        });
        let over: Promise<void> | null = null;
        return {
          stream,
          commit: () =>
            (over ??= (async () => {
              if (!stream.writableEnded) stream.end();
              try {
                // The last writes and the close: a few requests, unless the session hangs.
                const failed = await withTimeout(settled, o.timeoutMs, 'commit');
                if (failed) throw failed;
                await withTimeout(
                  renameOver(sftp, tmp, t.real).catch(async (err) => {
                    throw await renameError(sftp, err, { real: tmp, board: t.board }, t);
                  }),
                  o.timeoutMs,
                  'commit',
                );
              } catch (err) {
                await discard(sftp, tmp);
                throw err instanceof DriverError ? err : sftpError(err, t.board);
              }
              await o.journal?.remove(tmp).catch(() => {});
            })()),
          abort: async () => {
            if (over) {
              // A commit that failed removed the file already; one that succeeded must not be undone.
              await over.catch(() => {});
              return;
            }
            over = (async () => {
              stream.destroy();
              await settled;
              await discard(sftp, tmp);
            })();
            await over;
          },
        };
      }),
    freeSpace: (p) =>
      op('free space', async (sftp) => {
        const r = await real(sftp, p);
        // Asked every time: an upload's room must be what the board has now.
        const v = await at(
          sftp,
          r.real,
          r.board,
          sftpCall<{ f_bavail: number; f_frsize: number; f_bsize: number }>((cb) =>
            sftp.ext_openssh_statvfs(r.real, cb),
          ),
        );
        return Number(v.f_bavail) * Number(v.f_frsize || v.f_bsize);
      }),
  };
}

/** Most entries a listing answers; a folder with more is listed up to here. */
export const LIST_MAX_ENTRIES = 20_000;
const REMOVE_BATCH = 2_000;

/** At most `max` entries of a folder (without `.` and `..`), read one server batch at a time. */
export async function readdirBounded(sftp: SFTPWrapper, dir: string, max: number): Promise<FileEntryWithStats[]> {
  const handle = await sftpCall<Buffer>((cb) => sftp.opendir(dir, cb));
  const out: FileEntryWithStats[] = [];
  try {
    while (out.length < max) {
      const batch = await new Promise<FileEntryWithStats[] | null>((resolve, reject) =>
        sftp.readdir(handle, (err: (Error & { code?: number }) | undefined, list: FileEntryWithStats[]) => {
          if (err && err.code === 1) resolve(null); // SSH_FX_EOF
          else if (err) reject(err);
          else resolve(list);
        }),
      );
      if (batch === null) break;
      for (const e of batch) if (out.length < max) out.push(e);
    }
  } finally {
    await new Promise<void>((r) => sftp.close(handle, () => r()));
  }
  return out;
}
