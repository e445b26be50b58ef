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
  queue: Buffer[];
  writing: boolean;
  exited: { code: number; signal: number } | null;
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
let corked = false;

function send(type: number, id: number, payload?: Buffer): void {
  if (!corked) {
    corked = true;
    out.cork();
    setImmediate(() => {
      corked = false;
      out.uncork();
    });
  }
  let ok = true;
  for (const b of frame(type, id, payload)) ok = out.write(b);
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

function finish(id: number, t: Term): void {
  if (!t.exited || !t.closed || !terms.has(id)) return;
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
    queue: [],
    writing: false,
    exited: null,
    closed: false,
    pausedByService: false,
  };
  const self = t;
  terms.set(id, t);
  const pid = Buffer.allocUnsafe(4);
  pid.writeUInt32BE(term.pid, 0);
  send(FromHost.opened, id, pid);
  socket.on('data', (b: Buffer) => send(FromHost.data, id, b));
  // EIO once every process of the terminal has closed it: the end of the output.
  socket.on('error', () => {});
  socket.on('close', () => {
    self.closed = true;
    finish(id, self);
  });
  if (congested) socket.pause();
}

function write(t: Term): void {
  if (t.writing || t.queue.length === 0) return;
  t.writing = true;
  const b = t.queue[0];
  fs.write(t.fd, b, 0, b.length, null, (err, n) => {
    t.writing = false;
    if (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') setImmediate(() => write(t));
      else t.queue.length = 0;
      return;
    }
    if (n < b.length) t.queue[0] = b.subarray(n);
    else t.queue.shift();
    write(t);
  });
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
      t.queue.push(Buffer.from(payload));
      write(t);
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
