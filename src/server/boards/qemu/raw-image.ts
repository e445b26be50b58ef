import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { DriverError } from '../driver.ts';
import { childSource, gzipSource, rawSource, type Source } from './image-source.ts';
import {
  ANY_DISK,
  aborted,
  BLOCK,
  CHUNK,
  formatOf,
  invalid,
  MIB,
  openImage,
  PARTITION_TABLE_BYTES,
  parsePartitionTable,
  RawImageError,
  readHead,
  SECTOR,
} from './raw-format.ts';

export { usrOnlyRoot } from './image-source.ts';
export {
  detectRawFormat,
  PARTITION_TABLE_BYTES,
  type PartitionInfo,
  parsePartitionTable,
  RawImageError,
  type RawImageErrorKey,
  type RawImageFormat,
} from './raw-format.ts';

export interface WriteResult {
  /** Size of the decompressed image, which is the disk file's logical size. */
  bytes: number;
  sha256: string;
  /** What the disk file takes on the file system (st_blocks × 512) after the write. */
  allocatedBytes: number;
}

const PROGRESS_BYTES = 64 * MIB;
const PROGRESS_MS = 250;

const ZEROS = Buffer.alloc(CHUNK);
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;

// ————— hashing —————

// sha256 over every byte, zeros included, costs more CPU than anything else here (2 GiB is over a
// second of a core): a worker thread does it, so it runs beside the reading and the writing and the
// service's event loop is never held for it. Buffers are shared, never copied.
const HASH_WORKER = `
const { parentPort } = require('node:worker_threads');
const hash = require('node:crypto').createHash('sha256');
parentPort.on('message', (m) => {
  if (m === null) return parentPort.postMessage(hash.digest('hex'));
  hash.update(new Uint8Array(m.sab, 0, m.len));
  parentPort.postMessage(m.len);
});`;

/** A Buffer over shared memory, which the hashing worker reads in place. */
const sharedBuffer = (bytes: number) => Buffer.from(new SharedArrayBuffer(bytes));

class Hasher {
  private readonly worker = new Worker(HASH_WORKER, { eval: true });
  private readonly waiting: Array<{ resolve: (v: unknown) => void; reject: (e: Error) => void }> = [];
  private failed: Error | null = null;

  constructor() {
    this.worker.on('message', (m) => this.waiting.shift()?.resolve(m));
    const fail = (err: Error) => {
      this.failed ??= err;
      for (const w of this.waiting.splice(0)) w.reject(err);
    };
    this.worker.on('error', fail);
    this.worker.on('exit', () => fail(new Error('The hashing worker ended')));
  }

  private ask(message: unknown): Promise<unknown> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.worker.postMessage(message);
    });
  }

  /** Hashes buf[0, len) next; settles once it is done (buf may then be refilled). */
  update(buf: Buffer, len: number): Promise<unknown> {
    return this.ask({ sab: buf.buffer, len });
  }

  async digest(): Promise<string> {
    return (await this.ask(null)) as string;
  }

  close(): void {
    this.worker.removeAllListeners('exit');
    void this.worker.terminate();
  }
}

// ————— write —————

/** The runs of non-zero 4 KiB blocks in buf[0, n), as [start, end) offsets. */
function dataRuns(buf: Buffer, n: number): Array<[number, number]> {
  if (buf.compare(ZEROS, 0, n, 0, n) === 0) return [];
  const runs: Array<[number, number]> = [];
  let start = -1;
  for (let off = 0; off < n; off += BLOCK) {
    const end = Math.min(off + BLOCK, n);
    const zero = buf.compare(ZEROS, 0, end - off, off, end) === 0;
    if (!zero && start < 0) start = off;
    else if (zero && start >= 0) {
      runs.push([start, off]);
      start = -1;
    }
  }
  if (start >= 0) runs.push([start, n]);
  return runs;
}

async function writeRuns(fh: fs.promises.FileHandle, buf: Buffer, n: number, pos: number): Promise<void> {
  for (const [start, end] of dataRuns(buf, n)) {
    let off = start;
    while (off < end) {
      const { bytesWritten } = await fh.write(buf, off, end - off, pos + off);
      off += bytesWritten;
    }
  }
}

function progress(onProgress?: (done: number) => void) {
  let lastBytes = 0;
  let lastAt = Date.now();
  return (done: number, final = false) => {
    if (!onProgress) return;
    const now = Date.now();
    if (final || done - lastBytes >= PROGRESS_BYTES || now - lastAt >= PROGRESS_MS) {
      lastBytes = done;
      lastAt = now;
      onProgress(done);
    }
  };
}

const noSpace = (err: unknown) =>
  ['ENOSPC', 'EDQUOT'].includes((err as NodeJS.ErrnoException).code ?? '')
    ? new DriverError('flash.no_space', `The board's disk is full: ${(err as Error).message}`)
    : err;

/**
 * Streams `src` (any RawImageFormat) decompressed into a NEW file `dest` (created with O_EXCL, mode
 * 0600, then fsync'd), writing only non-zero blocks (4 KiB granularity; zero blocks are skipped by
 * advancing the offset, ftruncate at the end, so holes are kept), computing the sha256 of the whole
 * decompressed stream as it goes. Refuses (RawImageError 'flash.image_too_large') a stream that
 * decompresses past `maxBytes` — decompression bombs stop there, not at the end. The decompressed size
 * must be a multiple of 512 and the result must carry a valid partition table (parsePartitionTable),
 * else 'flash.image_invalid'. `signal` aborts (DriverError 'flash.aborted', dest removed). A full disk
 * is DriverError 'flash.no_space'. onProgress(bytesDone) when 64 MiB more are done or 250 ms have
 * passed, whichever comes first (checked every 4 MiB), and once at the end.
 */
export async function writeRawImage(
  src: string,
  dest: string,
  opts: { maxBytes: number; signal?: AbortSignal; onProgress?: (done: number) => void },
): Promise<WriteResult> {
  const { signal } = opts;
  if (signal?.aborted) throw aborted();
  const input = await openImage(src);
  let output: fs.promises.FileHandle | null = null;
  let source: Source | null = null;
  let hasher: Hasher | null = null;
  // Four buffers in turn: one filling, the others being hashed and written.
  const slots = Array.from({ length: 4 }, () => ({
    buf: sharedBuffer(CHUNK),
    busy: null as Promise<unknown> | null,
  }));
  // Writes go one after another: concurrent writes to one file only queue on its inode lock (and
  // the kernel spins on that lock, burning the CPU the hash needs).
  let written: Promise<unknown> = Promise.resolve();
  const stop = () => source?.stop();
  signal?.addEventListener('abort', stop, { once: true });
  try {
    const st = await input.stat();
    const format = formatOf(await readHead(input, 2 * SECTOR), st.size);
    if (!format) throw invalid('Not a raw disk image (.img, .img.gz, .img.xz or .img.zst)');
    // O_EXCL: a file (or a link) already at dest is never written through or replaced.
    output = await fs.promises.open(dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
    // The worker starts while the sandbox does.
    hasher = new Hasher();
    source =
      format === 'img'
        ? rawSource(input)
        : format === 'img.gz'
          ? gzipSource(input)
          : await childSource(input, format);
    const head = Buffer.alloc(PARTITION_TABLE_BYTES);
    let headBytes = 0;
    const report = progress(opts.onProgress);
    let total = 0;
    for (let i = 0; ; i = (i + 1) % slots.length) {
      const slot = slots[i];
      // The buffer's last contents must be hashed and written before it is filled again.
      if (slot.busy) await slot.busy;
      slot.busy = null;
      const { buf } = slot;
      const n = await source.fill(buf);
      if (signal?.aborted) throw aborted();
      if (n === 0) break;
      if (total + n > opts.maxBytes)
        throw new RawImageError(
          'flash.image_too_large',
          `The image decompresses to more than ${opts.maxBytes} bytes`,
        );
      if (headBytes < PARTITION_TABLE_BYTES) {
        headBytes += buf.copy(head, headBytes, 0, Math.min(n, PARTITION_TABLE_BYTES - headBytes));
        // Garbage is refused at its first MiB, not after decompressing all of it. The disk's size is
        // not known yet: the table is checked in itself here, against the size at the end.
        if (headBytes === PARTITION_TABLE_BYTES) parsePartitionTable(head, ANY_DISK);
      }
      const fh = output;
      const at = total;
      written = written.then(() => writeRuns(fh, buf, n, at));
      slot.busy = Promise.all([hasher.update(buf, n), written]);
      slot.busy.catch(() => {});
      total += n;
      report(total);
    }
    await Promise.all(slots.map((s) => s.busy));
    const sha256 = await hasher.digest();
    await source.finished();
    if (total === 0 || total % SECTOR !== 0)
      throw invalid(`The image's ${total} bytes are not a whole number of 512-byte sectors`);
    parsePartitionTable(head.subarray(0, headBytes), total);
    await output.truncate(total);
    await output.sync();
    const allocatedBytes = (await output.stat()).blocks * 512;
    await output.close();
    output = null;
    report(total, true);
    return { bytes: total, sha256, allocatedBytes };
  } catch (err) {
    source?.stop();
    await Promise.allSettled(slots.map((s) => s.busy));
    if (output) {
      await output.close().catch(() => {});
      await fs.promises.rm(dest, { force: true });
    }
    if (signal?.aborted && !(err instanceof DriverError && err.key === 'flash.aborted')) throw aborted();
    throw noSpace(err);
  } finally {
    hasher?.close();
    signal?.removeEventListener('abort', stop);
    await input.close();
  }
}

/**
 * Reads `file` back (logical size and sha256 over every byte, holes read as zeros) and throws
 * RawImageError 'flash.verify_failed' unless both match. Reads are 4 MiB, each one done while the
 * ones before it are hashed (in the worker). `signal` aborts (DriverError 'flash.aborted'); onProgress as writeRawImage's.
 */
export async function verifyRawImage(
  file: string,
  expected: { bytes: number; sha256: string },
  opts: { signal?: AbortSignal; onProgress?: (done: number) => void } = {},
): Promise<void> {
  const { signal } = opts;
  if (signal?.aborted) throw aborted();
  const fh = await fs.promises.open(file, O_RDONLY | O_NOFOLLOW);
  const hasher = new Hasher();
  // Three buffers in turn: one being read (in the thread pool) while the ones before it are hashed.
  const slots = Array.from({ length: 3 }, () => ({
    buf: sharedBuffer(CHUNK),
    busy: null as Promise<unknown> | null,
  }));
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new RawImageError('flash.verify_failed', 'The disk is not a regular file');
    if (st.size !== expected.bytes)
      throw new RawImageError('flash.verify_failed', `The disk has ${st.size} bytes, not ${expected.bytes}`);
    const report = progress(opts.onProgress);
    let done = 0;
    for (let i = 0; done < expected.bytes; i = (i + 1) % slots.length) {
      const slot = slots[i];
      if (slot.busy) await slot.busy;
      const { bytesRead } = await fh.read(slot.buf, 0, Math.min(CHUNK, expected.bytes - done), done);
      if (signal?.aborted) throw aborted();
      if (bytesRead === 0) break;
      slot.busy = hasher.update(slot.buf, bytesRead);
      slot.busy.catch(() => {});
      done += bytesRead;
      report(done);
    }
    await Promise.all(slots.map((s) => s.busy));
    if (done !== expected.bytes)
      throw new RawImageError(
        'flash.verify_failed',
        `The disk read back ${done} bytes, not ${expected.bytes}`,
      );
    const sha256 = await hasher.digest();
    if (sha256 !== expected.sha256)
      throw new RawImageError(
        'flash.verify_failed',
        `The disk reads back as sha256 ${sha256}, not ${expected.sha256}`,
      );
    report(done, true);
  } finally {
    hasher.close();
    await fh.close();
  }
}
