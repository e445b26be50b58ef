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
import type { Readable, Writable } from 'node:stream';
import sftpModule from 'ssh2/lib/protocol/SFTP.js';
import type { SFTPWrapper } from 'ssh2';
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

  const finish = (why: string) => {
    if (ended) return;
    ended = true;
    state = 'closed';
    if (killTimer) clearTimeout(killTimer);
    io.stdout.off('data', onData);
    // push(null) fails every outstanding request ("No response from server") and emits 'end'.
    sftp.push(null);
    if (!io.stdin.destroyed) io.stdin.destroy();
    io.kill();
    sftp.emit('close', why);
  };

  const onData = (chunk: Buffer) => sftp.push(chunk);
  io.stdout.on('data', onData);
  io.stdout.once('end', () => finish('sftp-server ended'));
  io.stdout.once('close', () => finish('sftp-server ended'));
  io.stdout.on('error', (err: Error) => finish(`sftp-server output failed: ${err.message}`));
  // EPIPE when the process died first; its stdout ending reports the end.
  io.stdin.on('error', (err: Error) => finish(`sftp-server input failed: ${err.message}`));
  io.stdin.on('drain', () => {
    if (ended) return;
    outgoing.window = OPEN_WINDOW;
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
