// Raw disk images for QEMU boards: a board's disk is one raw file the board owns, and flashing writes
// an image (`.img`, or one compressed as `.img.gz`, `.img.xz`, `.img.zst`) into a new such file.
// Images are uploaded by users, so every byte of one is hostile: nothing here mounts an image, loop-
// attaches it or resolves a path inside it; what is learnt of an image is learnt by parsing its
// partition table, bounds-checked against the disk.
//
// One write owns, from start to end: the image's descriptor (opened without following a link), the
// decompressor (zlib in process for gzip; `xz -dc` / `zstd -dc` as a child in a bubblewrap sandbox
// that sees nothing of the host but /usr read-only, reads the image from the descriptor the service
// opened, writes into a 1 MiB pipe, and is capped in memory), a worker thread that hashes, and the new
// disk file (created with O_EXCL, so nothing that was there is ever written through). Data flows in
// four 4 MiB buffers in turn: one is filled straight from the pipe (or the file) while the ones before
// it are hashed (in the worker, in order) and their non-zero 4 KiB blocks written at their offsets (one
// write at a time), so zeros become holes and the sha256 of the whole stream is known when the last
// write lands. The size is checked against the limit at every buffer (a decompression bomb stops
// there), the partition table as soon as the first MiB is in and again against the final size. Any
// failure or abort kills the decompressor and removes the half-written file.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import zlib from 'node:zlib';
import { DriverError } from '../driver.ts';

export type RawImageFormat = 'img' | 'img.gz' | 'img.xz' | 'img.zst';

export interface PartitionInfo {
  /** The partition's number as the kernel names it (1-based: GPT entry index + 1, MBR slot + 1). */
  index: number;
  startBytes: number;
  sizeBytes: number;
  /** GPT: the type GUID, upper case, in its usual text form. */
  typeGuid?: string;
  /** MBR: the partition type byte. */
  mbrType?: number;
  /** GPT: the partition's name (control characters dropped). */
  name?: string;
  /** MBR: the active flag. GPT: the legacy-BIOS-bootable attribute, or an EFI system partition. */
  bootable: boolean;
}

/** Stable keys of what a raw image write or read-back refuses (worded by locales/<lng>/flash.json). */
export type RawImageErrorKey = 'flash.image_invalid' | 'flash.image_too_large' | 'flash.verify_failed';

export class RawImageError extends DriverError {
  constructor(
    override readonly key: RawImageErrorKey,
    message: string,
  ) {
    super(key, message);
  }
}

export interface WriteResult {
  /** Size of the decompressed image, which is the disk file's logical size. */
  bytes: number;
  sha256: string;
  /** What the disk file takes on the file system (st_blocks × 512) after the write. */
  allocatedBytes: number;
}

const MIB = 1024 * 1024;
const SECTOR = 512;
const BLOCK = 4096;
const CHUNK = 4 * MIB;
/** What parsePartitionTable needs of a disk's start: the MBR, the GPT header and its entries. */
export const PARTITION_TABLE_BYTES = MIB;
/** The decompressors' memory budget (a zstd window or an xz dictionary larger than this is refused). */
const DECOMPRESSOR_MEMORY = 128 * MIB;
/** Their address space, a second cap should their own accounting be wrong. */
const DECOMPRESSOR_ADDRESS_SPACE = 1024 * MIB;
/** The largest disk a table may describe before the disk's real size is known. */
const ANY_DISK = Number.MAX_SAFE_INTEGER - (Number.MAX_SAFE_INTEGER % SECTOR);
const PROGRESS_BYTES = 64 * MIB;
const PROGRESS_MS = 250;

const ZEROS = Buffer.alloc(CHUNK);
const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

const invalid = (message: string) => new RawImageError('flash.image_invalid', message);
const aborted = () => new DriverError('flash.aborted', 'The flash was stopped');

// ————— format —————

function formatOf(head: Buffer, size: number): RawImageFormat | null {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'img.gz';
  if (head.length >= 6 && head.subarray(0, 6).equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])))
    return 'img.xz';
  if (head.length >= 4 && head.readUInt32LE(0) === 0xfd2fb528) return 'img.zst';
  if (size === 0 || size % SECTOR !== 0) return null;
  if (head.length >= SECTOR && head[510] === 0x55 && head[511] === 0xaa) return 'img';
  if (head.length >= SECTOR + 8 && head.toString('latin1', SECTOR, SECTOR + 8) === 'EFI PART') return 'img';
  return null;
}

async function readHead(fh: fs.promises.FileHandle, bytes: number): Promise<Buffer> {
  const buf = Buffer.alloc(bytes);
  let n = 0;
  while (n < bytes) {
    const { bytesRead } = await fh.read(buf, n, bytes - n, n);
    if (bytesRead === 0) break;
    n += bytesRead;
  }
  return buf.subarray(0, n);
}

/** Opens an image for reading: never through a link, and only a regular file. */
async function openImage(file: string): Promise<fs.promises.FileHandle> {
  const fh = await fs.promises.open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!(await fh.stat()).isFile()) {
    await fh.close();
    throw invalid('The image is not a regular file');
  }
  return fh;
}

/**
 * By magic bytes only (gzip 1f8b, xz fd377a585a00, zstd 28b52ffd; else 'img' when the file is a raw
 * disk: size a multiple of 512 and an MBR boot signature 55aa at 510 or 'EFI PART' at 512); null
 * otherwise. A link, or a missing file, is an error of its own (ELOOP, ENOENT).
 */
export async function detectRawFormat(file: string): Promise<RawImageFormat | null> {
  const fh = await fs.promises.open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) return null;
    return formatOf(await readHead(fh, 2 * SECTOR), st.size);
  } finally {
    await fh.close();
  }
}

// ————— partition table —————

const ESP_GUID = 'C12A7328-F81F-11D2-BA4B-00A0C93EC93B';
/** GPT attribute bit 2: legacy BIOS bootable. */
const GPT_LEGACY_BOOTABLE = 1n << 2n;

/** A 64-bit little-endian field as a number; past 2^53 it is out of every bound, so Infinity. */
function u64(buf: Buffer, off: number): number {
  const v = buf.readBigUInt64LE(off);
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(v);
}

function guidText(b: Buffer): string {
  const h = (s: Buffer) => s.toString('hex');
  const le = (s: Buffer) => h(Buffer.from(s).reverse());
  return `${le(b.subarray(0, 4))}-${le(b.subarray(4, 6))}-${le(b.subarray(6, 8))}-${h(b.subarray(8, 10))}-${h(b.subarray(10, 16))}`.toUpperCase();
}

function gptName(b: Buffer): string {
  let end = 0;
  while (end + 1 < b.length && (b[end] !== 0 || b[end + 1] !== 0)) end += 2;
  return b.toString('utf16le', 0, end).replace(/[\u0000-\u001f\u007f]/g, '');
}

function checkOverlaps(parts: PartitionInfo[]): void {
  const sorted = [...parts].sort((a, b) => a.startBytes - b.startBytes);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1];
    if (prev.startBytes + prev.sizeBytes > sorted[i].startBytes)
      throw invalid(`Partitions ${prev.index} and ${sorted[i].index} overlap`);
  }
}

function parseGpt(head: Buffer, sectors: number): PartitionInfo[] {
  if (head.length < 2 * SECTOR) throw invalid('The disk ends inside its GPT header');
  const h = head.subarray(SECTOR, 2 * SECTOR);
  if (h.toString('latin1', 0, 8) !== 'EFI PART') throw invalid('A protective MBR without a GPT header');
  if (h.readUInt32LE(8) !== 0x00010000) throw invalid('Unknown GPT revision');
  const headerSize = h.readUInt32LE(12);
  if (headerSize < 92 || headerSize > SECTOR) throw invalid(`GPT header size ${headerSize} is out of bounds`);
  const header = Buffer.from(h.subarray(0, headerSize));
  header.writeUInt32LE(0, 16);
  if (zlib.crc32(header) !== h.readUInt32LE(16)) throw invalid('GPT header CRC32 mismatch');
  if (u64(h, 24) !== 1) throw invalid('The GPT header does not say it is at LBA 1');
  const backup = u64(h, 32);
  const firstUsable = u64(h, 40);
  const lastUsable = u64(h, 48);
  const entriesLba = u64(h, 72);
  const count = h.readUInt32LE(80);
  const entrySize = h.readUInt32LE(84);
  if (backup <= 1 || backup >= sectors) throw invalid('The backup GPT header lies beyond the disk');
  if (firstUsable > lastUsable || lastUsable >= backup)
    throw invalid('The GPT usable area overlaps the backup header or lies beyond the disk');
  if (entrySize < 128 || entrySize > SECTOR || entrySize % 128 !== 0 || (entrySize & (entrySize - 1)) !== 0)
    throw invalid(`GPT entry size ${entrySize} is not supported`);
  const arrayBytes = count * entrySize;
  if (count === 0 || arrayBytes > PARTITION_TABLE_BYTES - 2 * SECTOR)
    throw invalid(`GPT entry count ${count} is out of bounds`);
  const arrayStart = entriesLba * SECTOR;
  if (entriesLba < 2 || entriesLba + Math.ceil(arrayBytes / SECTOR) > firstUsable)
    throw invalid('The GPT entries overlap the header or the usable area');
  if (arrayStart + arrayBytes > Math.min(head.length, sectors * SECTOR))
    throw invalid('The GPT entries lie beyond the disk or past its first MiB');
  const array = head.subarray(arrayStart, arrayStart + arrayBytes);
  if (zlib.crc32(array) !== h.readUInt32LE(88)) throw invalid('GPT entries CRC32 mismatch');
  const parts: PartitionInfo[] = [];
  for (let i = 0; i < count; i++) {
    const e = array.subarray(i * entrySize, (i + 1) * entrySize);
    const type = e.subarray(0, 16);
    if (type.equals(ZEROS.subarray(0, 16))) continue;
    const first = u64(e, 32);
    const last = u64(e, 40);
    if (first > last || first < firstUsable || last > lastUsable)
      throw invalid(`GPT partition ${i + 1} lies outside the usable area`);
    const typeGuid = guidText(type);
    parts.push({
      index: i + 1,
      startBytes: first * SECTOR,
      sizeBytes: (last - first + 1) * SECTOR,
      typeGuid,
      name: gptName(e.subarray(56, 128)),
      bootable: typeGuid === ESP_GUID || (e.readBigUInt64LE(48) & GPT_LEGACY_BOOTABLE) !== 0n,
    });
  }
  return parts;
}

/**
 * Parses a GPT (protective MBR + header at LBA 1, entries, CRC32 of header and entries checked) or a
 * plain MBR from the first bytes of a disk (PARTITION_TABLE_BYTES of them suffice; less when the disk is
 * smaller); throws RawImageError on anything malformed or out of bounds (entries beyond the disk,
 * overlapping, absurd counts), and on a table with no partition (it boots nothing). Sectors are 512
 * bytes. The backup GPT is not read; an MBR's extended partition is reported, not walked (its logical
 * partitions' records lie anywhere on the disk).
 */
export function parsePartitionTable(
  head: Buffer,
  diskBytes: number,
): { scheme: 'gpt' | 'mbr'; partitions: PartitionInfo[] } {
  if (!Number.isSafeInteger(diskBytes) || diskBytes < SECTOR || diskBytes % SECTOR !== 0)
    throw invalid(`A disk of ${diskBytes} bytes is not a whole number of sectors`);
  if (head.length < SECTOR) throw invalid('The disk is shorter than its partition table');
  if (head[510] !== 0x55 || head[511] !== 0xaa) throw invalid('No partition table (no MBR boot signature)');
  const sectors = diskBytes / SECTOR;
  const slots = [0, 1, 2, 3].map((i) => head.subarray(446 + 16 * i, 446 + 16 * (i + 1)));
  let scheme: 'gpt' | 'mbr' = 'mbr';
  let partitions: PartitionInfo[];
  if (slots.some((e) => e[4] === 0xee)) {
    scheme = 'gpt';
    partitions = parseGpt(head, sectors);
  } else {
    partitions = [];
    slots.forEach((e, i) => {
      const type = e[4];
      if (type === 0) return;
      const status = e[0];
      const start = e.readUInt32LE(8);
      const size = e.readUInt32LE(12);
      if (status !== 0 && status !== 0x80) throw invalid(`MBR partition ${i + 1} has a bad status byte`);
      if (start === 0 || size === 0 || start + size > sectors)
        throw invalid(`MBR partition ${i + 1} lies outside the disk`);
      partitions.push({
        index: i + 1,
        startBytes: start * SECTOR,
        sizeBytes: size * SECTOR,
        mbrType: type,
        bootable: status === 0x80,
      });
    });
  }
  if (!partitions.length) throw invalid('The partition table has no partition');
  checkOverlaps(partitions);
  return { scheme, partitions };
}

// ————— decompression —————

/** Something that fills a buffer with the next bytes of the decompressed stream (0 at its end). */
interface Source {
  fill(buf: Buffer): Promise<number>;
  /** Settles once the decompressor has ended; rejects when it failed. */
  finished(): Promise<void>;
  /** Stops the decompressor at once (a failure, an abort). */
  stop(): void;
}

/** A raw image: positional reads straight into the buffer, no copy. */
function rawSource(fh: fs.promises.FileHandle): Source {
  let pos = 0;
  return {
    async fill(buf) {
      let n = 0;
      while (n < buf.length) {
        const { bytesRead } = await fh.read(buf, n, buf.length - n, pos);
        if (bytesRead === 0) break;
        n += bytesRead;
        pos += bytesRead;
      }
      return n;
    },
    finished: async () => {},
    stop() {},
  };
}

/** Chunks of a readable stream gathered into whole buffers. */
function streamFiller(stream: Readable): (buf: Buffer) => Promise<number> {
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let rest: Buffer | null = null;
  return async (buf) => {
    let n = 0;
    while (n < buf.length) {
      let c = rest;
      rest = null;
      if (!c) {
        const r = await it.next();
        if (r.done) break;
        c = r.value;
      }
      const k = c.copy(buf, n);
      n += k;
      if (k < c.length) rest = c.subarray(k);
    }
    return n;
  };
}

function gzipSource(fh: fs.promises.FileHandle): Source {
  const input = fh.createReadStream({ start: 0, highWaterMark: MIB, autoClose: false });
  const gunzip = zlib.createGunzip({ chunkSize: 256 * 1024 });
  input.on('error', (err) => gunzip.destroy(err));
  input.pipe(gunzip);
  const fill = streamFiller(gunzip);
  return {
    fill: (buf) =>
      fill(buf).catch((err: Error) => {
        throw invalid(`The gzip stream is corrupt: ${err.message}`);
      }),
    finished: async () => {},
    stop() {
      input.destroy();
      gunzip.destroy();
    },
  };
}

let bwrapPath: string | null | undefined;
function findBwrap(): string | null {
  if (bwrapPath !== undefined) return bwrapPath;
  bwrapPath = null;
  for (const dir of ['/usr/bin', '/usr/local/bin', '/bin']) {
    const p = path.join(dir, 'bwrap');
    try {
      fs.accessSync(p, fs.constants.X_OK);
      bwrapPath = p;
      break;
    } catch {}
  }
  return bwrapPath;
}

/**
 * The sandbox a decompressor runs in: new namespaces of every kind (no network), no capabilities, its
 * own session (no terminal to inject into), the host's /usr read-only and nothing else (a read-only
 * empty root, a minimal /dev and /proc), a clean environment, and an address-space limit.
 */
/**
 * bubblewrap arguments of a root that holds the host's /usr read-only and nothing else of it: the
 * usual links into /usr, a minimal /dev and a /proc of the sandbox's own PID namespace.
 */
export function usrOnlyRoot(): string[] {
  const links = fs.existsSync('/usr/lib64') ? ['--symlink', 'usr/lib64', '/lib64'] : [];
  return [
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/lib',
    '/lib',
    ...links,
    '--symlink',
    'usr/bin',
    '/bin',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
  ];
}

function sandboxArgs(argv: string[]): string[] {
  return [
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    ...usrOnlyRoot(),
    '--remount-ro',
    '/',
    '--chdir',
    '/',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--cap-drop',
    'ALL',
    '--',
    'prlimit',
    `--as=${DECOMPRESSOR_ADDRESS_SPACE}`,
    '--',
    ...argv,
  ];
}

const DECOMPRESSORS = {
  'img.xz': ['xz', '-dc', '-q', '--format=xz', `--memlimit-decompress=${DECOMPRESSOR_MEMORY / MIB}MiB`],
  'img.zst': ['zstd', '-dc', '-q', '--format=zstd', `--memory=${DECOMPRESSOR_MEMORY / MIB}MB`],
} as const;

/**
 * The read end of the pipe the decompressor writes: read straight into the caller's buffers (Node's
 * `onread` with a buffer of ours, no chunk allocated or copied), paused whenever no buffer waits. A
 * read that lands while none waits goes to a small spill buffer, copied out at the next fill.
 */
class PipeReader {
  private readonly spill = Buffer.allocUnsafe(64 * 1024);
  private spilled = 0;
  private target: Buffer | null = null;
  private filled = 0;
  private ended = false;
  private failed: Error | null = null;
  private settle: ((err: Error | null) => void) | null = null;
  readonly socket: net.Socket;

  constructor(fd: number) {
    this.socket = new net.Socket({
      fd,
      readable: true,
      writable: false,
      onread: { buffer: () => this.nextBuffer(), callback: (n: number, buf: Uint8Array) => this.got(n, buf) },
    } as net.SocketConstructorOpts);
    this.socket.on('end', () => {
      this.ended = true;
      this.done(null);
    });
    this.socket.on('error', (err) => {
      this.failed = err;
      this.done(err);
    });
    this.socket.on('close', () => {
      this.ended = true;
      this.done(null);
    });
  }

  private nextBuffer(): Uint8Array {
    return this.target && this.filled < this.target.length ? this.target.subarray(this.filled) : this.spill;
  }

  /** Answers whether to go on reading. */
  private got(n: number, buf: Uint8Array): boolean {
    if (buf !== this.spill) this.filled += n;
    else if (!this.target) this.spilled = n;
    else {
      const k = this.spill.copy(this.target, this.filled, 0, n);
      this.filled += k;
      if (k < n) {
        this.spill.copyWithin(0, k, n);
        this.spilled = n - k;
      }
    }
    if (this.target && this.filled < this.target.length) return true;
    this.done(null);
    return false;
  }

  private done(err: Error | null): void {
    const settle = this.settle;
    this.settle = null;
    this.target = null;
    settle?.(err);
  }

  fill(buf: Buffer): Promise<number> {
    this.target = buf;
    this.filled = 0;
    if (this.spilled) {
      this.filled = this.spill.copy(buf, 0, 0, this.spilled);
      this.spilled = 0;
    }
    if (this.failed) return Promise.reject(this.failed);
    if (this.ended || this.filled === buf.length) {
      this.target = null;
      return Promise.resolve(this.filled);
    }
    return new Promise<number>((resolve, reject) => {
      const filled = () => this.filled;
      this.settle = (err) => (err ? reject(err) : resolve(filled()));
      this.socket.resume();
    });
  }

  close(): void {
    this.done(null);
    this.socket.destroy();
  }
}

/** F_SETPIPE_SZ: the pipe grown to 1 MiB (the most an unprivileged process may), via Perl (Debian's perl-base is essential). */
const GROW_PIPE = [
  'perl',
  '-e',
  'fcntl(STDOUT, 1031, 1048576); exec { $ARGV[0] } @ARGV or die "exec: $!\\n"',
];

/**
 * xz or zstd in the sandbox, its stdin the image's descriptor, its stdout a pipe (a FIFO, the one
 * pipe Node can make, its name removed at once) grown to 1 MiB: the decompressor runs ahead a whole
 * MiB while the service is busy, and each read takes up to a MiB.
 */
async function childSource(fh: fs.promises.FileHandle, format: 'img.xz' | 'img.zst'): Promise<Source> {
  const bwrap = findBwrap();
  if (!bwrap)
    throw new DriverError('driver.sandbox_missing', 'bubblewrap (bwrap) is not installed: cannot decompress');
  const tool = DECOMPRESSORS[format][0];
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'bianbu-raw-'));
  let writeFd: number;
  let readFd: number;
  try {
    const fifo = path.join(dir, 'out');
    await new Promise<void>((resolve, reject) =>
      execFile('mkfifo', ['-m', '600', fifo], (err) => (err ? reject(err) : resolve())),
    );
    // O_RDWR: the write end opens without waiting for a reader; then ours, which never blocks.
    writeFd = fs.openSync(fifo, O_RDWR | O_NOFOLLOW);
    readFd = fs.openSync(fifo, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
  const argv = fs.existsSync('/usr/bin/perl')
    ? [...GROW_PIPE, ...DECOMPRESSORS[format]]
    : [...DECOMPRESSORS[format]];
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(bwrap, sandboxArgs(argv), {
      stdio: [fh.fd, writeFd, 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
    });
  } catch (err) {
    fs.closeSync(readFd);
    throw err;
  } finally {
    // The child holds the write end now: when it exits, the read end sees the end of the stream.
    fs.closeSync(writeFd);
  }
  const reader = new PipeReader(readFd);
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-1000);
  });
  let stopped = false;
  const exit = new Promise<void>((resolve, reject) => {
    child.on('error', (err) =>
      reject(new DriverError('driver.failed', `${tool} did not start: ${err.message}`)),
    );
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else if (stopped) reject(aborted());
      else reject(invalid(`${tool} refused the image (${signal ?? `exit ${code}`}): ${stderr.trim()}`));
    });
  });
  exit.catch(() => {});
  return {
    fill: (buf) => reader.fill(buf),
    finished: () => exit,
    stop() {
      stopped = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      reader.close();
    },
  };
}

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
