// File operations on one board through its driver's `files` API. Paths arrive validated by the shared
// schemas, are normalised here (a `..` above the root is refused before any driver call) and are then
// contained by the driver, which also resolves symlinks inside the board. No path ever reaches a shell.
// Editor saves go through the driver's atomic write; the conflict check compares the sha256 of the
// bytes the editor opened with the bytes on the board now.
import crypto from 'node:crypto';
import { type BoardDriver, DriverError, type FileEntry } from '#server/boards/driver.ts';
import { AppError, badRequest, conflict, notFound } from '#server/errors.ts';
import { ResultCode } from '#shared/codes.ts';
import {
  EDITOR_MAX_BYTES,
  type FileBrowserResponse,
  FileErrorKey,
  type FileReadResponse,
  type FileWriteResponse,
  isProtectedPath,
  normalizeBoardPath,
  type TextEncoding,
} from '#shared/files.ts';
import { decodeText, encodeText } from './codec.ts';

export const sha256 = (buf: Buffer) => crypto.createHash('sha256').update(buf).digest('hex');

export const noSpace = () =>
  new AppError(507, 50700, FileErrorKey.noSpace, 'Not enough free space on the board for this upload');
export const transferTimeout = () =>
  new AppError(408, 40800, FileErrorKey.timeout, 'The transfer took longer than allowed and was stopped');

/** Driver and file-system failures as the envelope's errors, with the drivers' stable keys. */
const BY_DRIVER_KEY: Record<string, (msg: string) => AppError> = {
  'path.outside_root': (m) => badRequest(m, FileErrorKey.outsideRoot),
  'path.invalid': (m) => badRequest(m, FileErrorKey.invalid),
  'path.name_too_long': (m) => badRequest(m, FileErrorKey.nameTooLong),
  'path.too_long': (m) => badRequest(m, 'path.too_long'),
  'path.not_found': (m) => notFound(m, FileErrorKey.notFound),
  'path.exists': (m) => conflict(m, FileErrorKey.exists),
  'path.not_a_directory': (m) => badRequest(m, FileErrorKey.notDir),
  'path.is_a_directory': (m) => badRequest(m, FileErrorKey.isDir),
  'path.not_empty': (m) => conflict(m, FileErrorKey.notEmpty),
  'path.permission_denied': (m) => new AppError(403, ResultCode.Forbidden, FileErrorKey.permission, m),
  'path.denied': (m) => new AppError(403, ResultCode.Forbidden, FileErrorKey.permission, m),
  'path.no_space': () => noSpace(),
  'file.too_large': (m) => new AppError(413, ResultCode.PayloadTooLarge, FileErrorKey.tooLarge, m),
  'file.no_space': () => noSpace(),
  'capability.unsupported': (m) =>
    new AppError(501, ResultCode.NotImplementedByDriver, 'capability.unsupported', m),
  'driver.timeout': (m) => new AppError(504, 50400, 'driver.timeout', m),
  'board.offline': (m) => new AppError(503, ResultCode.Unavailable, 'board.offline', m),
  'board.not_running': (m) => new AppError(503, ResultCode.Unavailable, 'board.not_running', m),
  // A riscv64 board still booting, or one whose image has no agent (only its serial console).
  'board.booting': (m) => new AppError(503, ResultCode.Unavailable, 'board.booting', m),
  'board.no_agent': (m) => new AppError(503, ResultCode.Unavailable, 'board.no_agent', m),
};

const BY_ERRNO: Record<string, string> = {
  ENOENT: 'path.not_found',
  EEXIST: 'path.exists',
  ENOTDIR: 'path.not_a_directory',
  EISDIR: 'path.is_a_directory',
  ENOTEMPTY: 'path.not_empty',
  EACCES: 'path.permission_denied',
  EPERM: 'path.permission_denied',
  ENOSPC: 'file.no_space',
  EDQUOT: 'file.no_space',
  ENAMETOOLONG: 'path.name_too_long',
};

export function asAppError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  if (err instanceof DriverError) {
    const map = BY_DRIVER_KEY[err.key];
    return map ? map(err.message) : new AppError(502, 50200, err.key, err.message);
  }
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code && BY_ERRNO[code]) return BY_DRIVER_KEY[BY_ERRNO[code]](messageOf(code));
  return err;
}

function messageOf(errno: string): string {
  const words: Record<string, string> = {
    ENOENT: 'No such file or folder',
    EEXIST: 'A file or folder of that name exists',
    ENOTDIR: 'Not a folder',
    EISDIR: 'Is a folder',
    ENOTEMPTY: 'The folder is not empty',
    EACCES: 'Permission denied',
    EPERM: 'Permission denied',
    ENOSPC: 'No space left on the board',
    EDQUOT: 'Disk quota of the board exceeded',
    ENAMETOOLONG: 'Name too long',
  };
  return words[errno] ?? errno;
}

/** Runs a driver call and rethrows its failure as an AppError. */
export async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asAppError(err);
  }
}

export function resolvePath(p: string, dir?: string): string {
  const base = dir ? normalizeBoardPath(dir) : '/';
  const full = base === null ? null : normalizeBoardPath(p, base);
  if (full === null) throw badRequest('The path leaves the board root', FileErrorKey.outsideRoot);
  return full;
}

async function statOrNull(driver: BoardDriver, p: string): Promise<FileEntry | null> {
  try {
    return await driver.files.stat(p);
  } catch (err) {
    const e = asAppError(err);
    if (e instanceof AppError && e.key === FileErrorKey.notFound) return null;
    throw e;
  }
}

const typeOrder = (e: FileEntry) => (e.type === 'dir' ? 0 : 1);

export class FileService {
  constructor(private readonly driver: BoardDriver) {}

  async list(path: string): Promise<FileBrowserResponse> {
    const entries = await guarded(() => this.driver.files.list(path));
    entries.sort((a, b) => typeOrder(a) - typeOrder(b) || a.name.localeCompare(b.name));
    return {
      path,
      entries: entries.map(({ name, path: p, type, size, mtimeMs, mode }) => ({
        name,
        path: p,
        type,
        size,
        mtimeMs,
        mode,
      })),
    };
  }

  stat(path: string): Promise<FileEntry> {
    return guarded(() => this.driver.files.stat(path));
  }

  async read(path: string, wanted: TextEncoding | 'auto'): Promise<FileReadResponse> {
    const st = await this.stat(path);
    if (st.type === 'dir') throw badRequest('This is a folder, not a file', FileErrorKey.isDir);
    const meta = { path, size: st.size, mtimeMs: st.mtimeMs, mode: st.mode };
    if (st.size > EDITOR_MAX_BYTES) return { kind: 'tooLarge', ...meta, limit: EDITOR_MAX_BYTES };
    // The file may have grown since stat (or be a symlink whose own size was stat'ed): drivers refuse
    // past maxBytes, and an answer longer than asked is treated the same.
    const buf = await guarded(() => this.driver.files.read(path, EDITOR_MAX_BYTES)).catch((err) => {
      if (err instanceof AppError && err.key === FileErrorKey.tooLarge) return null;
      throw err;
    });
    if (!buf || buf.length > EDITOR_MAX_BYTES) return { kind: 'tooLarge', ...meta, limit: EDITOR_MAX_BYTES };
    const hash = sha256(buf);
    const decoded = decodeText(buf, wanted);
    if (decoded.kind === 'binary') return { kind: 'binary', ...meta, size: buf.length, hash };
    return {
      kind: 'text',
      ...meta,
      size: buf.length,
      hash,
      encoding: decoded.encoding,
      content: decoded.content,
    };
  }

  /**
   * The check-then-write leaves a window of one round trip in which another writer can slip in; the
   * driver's atomic rename guarantees that whichever wins leaves a whole file.
   */
  async write(
    path: string,
    data: string,
    encoding: TextEncoding,
    expectedHash?: string | null,
  ): Promise<FileWriteResponse> {
    const bytes = encodeText(data, encoding);
    if (bytes.length > EDITOR_MAX_BYTES) {
      throw new AppError(
        413,
        ResultCode.PayloadTooLarge,
        FileErrorKey.tooLarge,
        'The text is larger than the editor saves',
      );
    }
    if (expectedHash !== undefined) {
      const current = await statOrNull(this.driver, path);
      if (expectedHash === null && current)
        throw conflict('A file or folder of that name exists', FileErrorKey.exists);
      if (expectedHash !== null) {
        if (!current)
          throw conflict('The file was removed on the board since it was opened', FileErrorKey.changed);
        if (current.type === 'dir') throw badRequest('This is a folder, not a file', FileErrorKey.isDir);
        const changed =
          current.size > EDITOR_MAX_BYTES ||
          sha256(
            await guarded(() => this.driver.files.read(path, Math.max(current.size, EDITOR_MAX_BYTES) * 2)),
          ) !== expectedHash;
        if (changed)
          throw conflict('The file changed on the board since it was opened', FileErrorKey.changed);
      }
    }
    await guarded(() => this.driver.files.write(path, bytes));
    const st = await this.stat(path);
    return { path, size: st.size, mtimeMs: st.mtimeMs, mode: st.mode, hash: sha256(bytes) };
  }

  async remove(path: string, opts: { recursive?: boolean; confirm?: string }): Promise<{ path: string }> {
    if (isProtectedPath(path) && (opts.confirm === undefined || resolvePath(opts.confirm) !== path)) {
      throw conflict(`Removing ${path} needs a second confirmation`, FileErrorKey.protectedPath);
    }
    const st = await this.stat(path);
    if (st.type === 'dir' && !opts.recursive) {
      const inside = await guarded(() => this.driver.files.list(path));
      if (inside.length) throw conflict('The folder is not empty', FileErrorKey.notEmpty);
    }
    await guarded(() => this.driver.files.remove(path, { recursive: st.type === 'dir' && !!opts.recursive }));
    return { path };
  }

  async mkdir(path: string): Promise<{ path: string }> {
    if (await statOrNull(this.driver, path))
      throw conflict('A file or folder of that name exists', FileErrorKey.exists);
    await guarded(() => this.driver.files.mkdir(path));
    return { path };
  }

  async rename(from: string, to: string): Promise<{ path: string }> {
    if (from === '/') throw badRequest('The root folder cannot be renamed', FileErrorKey.invalid);
    if (to === from || to.startsWith(`${from}/`)) {
      throw badRequest('A folder cannot be moved into itself', FileErrorKey.invalid);
    }
    await this.stat(from);
    if (await statOrNull(this.driver, to))
      throw conflict('A file or folder of that name exists', FileErrorKey.exists);
    await guarded(() => this.driver.files.rename(from, to));
    return { path: to };
  }
}
