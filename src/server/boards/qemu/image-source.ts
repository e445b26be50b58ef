// Where a raw image's decompressed bytes come from: the file itself (positional reads into the caller's
// buffer), gzip in process, or `xz -dc` / `zstd -dc` as a child in a bubblewrap sandbox that sees
// nothing of the host but /usr read-only, reads the image from the descriptor the service opened,
// writes into a 1 MiB pipe read straight into the caller's buffers, and is capped in memory.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { DriverError } from '../driver.ts';
import { aborted, invalid, MIB } from './raw-format.ts';

const { O_RDONLY, O_RDWR, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

/** The decompressors' memory budget (a zstd window or an xz dictionary larger than this is refused). */
const DECOMPRESSOR_MEMORY = 128 * MIB;
/** Their address space, a second cap should their own accounting be wrong. */
const DECOMPRESSOR_ADDRESS_SPACE = 1024 * MIB;

// ————— decompression —————

/** Something that fills a buffer with the next bytes of the decompressed stream (0 at its end). */
export interface Source {
  fill(buf: Buffer): Promise<number>;
  /** Settles once the decompressor has ended; rejects when it failed. */
  finished(): Promise<void>;
  /** Stops the decompressor at once (a failure, an abort). */
  stop(): void;
}

/** A raw image: positional reads straight into the buffer, no copy. */
export function rawSource(fh: fs.promises.FileHandle): Source {
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

export function gzipSource(fh: fs.promises.FileHandle): Source {
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
export async function childSource(fh: fs.promises.FileHandle, format: 'img.xz' | 'img.zst'): Promise<Source> {
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
