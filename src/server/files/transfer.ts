// Streamed transfers. Lifecycle of an upload: each multipart file part is piped, with backpressure,
// into the driver's write stream (a temporary file beside the target); only when the part ended whole
// is it committed (renamed into place). A client that disconnects, a deadline that passes, a board that
// runs out of space or any stream error aborts the temporary file, so the old file stays as it was and
// no partial file remains. A download pipes the driver's read stream (or a tar of a folder, entry by
// entry) to the response; a client that goes away destroys the pipeline back to the driver's stream.
import { PassThrough, type Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Multipart } from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import tar from 'tar-stream';
import type { BoardDriver, FileEntry } from '#server/boards/driver.ts';
import { AppError, badRequest, notFound } from '#server/errors.ts';
import {
  FileErrorKey,
  fileName,
  normalizeBoardPath,
  type UploadFileResponse,
  uploadFields,
} from '#shared/files.ts';
import { asAppError, guarded, noSpace, resolvePath, transferTimeout } from './files.service.ts';

const aborted = () =>
  new AppError(400, 40000, FileErrorKey.aborted, 'The client ended the transfer before it was complete');

/** Passes at most `size` bytes and pads a file that shrank while read, so a tar header stays true. */
function exactly(size: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      const room = size - seen;
      seen += chunk.length;
      cb(null, room >= chunk.length ? chunk : chunk.subarray(0, Math.max(0, room)));
    },
    flush(cb) {
      if (seen < size) this.push(Buffer.alloc(size - seen));
      cb();
    },
  });
}

/**
 * Writes `src` into `sink` with backpressure, counting bytes against the board's free space. The
 * sink is never destroyed with an error here: on failure the caller aborts it, and the driver's
 * abort removes the temporary file (a sink destroyed with an error may never report 'close').
 */
async function pump(src: Readable, sink: Writable, space: { left: number }): Promise<number> {
  let sinkError: Error | null = null;
  const onError = (err: Error) => {
    sinkError ??= err;
  };
  sink.on('error', onError);
  let size = 0;
  try {
    for await (const chunk of src as AsyncIterable<Buffer>) {
      if (sinkError) throw sinkError;
      size += chunk.length;
      space.left -= chunk.length;
      if (space.left < 0) throw noSpace();
      if (!sink.write(chunk)) {
        await new Promise<void>((resolve, reject) => {
          // Woken by the board catching up, or by either side failing (a dropped client, a deadline).
          const done = (err?: Error) => {
            sink.off('drain', ok);
            sink.off('error', done);
            sink.off('close', closed);
            src.off('error', done);
            src.off('close', srcClosed);
            if (err) reject(err);
            else resolve();
          };
          const ok = () => done();
          const closed = () => done(sinkError ?? new Error('the board closed the file'));
          const srcClosed = () => {
            // A source that ended whole closes too; only an error or a premature close fails the write.
            if (src.errored || !src.readableEnded) done(src.errored ?? new Error('the upload ended early'));
          };
          sink.once('drain', ok);
          sink.once('error', done);
          sink.once('close', closed);
          src.once('error', done);
          src.once('close', srcClosed);
        });
      }
    }
    if (sinkError) throw sinkError;
    return size;
  } finally {
    sink.off('error', onError);
  }
}

/** Waits for `work` but not forever: a driver whose abort hangs must not hold the request open. */
async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.catch(() => {}), new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

const ABORT_GRACE_MS = 10_000;
/** Kept free on the board: file-system metadata needs room too, so the last bytes would fail anyway. */
export const SPACE_RESERVE_BYTES = 256 * 1024;

function attachmentHeader(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export interface UploadOptions {
  driver: BoardDriver;
  applyId: string;
  timeoutMs: number;
  /** Aborted when the apply closes mid-transfer (src/server/files/inflight.ts); its reason is the answer. */
  signal?: AbortSignal;
}

export async function receiveUpload(
  req: FastifyRequest,
  reply: FastifyReply,
  opts: UploadOptions,
): Promise<UploadFileResponse> {
  if (!req.isMultipart())
    throw badRequest(
      'Expected a multipart form with the fields applyId and path, then files',
      FileErrorKey.uploadField,
    );
  const { driver } = opts;
  const fields: Record<string, string> = {};
  const done: UploadFileResponse['files'] = [];
  let current: Readable | null = null;
  let failure: unknown = null;
  const fail = (err: unknown) => {
    failure ??= err;
    current?.destroy(err as Error);
  };
  const deadline = setTimeout(() => fail(transferTimeout()), opts.timeoutMs);
  const onClose = () => {
    if (!req.raw.complete) fail(aborted());
  };
  req.raw.on('close', onClose);
  const onAbort = () => fail(opts.signal?.reason);
  opts.signal?.addEventListener('abort', onAbort);
  const space = { left: Number.POSITIVE_INFINITY };
  let folder: string | null = null;
  try {
    for await (const part of req.parts() as AsyncIterableIterator<Multipart>) {
      if (failure) throw failure;
      if (part.type === 'field') {
        fields[part.fieldname] = String(part.value);
        continue;
      }
      current = part.file;
      if (folder === null) {
        const parsed = uploadFields.safeParse(fields);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw badRequest(
            `Invalid ${String(issue.path[0] ?? 'field')}: ${issue.message}`,
            FileErrorKey.uploadField,
          );
        }
        if (parsed.data.applyId && parsed.data.applyId !== opts.applyId) throw notFound();
        folder = resolvePath(parsed.data.path);
        const dir = await guarded(() => driver.files.stat(folder as string));
        if (dir.type !== 'dir') throw badRequest('The upload target is not a folder', FileErrorKey.notDir);
        const free = await guarded(() => driver.files.freeSpace(folder as string));
        // A driver that cannot tell leaves the board's own ENOSPC as the only limit.
        space.left = Number.isFinite(free) ? free - SPACE_RESERVE_BYTES : Number.POSITIVE_INFINITY;
        // The whole request is at least as large as its files: refuse before reading a byte.
        const declared = Number(req.headers['content-length']);
        if (Number.isFinite(declared) && declared > space.left + SPACE_RESERVE_BYTES) throw noSpace();
      }
      const name = fileName.safeParse(part.filename);
      if (!name.success)
        throw badRequest(`Invalid file name: ${name.error.issues[0].message}`, FileErrorKey.invalid);
      const target = normalizeBoardPath(name.data, folder);
      if (target === null) throw badRequest('The path leaves the board root', FileErrorKey.outsideRoot);
      const existing = await driver.files.stat(target).catch(() => null);
      if (existing?.type === 'dir') throw badRequest(`${target} is a folder`, FileErrorKey.isDir);
      const sink = await guarded(() => driver.files.createWriteStream(target));
      // A write in flight when the sink is aborted fails once more; pump has reported what mattered.
      sink.stream.on('error', () => {});
      let size = 0;
      try {
        if (failure) throw failure;
        size = await pump(part.file, sink.stream, space);
        if (failure) throw failure;
        if (part.file.truncated) throw badRequest('The file is larger than allowed', FileErrorKey.tooLarge);
        await guarded(() => sink.commit());
      } catch (err) {
        await settleWithin(sink.abort(), ABORT_GRACE_MS);
        throw failure ?? asAppError(err);
      }
      current = null;
      done.push({ name: name.data, path: target, size });
    }
    if (failure) throw failure;
  } catch (err) {
    // The rest of the body is not read: close the connection rather than leave it half-consumed.
    reply.header('connection', 'close');
    throw failure ?? asAppError(err);
  } finally {
    clearTimeout(deadline);
    req.raw.off('close', onClose);
    opts.signal?.removeEventListener('abort', onAbort);
  }
  if (!done.length) throw badRequest('The upload holds no file', FileErrorKey.uploadField);
  return { files: done };
}

/** Every entry under `dir`, depth first, as paths relative to `dir`; symlinks are not descended into. */
async function* walk(
  driver: BoardDriver,
  dir: string,
  rel: string,
): AsyncGenerator<{ entry: FileEntry; rel: string }> {
  const entries = await driver.files.list(dir);
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    const r = rel ? `${rel}/${entry.name}` : entry.name;
    yield { entry, rel: r };
    if (entry.type === 'dir') yield* walk(driver, entry.path, r);
  }
}

function packFolder(driver: BoardDriver, dir: FileEntry, top: string): Readable {
  const pack = tar.pack();
  const run = async () => {
    pack.entry({ name: `${top}/`, type: 'directory', mode: dir.mode & 0o7777, mtime: new Date(dir.mtimeMs) });
    for await (const { entry, rel } of walk(driver, dir.path, '')) {
      if (pack.destroyed) return;
      const name = `${top}/${rel}`;
      const header = { name, mode: entry.mode & 0o7777, mtime: new Date(entry.mtimeMs) };
      if (entry.type === 'dir') {
        pack.entry({ ...header, name: `${name}/`, type: 'directory' });
      } else if (entry.type === 'file') {
        const src = await driver.files.createReadStream(entry.path);
        const sink = pack.entry({ ...header, type: 'file', size: entry.size });
        await pipeline(src, exactly(entry.size), sink);
      } else if (entry.type === 'symlink') {
        // The link travels as a link with its own text, never followed: a link that points outside
        // the board must not turn into the content of a host file.
        const linkname = await driver.files.readlink(entry.path);
        pack.entry({ ...header, mode: 0o777, type: 'symlink', linkname });
      }
      // Sockets, fifos and devices are left out: they have no content to carry.
    }
    pack.finalize();
  };
  run().catch((err) => pack.destroy(err));
  return pack as unknown as Readable;
}

/** A file's validator for resumed downloads: it changes when the file's size or modification time does. */
export function fileEtag(st: Pick<FileEntry, 'size' | 'mtimeMs'>): string {
  return `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
}

/**
 * The part of a file of `size` bytes a `Range` header asks for (RFC 9110 §14): one range, `bytes=N-`
 * or `bytes=N-M`. Null means "send it all" (no header, a header this does not serve — several ranges,
 * a suffix, another unit — or an `If-Range` naming another version); 'unsatisfiable' means N is past
 * the end (answered 416).
 */
export function byteRange(
  range: string | undefined,
  ifRange: string | undefined,
  size: number,
  etag: string,
): { start: number; end: number } | 'unsatisfiable' | null {
  if (!range) return null;
  if (ifRange !== undefined && ifRange !== etag) return null;
  const m = /^bytes=(\d{1,15})-(\d{0,15})$/.exec(range.trim());
  if (!m) return null;
  const start = Number(m[1]);
  const end = m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
  if (m[2] && Number(m[2]) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

/**
 * Streams a file, or a folder as tar. A file answers `Accept-Ranges` and an `ETag`, and a `Range` (with
 * `If-Range`) gets 206 and the rest of it, so an interrupted download resumes where it stopped.
 */
export async function sendDownload(
  driver: BoardDriver,
  filePath: string,
  reply: FastifyReply,
  timeoutMs: number,
  headers: { range?: string; ifRange?: string } = {},
): Promise<Readable> {
  const path = resolvePath(filePath);
  const st = await guarded(() => driver.files.stat(path));
  const name = path === '/' ? 'root' : path.slice(path.lastIndexOf('/') + 1);
  const out = new PassThrough();
  reply.header('content-type', 'application/octet-stream');
  if (st.type === 'dir') {
    reply.header('content-disposition', attachmentHeader(`${name}.tar`));
    pipeline(packFolder(driver, st, name), out).catch(() => {});
  } else if (st.type === 'file') {
    const etag = fileEtag(st);
    const part = byteRange(headers.range, headers.ifRange, st.size, etag);
    reply.header('accept-ranges', 'bytes');
    reply.header('etag', etag);
    reply.header('content-disposition', attachmentHeader(name));
    if (part === 'unsatisfiable') {
      reply.code(416);
      reply.header('content-range', `bytes */${st.size}`);
      reply.header('content-length', '0');
      out.end();
      return out;
    }
    const start = part?.start ?? 0;
    const length = part ? part.end - part.start + 1 : st.size;
    const src = await guarded(() => driver.files.createReadStream(path, { start }));
    if (part) {
      reply.code(206);
      reply.header('content-range', `bytes ${part.start}-${part.end}/${st.size}`);
    }
    reply.header('content-length', String(length));
    pipeline(src, exactly(length), out).catch(() => {});
  } else if (st.type === 'symlink') {
    // The driver follows the link inside the board; its target's size is unknown here, so no length.
    const src = await driver.files.createReadStream(path).catch(async (err) => {
      const e = asAppError(err);
      if (!(e instanceof AppError) || e.key !== FileErrorKey.isDir) throw e;
      return null;
    });
    if (src) {
      reply.header('content-disposition', attachmentHeader(name));
      pipeline(src, out).catch(() => {});
    } else {
      reply.header('content-disposition', attachmentHeader(`${name}.tar`));
      pipeline(packFolder(driver, { ...st, type: 'dir' }, name), out).catch(() => {});
    }
  } else {
    throw badRequest('Only files and folders can be downloaded', FileErrorKey.invalid);
  }
  const deadline = setTimeout(() => out.destroy(transferTimeout()), timeoutMs);
  out.on('close', () => clearTimeout(deadline));
  return out;
}
