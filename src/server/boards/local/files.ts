// File operations of a local board, on the host directory that is the board's root. Every path is
// resolved inside the root (paths.ts); opened files are checked again through /proc/self/fd; writes go
// to a temporary file beside the target and are renamed over it.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { DriverError, type BoardDriver, type FileEntry } from '../driver.ts';
import { assertFdWithin, boardPathOf, normaliseBoardPath, resolveInRoot } from '../paths.ts';

const DEFAULT_READ_MAX = 16 * 1024 * 1024;

export function entryOf(name: string, boardPath: string, st: fs.Stats): FileEntry {
  return {
    name,
    path: boardPath,
    type: st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other',
    size: st.size,
    mtimeMs: Math.round(st.mtimeMs),
    mode: st.mode,
  };
}

function mapFsError(err: unknown, boardPath: string): never {
  if (err instanceof DriverError) throw err;
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') throw new DriverError('path.not_found', `No such file: ${boardPath}`);
  if (code === 'EEXIST' || code === 'ENOTEMPTY') throw new DriverError('path.exists', `Already exists or not empty: ${boardPath}`);
  if (code === 'ENOTDIR') throw new DriverError('path.not_a_directory', `Not a directory: ${boardPath}`);
  if (code === 'EISDIR') throw new DriverError('path.is_a_directory', `Is a directory: ${boardPath}`);
  if (code === 'ELOOP') throw new DriverError('path.invalid', `Too many symbolic links: ${boardPath}`);
  if (code === 'ENAMETOOLONG') throw new DriverError('path.name_too_long', `Name too long: ${boardPath}`);
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') throw new DriverError('path.denied', `Not permitted: ${boardPath}`);
  if (code === 'ENOSPC' || code === 'EDQUOT') throw new DriverError('path.no_space', `No space left: ${boardPath}`);
  throw new DriverError('driver.failed', `${code ?? 'error'} on ${boardPath}`);
}

const tempName = (target: string) =>
  path.join(path.dirname(target), `.${path.basename(target).slice(0, 200)}.${crypto.randomBytes(6).toString('hex')}.tmp`);

/** File operations over a root that `rootReal()` names (it changes when the board is flashed). */
export function localFiles(rootReal: () => string, guard: () => void): BoardDriver['files'] {
  const resolve = async (p: string, opts?: Parameters<typeof resolveInRoot>[2]) => {
    guard();
    return resolveInRoot(rootReal(), p, opts);
  };
  /** Resolves the parent directory; the final name is kept as given (never followed). */
  const resolveParent = async (p: string) => {
    const comps = normaliseBoardPath(p);
    if (!comps.length) throw new DriverError('path.invalid', 'The board root itself cannot be replaced');
    const parent = await resolve(boardPathOf(comps.slice(0, -1)));
    const st = await fs.promises.stat(parent.hostPath);
    if (!st.isDirectory()) throw new DriverError('path.not_a_directory', `Not a directory: ${parent.boardPath}`);
    const name = comps[comps.length - 1];
    return {
      hostPath: path.join(parent.hostPath, name),
      boardPath: boardPathOf([...parent.boardPath.split('/').filter(Boolean), name]),
    };
  };
  /** Where a write lands: through a symlink at the final name (resolved in root), else beside it. */
  const writeTarget = async (p: string) => {
    const r = await resolve(p, { allowMissing: true });
    const st = r.exists ? await fs.promises.stat(r.hostPath) : null;
    if (st?.isDirectory()) throw new DriverError('path.is_a_directory', `Is a directory: ${r.boardPath}`);
    return { ...r, mode: st ? st.mode & 0o7777 : 0o644, uid: st?.uid, gid: st?.gid };
  };

  return {
    async list(dir) {
      const r = await resolve(dir);
      try {
        const names = await fs.promises.readdir(r.hostPath);
        const out: FileEntry[] = [];
        for (const name of names) {
          const st = await fs.promises.lstat(path.join(r.hostPath, name)).catch(() => null);
          if (st) out.push(entryOf(name, boardPathOf([...r.boardPath.split('/').filter(Boolean), name]), st));
        }
        return out.sort((a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name));
      } catch (err) {
        mapFsError(err, r.boardPath);
      }
    },
    async stat(p) {
      const r = await resolve(p, { followFinal: false });
      try {
        return entryOf(path.basename(r.boardPath) || '/', r.boardPath, await fs.promises.lstat(r.hostPath));
      } catch (err) {
        mapFsError(err, r.boardPath);
      }
    },
    async read(p, maxBytes = DEFAULT_READ_MAX) {
      const r = await resolve(p);
      let fh: fs.promises.FileHandle | undefined;
      try {
        fh = await fs.promises.open(r.hostPath, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
        await assertFdWithin(rootReal(), fh.fd);
        const st = await fh.stat();
        if (st.isDirectory()) throw new DriverError('path.is_a_directory', `Is a directory: ${r.boardPath}`);
        if (st.size > maxBytes) throw new DriverError('file.too_large', `File is larger than ${maxBytes} bytes`);
        return await fh.readFile();
      } catch (err) {
        mapFsError(err, r.boardPath);
      } finally {
        await fh?.close();
      }
    },
    async write(p, data) {
      const t = await writeTarget(p);
      const tmp = tempName(t.hostPath);
      let fh: fs.promises.FileHandle | undefined;
      try {
        fh = await fs.promises.open(tmp, 'wx', t.mode);
        await assertFdWithin(rootReal(), fh.fd);
        await fh.writeFile(data);
        await fh.chmod(t.mode);
        if (t.uid !== undefined && t.gid !== undefined) await fh.chown(t.uid, t.gid);
        await fh.sync();
        await fh.close();
        fh = undefined;
        await fs.promises.rename(tmp, t.hostPath);
      } catch (err) {
        await fh?.close().catch(() => {});
        await fs.promises.rm(tmp, { force: true });
        mapFsError(err, t.boardPath);
      }
    },
    async remove(p, opts) {
      const r = await resolveParent(p);
      try {
        const st = await fs.promises.lstat(r.hostPath);
        if (st.isDirectory()) {
          if (opts?.recursive) await fs.promises.rm(r.hostPath, { recursive: true });
          else await fs.promises.rmdir(r.hostPath);
        } else await fs.promises.unlink(r.hostPath);
      } catch (err) {
        mapFsError(err, r.boardPath);
      }
    },
    async mkdir(p) {
      const r = await resolveParent(p);
      try {
        await fs.promises.mkdir(r.hostPath, { mode: 0o755 });
      } catch (err) {
        mapFsError(err, r.boardPath);
      }
    },
    async rename(from, to) {
      const a = await resolveParent(from);
      const b = await resolveParent(to);
      try {
        await fs.promises.rename(a.hostPath, b.hostPath);
      } catch (err) {
        mapFsError(err, a.boardPath);
      }
    },
    async readlink(p) {
      const r = await resolveParent(p);
      let dir: fs.promises.FileHandle | undefined;
      try {
        // Read through the opened parent (checked inside the root), so a board process that swaps the
        // parent for a symlink after resolving cannot make this read a link text outside the board.
        dir = await fs.promises.open(path.dirname(r.hostPath), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
        await assertFdWithin(rootReal(), dir.fd);
        const via = `/proc/self/fd/${dir.fd}/${path.basename(r.hostPath)}`;
        if (!(await fs.promises.lstat(via)).isSymbolicLink()) throw new DriverError('path.invalid', `Not a symbolic link: ${r.boardPath}`);
        return await fs.promises.readlink(via);
      } catch (err) {
        mapFsError(err, r.boardPath);
      } finally {
        await dir?.close();
      }
    },
    async createReadStream(p, opts): Promise<Readable> {
      const r = await resolve(p);
      let fh: fs.promises.FileHandle | undefined;
      try {
        fh = await fs.promises.open(r.hostPath, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
        await assertFdWithin(rootReal(), fh.fd);
        if ((await fh.stat()).isDirectory()) throw new DriverError('path.is_a_directory', `Is a directory: ${r.boardPath}`);
        return fh.createReadStream({ start: Math.max(0, Math.floor(opts?.start ?? 0)) });
      } catch (err) {
        await fh?.close().catch(() => {});
        mapFsError(err, r.boardPath);
      }
    },
    async createWriteStream(p) {
      const t = await writeTarget(p);
      const tmp = tempName(t.hostPath);
      let fh: fs.promises.FileHandle;
      try {
        fh = await fs.promises.open(tmp, 'wx', t.mode);
        await assertFdWithin(rootReal(), fh.fd);
      } catch (err) {
        await fs.promises.rm(tmp, { force: true });
        mapFsError(err, t.boardPath);
      }
      const stream: Writable = fh.createWriteStream();
      const closed = new Promise<void>((res) => stream.once('close', () => res()));
      return {
        stream,
        async commit() {
          if (!stream.writableFinished) await new Promise<void>((res, rej) => stream.end(() => res()).once('error', rej));
          await closed;
          await fs.promises.rename(tmp, t.hostPath).catch((err) => mapFsError(err, t.boardPath));
        },
        async abort() {
          stream.destroy();
          await closed;
          await fs.promises.rm(tmp, { force: true });
        },
      };
    },
    async freeSpace(p) {
      const r = await resolve(p);
      const s = await fs.promises.statfs(r.hostPath);
      return s.bavail * s.bsize;
    },
  };
}
