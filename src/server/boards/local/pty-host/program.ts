// A board's PTY host: one small Node process per board, started inside it (its namespaces, cgroups and
// user, capabilities dropped as for a root shell) on the first shell opened there, then kept. It opens
// terminals from the board's own /dev/ptmx, so `tty` and job control work without a relay, and starts
// login shells on them — a fork of this small process instead of one of the service's hundreds of MiB
// plus the sandbox entry for every shell. Output goes to the service raw, framed (protocol.ts).
//
// It runs with the host's node (boards see the host's /usr read-only); node-pty's addon comes open on
// descriptor 3, so no path of the service's is needed inside the board. Bundled into one script by
// pty-host.ts and given to `node -e`. Whatever this process does, the board's root could do too: the
// service trusts nothing it says.
import fs from 'node:fs';
import net from 'node:net';
import tty from 'node:tty';
import { FrameReader, FromHost, frame, MAX_FRAME, ToHost } from './protocol.ts';

interface Native {
  fork(
    file: string,
    args: string[],
    env: string[],
    cwd: string,
    cols: number,
    rows: number,
    uid: number,
    gid: number,
    utf8: boolean,
    helperPath: string,
    onexit: (code: number, signal: number) => void,
  ): { fd: number; pid: number; pty: string };
  resize(fd: number, cols: number, rows: number): void;
}

interface Term {
  pid: number;
  fd: number;
  socket: tty.ReadStream;
  exited: { code: number; signal: number } | null;
  /** Output read in this turn of the event loop, sent as one frame at its end. */
  pending: Buffer[];
  closed: boolean;
  pausedByService: boolean;
}

/** After the program ended, how long its terminal may stay open (a background job holding it). */
const DRAIN_MS = 200;

process.title = 'bianbu-pty-host';
const mod = { exports: {} as Native };
process.dlopen(mod, '/proc/self/fd/3');
fs.closeSync(3);
const native = mod.exports;

const out = new net.Socket({ fd: 1, readable: false, writable: true });
const inp = new net.Socket({ fd: 0, readable: true, writable: false });
const terms = new Map<number, Term>();
let congested = false;

function send(type: number, id: number, payload?: Buffer): void {
  // Header and payload leave in one writev.
  let ok = true;
  out.cork();
  for (const b of frame(type, id, payload)) ok = out.write(b);
  out.uncork();
  if (!ok && !congested) {
    // The service reads slower than the board prints: stop reading every terminal until it drains.
    congested = true;
    for (const t of terms.values()) t.socket.pause();
    out.once('drain', () => {
      congested = false;
      for (const t of terms.values()) if (!t.pausedByService) t.socket.resume();
    });
  }
}

/** Terminals with output waiting for the end of this turn. */
const flushing = new Map<number, Term>();

function output(id: number, t: Term, b: Buffer): void {
  t.pending.push(b);
  if (flushing.size === 0) setImmediate(flush);
  flushing.set(id, t);
}

function flush(): void {
  for (const [id, t] of flushing) {
    send(FromHost.data, id, t.pending.length === 1 ? t.pending[0] : Buffer.concat(t.pending));
    t.pending = [];
  }
  flushing.clear();
}

function finish(id: number, t: Term): void {
  if (!t.exited || !t.closed || !terms.has(id)) return;
  if (t.pending.length > 0) flush();
  terms.delete(id);
  send(FromHost.exit, id, Buffer.from(JSON.stringify(t.exited)));
}

function open(
  id: number,
  spec: { argv: string[]; env: Record<string, string>; cwd: string; cols: number; rows: number },
): void {
  const env = Object.entries(spec.env).map(([k, v]) => `${k}=${v}`);
  let term: { fd: number; pid: number };
  let t: Term | undefined;
  try {
    term = native.fork(
      spec.argv[0],
      spec.argv.slice(1),
      env,
      spec.cwd,
      spec.cols,
      spec.rows,
      -1,
      -1,
      false,
      '',
      (code, signal) => {
        if (!t) return;
        t.exited = { code, signal };
        // Output still buffered in the terminal is read first; a job that keeps the terminal open
        // does not keep the shell from ending.
        setTimeout(() => {
          if (t && !t.closed) {
            t.closed = true;
            t.socket.destroy();
            finish(id, t);
          }
        }, DRAIN_MS).unref();
        finish(id, t);
      },
    );
  } catch (err) {
    send(FromHost.failed, id, Buffer.from(String((err as Error).message)));
    return;
  }
  const socket = new tty.ReadStream(term.fd);
  t = {
    pid: term.pid,
    fd: term.fd,
    socket,
    exited: null,
    pending: [],
    closed: false,
    pausedByService: false,
  };
  const self = t;
  terms.set(id, t);
  const pid = Buffer.allocUnsafe(4);
  pid.writeUInt32BE(term.pid, 0);
  send(FromHost.opened, id, pid);
  socket.on('data', (b: Buffer) => output(id, self, b));
  // EIO once every process of the terminal has closed it: the end of the output.
  socket.on('error', () => {});
  socket.on('close', () => {
    self.closed = true;
    finish(id, self);
  });
  if (congested) socket.pause();
}

function onFrame(type: number, id: number, payload: Buffer): void {
  if (type === ToHost.open) {
    open(id, JSON.parse(payload.toString('utf8')));
    return;
  }
  const t = terms.get(id);
  if (!t) return;
  switch (type) {
    case ToHost.input:
      // libuv writes at once and, on a full terminal, waits until it takes more (non-blocking fd).
      t.socket.write(Buffer.from(payload));
      return;
    case ToHost.resize:
      try {
        native.resize(t.fd, payload.readUInt16BE(0), payload.readUInt16BE(2));
      } catch {}
      return;
    case ToHost.pause:
      t.pausedByService = true;
      t.socket.pause();
      return;
    case ToHost.resume:
      t.pausedByService = false;
      if (!congested) t.socket.resume();
      return;
    case ToHost.signal: {
      const sig = payload.toString('latin1') === 'SIGKILL' ? 'SIGKILL' : 'SIGHUP';
      try {
        process.kill(t.pid, sig);
      } catch {}
      return;
    }
  }
}

const reader = new FrameReader(MAX_FRAME);
inp.on('data', (chunk: Buffer) => reader.push(chunk, (f) => onFrame(f.type, f.id, f.payload)));
// The service is gone: so is every shell of this host (they get SIGHUP as their terminals close).
inp.on('end', () => process.exit(0));
inp.on('error', () => process.exit(0));
out.on('error', () => process.exit(0));
send(FromHost.ready, 0);
