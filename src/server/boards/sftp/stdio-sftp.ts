// ssh2's SFTP client over a plain byte pipe: the stdin/stdout of an OpenSSH `sftp-server` that the
// caller spawned (inside a board's sandbox, or on the host in tests), with no SSH transport between.
// The object answered is the same SFTPWrapper the ssh driver gets from `client.sftp()`, so one file
// implementation (sftp-files.ts) serves both drivers.
//
// Lifecycle: INIT is sent at once; the promise settles on VERSION (and, when the server offers it, the
// limits@openssh.com reply that sets the read/write sizes), or fails on a timeout, an early end or a
// protocol error, killing the process. Afterwards the session lives until the process ends (its stdout
// ends or errs) or the caller ends it (`sftp.end()`: stdin is closed, which makes sftp-server exit,
// and the process is killed if it lingers). At the end every outstanding request fails, 'close' is
// emitted once, and later requests fail at once instead of waiting for an answer that cannot come.
//
// ssh2's SFTP class normally sits on an SSH channel. It sends through `client._protocol.channelData`
// and honours the channel's outgoing window (buffering what does not fit until a window adjust).
// Here that window is the flow control of the pipe: while stdin accepts writes it is effectively
// infinite; when stdin.write() answers false the window drops to 0, so ssh2 queues further packets
// itself, and stdin's 'drain' reopens it and flushes the queue, as a window adjust would. Incoming
// data has no window to keep (nothing decrements it but ssh2's channel code, which is not involved).
//
// Bulk data bypasses ssh2's copies (`bulkOf(sftp)`, used by sftp-streams.ts): ssh2 copies every WRITE's
// data into a fresh packet and every DATA answer into a fresh packet and again into the caller's
// buffer, and at hundreds of MiB/s those large short-lived buffers are what the process spends its
// time on (each 64 MiB of them forces a full garbage collection). Here a WRITE goes out as its header
// followed by the caller's own buffers in one writev, and the DATA answer of a bulk READ is handed to
// its callback as slices of the chunks read from the pipe. Request ids and the table of outstanding
// requests stay ssh2's, so STATUS answers (EOF, errors) and the failing of every outstanding request at
// the end reach bulk requests the same way; every other packet passes to ssh2 unchanged.
import type { Readable, Writable } from 'node:stream';
import type { SFTPWrapper } from 'ssh2';
import sftpModule from 'ssh2/lib/protocol/SFTP.js';
import { DriverError } from '../driver.ts';

const { SFTP } = sftpModule;

/** The pipe ends of a spawned sftp-server. `kill()` ends the process (it must make stdout end). */
export interface SftpStdio {
  stdin: Writable;
  stdout: Readable;
  /** When given, its last lines are quoted in errors (sftp-server logs there with `-e`). */
  stderr?: Readable | null;
  kill(): void;
}

export interface StdioSftpOptions {
  /** Deadline of the INIT/VERSION handshake; default 10 s. */
  handshakeTimeoutMs?: number;
  /** How long after `end()` the process may take to exit on its own before it is killed; default 2 s. */
  exitGraceMs?: number;
  /**
   * Tell ssh2 the peer is OpenSSH (it enables 256 KiB reads and writes when the server does not
   * answer limits@openssh.com). Default true: the supported peer is OpenSSH's sftp-server.
   */
  openssh?: boolean;
  debug?: (msg: string) => void;
}

/** Far above any transfer; never reached, and set again after each packet anyway. */
const OPEN_WINDOW = 2 ** 52;
const STDERR_TAIL = 2048;

const SSH_FXP_READ = 5;
const SSH_FXP_WRITE = 6;
const SSH_FXP_DATA = 103;
/** length(4) type(1) id(4) of every answer, then a DATA answer's data length(4). */
const DATA_HEAD = 13;

/** Copy-free READ and WRITE over a stdio session (see the header). */
export interface BulkSftp {
  /** WRITE of `pieces` (`len` bytes in all) at `position`; the pieces are sent as they are. */
  write(
    handle: Buffer,
    pieces: readonly Buffer[],
    len: number,
    position: number,
    cb: (err?: Error) => void,
  ): void;
  /**
   * READ of at most `len` bytes at `position`. The data arrives as slices of the pipe's own chunks
   * (`nb` bytes in all); end of file answers `nb` 0.
   */
  read(
    handle: Buffer,
    len: number,
    position: number,
    cb: (err: Error | undefined, pieces: Buffer[], nb: number) => void,
  ): void;
}

const bulkSessions = new WeakMap<object, BulkSftp>();

/** The copy-free data path of a session opened by openSftpOverStdio (none for an SSH session). */
export function bulkOf(sftp: SFTPWrapper): BulkSftp | undefined {
  return bulkSessions.get(sftp);
}

/** A request header: length, type, id, handle, offset (and a WRITE's data length). */
function requestHead(
  type: number,
  reqid: number,
  handle: Buffer,
  position: number,
  len: number,
  dataLen: number,
): Buffer {
  const head = Buffer.allocUnsafe(4 + 1 + 4 + 4 + handle.length + 8 + 4);
  head.writeUInt32BE(head.length - 4 + dataLen, 0);
  head[4] = type;
  head.writeUInt32BE(reqid, 5);
  head.writeUInt32BE(handle.length, 9);
  handle.copy(head, 13);
  head.writeBigUInt64BE(BigInt(position), 13 + handle.length);
  head.writeUInt32BE(len, 21 + handle.length);
  return head;
}

export function openSftpOverStdio(io: SftpStdio, opts: StdioSftpOptions = {}): Promise<SFTPWrapper> {
  const handshakeMs = opts.handshakeTimeoutMs ?? 10_000;
  const graceMs = opts.exitGraceMs ?? 2_000;
  let ended = false;
  let stderrTail = '';
  let killTimer: NodeJS.Timeout | undefined;

  // The channel state ssh2 checks before sending. It stays 'open' for ssh2 even after the end: a
  // request made then reaches channelData below and fails at once (ssh2 would otherwise keep it
  // waiting for an answer forever). Our own notion of the end is `ended`.
  let state = 'open';
  const outgoing = {
    id: 0,
    window: OPEN_WINDOW,
    packetSize: OPEN_WINDOW,
    get state() {
      return state === 'closing' ? 'closing' : 'open';
    },
    set state(v: string) {
      state = v;
    },
  };
  const incoming = { id: 0, window: OPEN_WINDOW, packetSize: OPEN_WINDOW, state: 'open' };

  const stopSoon = () => {
    if (killTimer || !graceMs) return;
    killTimer = setTimeout(() => io.kill(), graceMs);
    killTimer.unref?.();
  };

  const transport = {
    _protocol: {
      _remoteIdentRaw: opts.openssh === false ? 'SSH-2.0-stdio' : 'SSH-2.0-OpenSSH_stdio',
      channelData: (_id: number, data: Buffer) => {
        if (ended) {
          // Fails this request (and any other still waiting) on the next tick, after ssh2 recorded it.
          process.nextTick(() => sftp.push(null));
          return;
        }
        const more = io.stdin.write(data);
        outgoing.window = more ? OPEN_WINDOW : 0;
      },
      channelClose: () => {
        if (ended) return;
        // sftp-server exits when its stdin ends; the timer covers one that does not.
        io.stdin.end();
        stopSoon();
      },
    },
  };

  const sftp = new SFTP(transport, { type: 'session', incoming, outgoing }, { debug: opts.debug });

  /** A bulk read's DATA answer being received (it is out of ssh2's table by then). */
  let taking: {
    pieces: Buffer[];
    nb: number;
    cb: (err: Error | undefined, pieces: Buffer[], nb: number) => void;
  } | null = null;

  const finish = (why: string) => {
    if (ended) return;
    ended = true;
    state = 'closed';
    if (killTimer) clearTimeout(killTimer);
    io.stdout.off('data', onData);
    // push(null) fails every outstanding request ("No response from server") and emits 'end'.
    sftp.push(null);
    const t = taking;
    taking = null;
    t?.cb(new Error('No response from server'), [], 0);
    if (!io.stdin.destroyed) io.stdin.destroy();
    io.kill();
    sftp.emit('close', why);
  };

  // ---- the bulk path (see the header) ----
  const bulkReads = new Map<
    number,
    { len: number; cb: (err: Error | undefined, pieces: Buffer[], nb: number) => void }
  >();
  const nextId = () => {
    sftp._writeReqid = (sftp._writeReqid + 1) >>> 0;
    return sftp._writeReqid;
  };
  /** Bulk packets held back while the pipe is full (each an array of pieces, sent as one writev). */
  const held: Buffer[][] = [];
  const writePacket = (bufs: readonly Buffer[]) => {
    io.stdin.cork();
    let more = true;
    for (const b of bufs) more = io.stdin.write(b);
    io.stdin.uncork();
    outgoing.window = more ? OPEN_WINDOW : 0;
  };
  const send = (bufs: Buffer[]) => {
    if (outgoing.window === 0 || held.length) held.push(bufs);
    else writePacket(bufs);
  };
  /** On 'drain': held bulk packets first, for as long as the pipe takes them. */
  const sendHeld = () => {
    while (held.length && outgoing.window !== 0) writePacket(held.shift() as Buffer[]);
  };
  const bulk: BulkSftp = {
    write(handle, pieces, len, position, cb) {
      const id = nextId();
      sftp._requests[id] = { cb: (err) => cb(err) };
      if (ended) {
        process.nextTick(() => sftp.push(null));
        return;
      }
      send([requestHead(SSH_FXP_WRITE, id, handle, position, len, len), ...pieces]);
    },
    read(handle, len, position, cb) {
      const id = nextId();
      bulkReads.set(id, { len, cb });
      // Only non-DATA answers reach ssh2's table: EOF and errors, or the end of the session.
      sftp._requests[id] = {
        cb: (err) => {
          bulkReads.delete(id);
          if (err?.code === 1 /* SSH_FX_EOF */) cb(undefined, [], 0);
          else cb(err ?? new Error('The server answered a read without data'), [], 0);
        },
      };
      if (ended) {
        process.nextTick(() => sftp.push(null));
        return;
      }
      send([requestHead(SSH_FXP_READ, id, handle, position, len, 0)]);
    },
  };
  bulkSessions.set(sftp, bulk);

  // Incoming packets: the DATA answers of bulk reads are taken here, the rest goes to ssh2.
  const head = Buffer.alloc(DATA_HEAD);
  let headLen = 0;
  /** Bytes of the current packet still to come, once its header was decided. */
  let left = 0;
  let into: 'ssh2' | 'bulk' | null = null;
  const onData = (chunk: Buffer) => {
    let p = 0;
    while (p < chunk.length && !ended) {
      if (into === null) {
        // The header: 5 bytes tell the length and type; a DATA answer's first 13 its request and size.
        const gather = (upTo: number) => {
          const n = Math.min(upTo - headLen, chunk.length - p);
          chunk.copy(head, headLen, p, p + n);
          headLen += n;
          p += n;
          return headLen === upTo;
        };
        if (headLen < 5 && !gather(5)) return;
        const pktLen = head.readUInt32BE(0);
        if (head[4] === SSH_FXP_DATA && pktLen >= DATA_HEAD - 4 && !gather(DATA_HEAD)) return;
        const req = headLen === DATA_HEAD ? bulkReads.get(head.readUInt32BE(5)) : undefined;
        if (req) {
          const id = head.readUInt32BE(5);
          const nb = head.readUInt32BE(9);
          if (nb !== pktLen - (DATA_HEAD - 4) || nb > req.len) {
            finish(`SFTP protocol error: a DATA answer of ${nb} bytes to a read of ${req.len}`);
            return;
          }
          bulkReads.delete(id);
          delete sftp._requests[id];
          taking = { pieces: [], nb, cb: req.cb };
          into = 'bulk';
          left = nb;
        } else {
          // ssh2 parses it from its start: the header bytes gathered here (a copy: `head` is reused).
          sftp.push(Buffer.from(head.subarray(0, headLen)));
          into = 'ssh2';
          left = pktLen - (headLen - 4);
        }
        headLen = 0;
      }
      const n = Math.min(left, chunk.length - p);
      if (n > 0) {
        if (into === 'bulk') taking?.pieces.push(chunk.subarray(p, p + n));
        else sftp.push(chunk.subarray(p, p + n));
      }
      left -= n;
      p += n;
      if (left === 0) {
        if (into === 'bulk' && taking) {
          const t = taking;
          taking = null;
          t.cb(undefined, t.pieces, t.nb);
        }
        into = null;
      }
    }
  };
  io.stdout.on('data', onData);
  io.stdout.once('end', () => finish('sftp-server ended'));
  io.stdout.once('close', () => finish('sftp-server ended'));
  io.stdout.on('error', (err: Error) => finish(`sftp-server output failed: ${err.message}`));
  // EPIPE when the process died first; its stdout ending reports the end.
  io.stdin.on('error', (err: Error) => finish(`sftp-server input failed: ${err.message}`));
  io.stdin.on('drain', () => {
    if (ended) return;
    outgoing.window = OPEN_WINDOW;
    sendHeld();
    if (outgoing.window === 0) return;
    if (sftp._waitWindow) {
      sftp._waitWindow = false;
      // ssh2's drainBuffer: sends what it queued while the window was shut, in order.
      sftp._chunkcb?.call(sftp);
    }
  });
  io.stderr?.on('data', (b: Buffer) => {
    stderrTail = (stderrTail + b.toString()).slice(-STDERR_TAIL);
  });
  // A protocol error (a malformed packet) would otherwise be an unhandled 'error': end the session.
  sftp.on('error', (err: Error) => finish(`SFTP protocol error: ${err.message}`));

  const reason = (what: string) => {
    const tail = stderrTail.trim().split('\n').slice(-3).join(' | ');
    return tail ? `${what} (${tail})` : what;
  };

  return new Promise<SFTPWrapper>((resolve, reject) => {
    const timer = setTimeout(() => {
      settle(
        new DriverError(
          'driver.timeout',
          reason(`sftp-server did not answer the SFTP handshake in ${handshakeMs} ms`),
        ),
      );
      finish('handshake timed out');
    }, handshakeMs);
    timer.unref?.();
    let settled = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sftp.off('ready', onReady);
      sftp.off('close', onClose);
      if (err) reject(err);
      else resolve(sftp as unknown as SFTPWrapper);
    };
    const onReady = () => settle(null);
    const onClose = (why: string) =>
      settle(new DriverError('driver.failed', reason(`SFTP handshake failed: ${why}`)));
    sftp.once('ready', onReady);
    sftp.once('close', onClose);
    sftp._init();
  });
}
