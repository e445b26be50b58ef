// The service's side of a board's PTY host (host.c): starts it inside the board on the first shell,
// opens login shells through it, and hands each out as the driver's PtyHandle. One pipe per board
// carries every shell's frames (protocol.ts); output payloads are slices of the chunks read, so a
// shell's bytes reach the session without a copy and without a fork of the service per shell.
//
// The host is the board's: its root can kill it, replace it, or make it say anything. So every frame
// is bounded (FrameReader), its type and shell id checked, and a host that breaks the protocol, ignores
// flow control or stops reading its input is killed; its shells end, and the next open starts a new one.
// A board's shells never see another board's: each board has its own host and pipe.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import tty from 'node:tty';
import { DriverError, type PtyHandle, type PtySize, type RelayServe } from '../../driver.ts';
import { resumeReading, stopReading } from '#server/system/stop-reading.ts';
import { withTimeout } from '../../util.ts';
import { BOARD_TERMINALS } from './budget.ts';
import { compileProgram } from './compile.ts';
import { type PtyCtl, ptyCtl } from './ctl.ts';
import { type Frame, FrameReader, FromCtl, FromHost, frame, MAX_FRAME, ToHost } from './protocol.ts';
import type { WsRelay } from './relay.ts';

/** Input is cut into frames of at most this many bytes. */
const INPUT_SLICE = 64 * 1024;
/** Output a paused shell may still receive (frames in flight) before the host is held. */
const PAUSED_SLACK = 1024 * 1024;
/** Input the host may leave unread before it is taken for stuck and killed. */
const MAX_UNREAD_INPUT = 8 * 1024 * 1024;
/** After the program ended, how long its terminal may stay open (a background job holding it); as host.c. */
const DRAIN_MS = 200;
/**
 * Output of a held terminal comes a kernel buffer (4 KiB) per read: it is handed on in chunks of up to
 * this, as the host gathers it (the session's work per chunk is what a flood costs).
 */
const GATHER = 64 * 1024;
/**
 * A read that fills the terminal's line buffer (4 KiB) means more output is coming: it is held for the
 * next reads (a flood then costs the session one chunk per GATHER, not per 4 KiB), this long at most.
 */
const FULL_READ = 4095;
const FLOOD_WAIT_MS = 1;
/** A terminal whose input is full is tried again this often. */
const INPUT_RETRY_MS = 2;
/**
 * A closed shell whose program is still there this long after its SIGHUP gets another, and after
 * CLOSE_KILL_MS a SIGKILL. bash can lose a SIGHUP: one that lands as readline goes back to waiting
 * for input is caught and only looked at after the next key, which never comes (seen in the tests:
 * bash asleep in pselect with nothing pending, the tab's close waiting forever). A program that
 * ignores SIGHUP does not keep a closed shell open either.
 */
const CLOSE_AGAIN_MS = 500;
const CLOSE_KILL_MS = 3000;

let program: Promise<number> | undefined;

/**
 * The host program (host.c), compiled once per service with the machine's C compiler and held open
 * read-only: its descriptor is passed to each board's host as fd 3 and run from there, so nothing of
 * the service's is on a path inside a board. Rejects with the compiler's message when it cannot build.
 */
export function ptyHostProgram(): Promise<number> {
  program ??= compileProgram('host.c', 'bianbu-pty-host', 'the PTY host');
  return program;
}

/** The open frame's payload: u16 cols, rows, argc, envc; then cwd, argv and env as NUL-ended strings. */
export function openPayload(spec: OpenSpec): Buffer {
  const env = Object.entries(spec.env).map(([k, v]) => `${k}=${v}`);
  const strings = [spec.cwd, ...spec.argv, ...env];
  const body = Buffer.from(`${strings.join('\0')}\0`);
  if (
    spec.argv.length < 1 ||
    spec.argv.length > 256 ||
    env.length > 1024 ||
    strings.some((x) => x.includes('\0')) ||
    8 + body.length > MAX_FRAME
  )
    throw new DriverError('driver.failed', 'A shell cannot be started with these arguments');
  const head = Buffer.allocUnsafe(8);
  head.writeUInt16BE(Math.min(0xffff, Math.max(1, spec.size.cols)), 0);
  head.writeUInt16BE(Math.min(0xffff, Math.max(1, spec.size.rows)), 2);
  head.writeUInt16BE(spec.argv.length, 4);
  head.writeUInt16BE(env.length, 6);
  return Buffer.concat([head, body]);
}

function clampSize(s: PtySize): PtySize {
  return { cols: Math.min(0xffff, Math.max(1, s.cols)), rows: Math.min(0xffff, Math.max(1, s.rows)) };
}

export interface PtyHostOptions {
  /** argv that enters the board as its root with descriptor 3 kept; the program's path follows. */
  launch: () => { file: string; args: string[] };
  env: Record<string, string>;
  timeoutMs: number;
  log?: (msg: string, data?: Record<string, unknown>) => void;
  /** The board's devpts max= (budget.ts; default BOARD_TERMINALS). */
  terminals?: number;
}

export interface OpenSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  size: PtySize;
}

type Listener<T> = (v: T) => void;

/**
 * A terminal whose master the service holds itself (opened through ctl.c, in the board's devpts): its
 * output is read and its input written here, with no process of the board's in between.
 */
interface Master {
  fd: number;
  stream: tty.ReadStream;
  /** Input the terminal has not taken yet, and its bytes. */
  queue: Buffer[];
  queued: number;
  retry: NodeJS.Timeout | null;
  /** The terminal read its end (every process of it closed it). */
  done: boolean;
  /** Helper calls on this descriptor still under way: it is closed only after them. */
  calls: Promise<unknown>;
  /** How many of them: input waits behind them (a resize before a keystroke is seen before it). */
  pending: number;
  /** Output read and not handed on yet (see GATHER), and when it goes. */
  gathered: Buffer[];
  gatheredBytes: number;
  soon: NodeJS.Immediate | null;
  flood: NodeJS.Timeout | null;
  flush?: () => void;
  /**
   * Who reads it: the service; the terminal helper during a flood; or the WebSocket relay serving a
   * view (relay.c). `helper` is that process, `reader` the id it knows the terminal by.
   */
  mode: 'self' | 'ctl' | 'relay';
  reader: number;
  helper: PtyCtl | null;
  ended?: () => void;
}

class HostShell implements PtyHandle {
  private readonly dataListeners = new Set<Listener<Buffer>>();
  private readonly exitListeners = new Set<Listener<{ exitCode: number | null; reason?: string }>>();
  boardPid = 0;
  ended = false;
  paused = false;
  /** Bytes received since the last pause. */
  sincePause = 0;
  private resolvedHostPid: number | undefined;

  constructor(
    private readonly host: BoardPtyHost,
    readonly id: number,
  ) {}

  get hostPid(): number | undefined {
    if (this.resolvedHostPid === undefined && this.boardPid && !this.ended)
      this.resolvedHostPid = this.host.hostPidOf(this.boardPid);
    return this.resolvedHostPid;
  }

  /**
   * Output that came before anyone listened: the first prompt can arrive in the same read as the
   * "opened" frame, before open() has handed the shell out. Given to the first listener.
   */
  private early: Buffer[] | null = [];
  private endedWith: { exitCode: number | null; reason?: string } | null = null;

  data(b: Buffer): void {
    if (this.early) {
      if (this.early.reduce((n, x) => n + x.length, 0) < PAUSED_SLACK) this.early.push(b);
      return;
    }
    for (const l of this.dataListeners) l(b);
  }

  private master: Master | null = null;
  private exitedWith: { exitCode: number | null; reason?: string } | null = null;
  private drain: NodeJS.Timeout | null = null;
  /** What is left of the drain (ms), and since when it runs. */
  private drainLeft = DRAIN_MS;
  private drainFrom = 0;

  /** Set before the open: the host must never send this shell's output (the service reads it). */
  viaMaster = false;

  get direct(): boolean {
    return this.viaMaster;
  }

  /** Reads and writes the terminal's master `fd` from now on (the program is started on it). */
  attachMaster(fd: number): void {
    const stream = new tty.ReadStream(fd);
    const m: Master = {
      fd,
      stream,
      queue: [],
      queued: 0,
      retry: null,
      done: false,
      calls: Promise.resolve(),
      pending: 0,
      gathered: [],
      gatheredBytes: 0,
      soon: null,
      flood: null,
      mode: 'self',
      reader: 0,
      helper: null,
    };
    this.master = m;
    const flush = () => {
      if (m.soon) clearImmediate(m.soon);
      if (m.flood) clearTimeout(m.flood);
      m.soon = m.flood = null;
      if (!m.gatheredBytes) return;
      const out = m.gathered.length === 1 ? m.gathered[0] : Buffer.concat(m.gathered, m.gatheredBytes);
      m.gathered = [];
      m.gatheredBytes = 0;
      this.data(out);
    };
    m.flush = flush;
    stream.on('data', (b: Buffer) => {
      m.gathered.push(b);
      m.gatheredBytes += b.length;
      if (m.gatheredBytes >= GATHER) return flush();
      // A read short of a full line buffer is the end of what the program wrote for now: out at the
      // end of this turn. A full one means more is coming (a flood): the terminal helper reads it from
      // here, beside the service, until it is quiet again.
      // (Reads come one per turn of the event loop: a lone short one, an echo, goes out at once.)
      if (b.length < FULL_READ) {
        if (m.gathered.length === 1 && !m.flood) flush();
        else m.soon ??= setImmediate(flush);
      } else if (!this.handOff(m)) m.flood ??= setTimeout(flush, FLOOD_WAIT_MS);
    });
    // EIO once every process of the terminal has closed it: the end of the output.
    const done = () => {
      if (m.done) return;
      m.done = true;
      if (this.exitedWith) this.end(this.exitedWith);
    };
    m.ended = done;
    stream.on('error', done);
    stream.on('end', done);
    stream.on('close', done);
    if (this.paused) stream.pause();
  }

  /**
   * Gives the reading of a flooding terminal to the terminal helper (ctl.c): one reader at a time, so
   * the service stops its own first and hands on what it read. False when it keeps reading itself.
   */
  private handOff(m: Master): boolean {
    const ctl = this.host.ctl;
    if (!ctl || m.mode !== 'self' || this.paused || this.ended) return false;
    if (!this.stopOwnReading(m)) return false;
    if (this.paused || this.ended) return true;
    this.host.handOffs++;
    const id = this.lend(m, 'ctl', ctl);
    this.masterCall((fd) =>
      ctl
        .request(`read ${id} ${fd}`)
        .catch(() => this.fromCtl(m, id, { type: FromCtl.released, id, payload: Buffer.alloc(0) })),
    );
    return true;
  }

  /**
   * Stops the service's own reading of the terminal, so that a helper may read it, and hands on what
   * it had read (the session may pause the shell on it: it then stays paused, unread). False when the
   * service keeps reading: Node cannot stop it, or a read already waits in the stream (in order).
   */
  private stopOwnReading(m: Master): boolean {
    if (!stopReading(m.stream)) return false;
    if (m.stream.readableLength > 0) {
      resumeReading(m.stream);
      return false;
    }
    m.flush?.();
    return true;
  }

  /** The terminal is read by `helper` from now on; its frames come here under the id answered. */
  private lend(m: Master, mode: 'ctl' | 'relay', helper: PtyCtl): number {
    m.mode = mode;
    const id = helper.listen((f) => this.fromCtl(m, id, f));
    m.reader = id;
    m.helper = helper;
    return id;
  }

  private fromCtl(m: Master, id: number, f: Frame): void {
    if (m.reader !== id) return;
    if (f.type === FromCtl.data) {
      if (!this.ended) this.data(f.payload);
      return;
    }
    if (f.type === FromCtl.typed) {
      this.write(f.payload);
      return;
    }
    m.helper?.unlisten(id);
    m.mode = 'self';
    m.reader = 0;
    m.helper = null;
    if (f.type === FromCtl.ended) m.ended?.();
    // resume() alone does not start the handle when the stream counts a read as under way (it was
    // stopped idle, waiting for the terminal: the relay's case).
    else if (!this.ended && !this.paused) resumeReading(m.stream);
  }

  private ctlCall(line: string): void {
    const ctl = this.host.ctl;
    if (ctl) this.masterCall(() => ctl.request(line));
  }

  /** A request to whoever reads the terminal for the service (ctl or relay), in order with the others. */
  private readerCall(m: Master, line: string): void {
    const h = m.helper;
    if (h) this.masterCall(() => h.request(line));
  }

  /**
   * Hands the reading of the terminal, and one view's keystrokes, to the WebSocket relay (relay.c):
   * the service stops its own reading first and hands on what it read, then asks. False when the
   * relay cannot take it now (it still had the client's bytes on their way to the service, say): the
   * service reads on, and the caller may ask again.
   */
  async serveRelay(o: RelayServe): Promise<boolean> {
    const m = this.master;
    const relay = o.relay as WsRelay;
    if (m?.mode !== 'self' || this.paused || this.ended || !relay.alive) return false;
    // Input still on its way to the terminal here would be passed by what the relay writes.
    if (m.queued > 0) return false;
    if (!this.stopOwnReading(m) || this.paused || this.ended) return false;
    const id = this.lend(m, 'relay', relay.proc);
    const hex = (b: Buffer | string) => Buffer.from(b).toString('hex');
    const { written, read } = o.handover();
    try {
      await relay.proc.request(
        `serve ${o.key} ${id} ${m.fd} ${o.offset()} ${hex(o.head)} ${hex(o.input)} ${hex(o.ack)} ${written} ${read}`,
      );
      return true;
    } catch {
      this.fromCtl(m, id, { type: FromCtl.released, id, payload: Buffer.alloc(0) });
      return false;
    }
  }

  /** The relay lets the terminal go: its "released" frame, after its last output, hands it back. */
  unserveRelay(): void {
    const m = this.master;
    if (m?.mode === 'relay' && !this.ended) this.readerCall(m, `unserve ${m.reader}`);
  }

  /** A helper call on the master (resize), which keeps it open until it is done. */
  masterCall(fn: (fd: number) => Promise<unknown>): void {
    const m = this.master;
    if (!m || this.ended) return;
    m.pending++;
    m.calls = m.calls
      .then(() => fn(m.fd))
      .catch(() => {})
      .finally(() => {
        m.pending--;
        if (!m.pending && m.queue.length && !m.retry) this.writeMaster(m);
      });
  }

  /** The program ended (the host reaped it): the end once its terminal's output is read, or soon. */
  exited(info: { exitCode: number | null; reason?: string }): void {
    const m = this.master;
    if (!m || m.done) {
      this.end(info);
      return;
    }
    this.exitedWith = info;
    this.armDrain();
  }

  /**
   * The drain after the program's exit runs only while the shell is not paused: a paused shell's last
   * output waits in its terminal for the viewers to catch up (then it is read, the end follows), and
   * a job that keeps the terminal open still gets DRAIN_MS of reading in all.
   */
  private armDrain(): void {
    const info = this.exitedWith;
    if (!info || this.drain || this.ended || this.paused) return;
    this.drainFrom = Date.now();
    this.drain = setTimeout(() => this.end(info), this.drainLeft);
  }

  private holdDrain(): void {
    if (!this.drain) return;
    clearTimeout(this.drain);
    this.drain = null;
    this.drainLeft = Math.max(0, this.drainLeft - (Date.now() - this.drainFrom));
  }

  end(info: { exitCode: number | null; reason?: string }): void {
    if (this.ended) return;
    if (this.closing) clearTimeout(this.closing);
    this.closing = null;
    const m = this.master;
    m?.flush?.(); // what was read before the end goes out before it
    this.ended = true;
    this.endedWith = info;
    if (m) {
      if (this.drain) clearTimeout(this.drain);
      if (m.retry) clearTimeout(m.retry);
      m.queue = [];
      m.stream.pause();
      if (m.mode !== 'self') {
        // The helper's copy of the master goes first, or closing ours would not hang the terminal up.
        const id = m.reader;
        const h = m.helper;
        const stop = m.mode === 'ctl' ? 'unread' : 'drop';
        m.reader = 0;
        m.helper = null;
        if (h) m.calls = m.calls.then(() => h.request(`${stop} ${id}`)).finally(() => h.unlisten(id));
      }
      // Closing the master hangs up what still holds the terminal; not before a helper call on it is
      // done, so its number is not reused under that call.
      void m.calls.catch(() => {}).then(() => m.stream.destroy());
    }
    if (this.early) return;
    for (const l of this.exitListeners) l(info);
    this.dataListeners.clear();
    this.exitListeners.clear();
  }

  inputBacklog(): number {
    return this.master?.queued ?? 0;
  }

  write(d: string | Buffer): void {
    if (this.ended) return;
    const b = typeof d === 'string' ? Buffer.from(d) : d;
    const m = this.master;
    if (m) {
      if (m.queued + b.length > MAX_UNREAD_INPUT) return; // the program takes no input: dropped
      m.queue.push(b);
      m.queued += b.length;
      if (!m.retry && !m.pending) this.writeMaster(m);
      return;
    }
    for (let at = 0; at < b.length; at += INPUT_SLICE)
      this.host.send(ToHost.input, this.id, b.subarray(at, at + INPUT_SLICE));
  }

  /** Writes what the terminal takes now (one system call for a keystroke); the rest a little later. */
  private writeMaster(m: Master): void {
    m.retry = null;
    if (m.pending) return; // written once the calls before it are done
    while (m.queue.length && !this.ended) {
      const b = m.queue[0];
      let n: number;
      try {
        n = fs.writeSync(m.fd, b);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') {
          m.queue = []; // the terminal is going away; its input with it
          m.queued = 0;
          return;
        }
        n = 0;
      }
      m.queued -= n;
      if (n < b.length) {
        m.queue[0] = b.subarray(n);
        m.retry = setTimeout(() => this.writeMaster(m), INPUT_RETRY_MS);
        return;
      }
      m.queue.shift();
    }
  }

  resize(s: PtySize): void {
    if (this.ended) return;
    if (this.master) {
      const { cols, rows } = clampSize(s);
      this.masterCall((fd) => this.host.ctlCall(`size ${fd} ${cols} ${rows}`));
      return;
    }
    const p = Buffer.allocUnsafe(4);
    p.writeUInt16BE(Math.min(0xffff, Math.max(1, s.cols)), 0);
    p.writeUInt16BE(Math.min(0xffff, Math.max(1, s.rows)), 2);
    this.host.send(ToHost.resize, this.id, p);
  }

  /** Once the caller has attached its listeners (in the same turn), gives them what came early. */
  private listened(): void {
    if (!this.early || this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => {
      const early = this.early ?? [];
      this.early = null;
      for (const b of early) for (const l of this.dataListeners) l(b);
      if (this.endedWith) {
        for (const l of this.exitListeners) l(this.endedWith);
        this.dataListeners.clear();
        this.exitListeners.clear();
      }
    });
  }
  private flushing = false;

  onData(fn: Listener<Buffer>): () => void {
    this.dataListeners.add(fn);
    this.listened();
    return () => this.dataListeners.delete(fn);
  }

  onExit(fn: Listener<{ exitCode: number | null; reason?: string }>): () => void {
    this.exitListeners.add(fn);
    this.listened();
    return () => this.exitListeners.delete(fn);
  }

  pause(): void {
    if (this.ended || this.paused) return;
    this.paused = true;
    this.sincePause = 0;
    this.holdDrain();
    const m = this.master;
    // In order with the "read" request it follows (a resize may be queued before it).
    if (m && m.mode !== 'self') this.readerCall(m, `pause ${m.reader}`);
    else if (m) m.stream.pause();
    else this.host.send(ToHost.pause, this.id);
  }

  resume(): void {
    if (this.ended || !this.paused) return;
    this.paused = false;
    const m = this.master;
    if (m) {
      if (m.mode !== 'self') this.readerCall(m, `resume ${m.reader}`);
      else resumeReading(m.stream); // its handle too, when a helper had it stopped
      this.armDrain();
      return;
    }
    this.host.send(ToHost.resume, this.id);
    this.host.shellResumed();
  }

  close(): void {
    if (this.ended) return;
    // A program already gone whose last output waits unread (paused): nobody wants it any more.
    if (this.exitedWith) {
      this.end(this.exitedWith);
      return;
    }
    this.signal('SIGHUP');
    if (this.closing) return;
    // (end() clears the timer; a program that has exited gets no more signals.)
    this.closing = setTimeout(() => {
      if (!this.exitedWith) this.signal('SIGHUP');
      this.closing = setTimeout(() => {
        if (!this.exitedWith) this.signal('SIGKILL');
      }, CLOSE_KILL_MS - CLOSE_AGAIN_MS);
    }, CLOSE_AGAIN_MS);
  }

  private closing: NodeJS.Timeout | null = null;

  private signal(name: 'SIGHUP' | 'SIGKILL'): void {
    this.host.send(ToHost.signal, this.id, Buffer.from(name));
  }
}

export class BoardPtyHost {
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private readonly shells = new Map<number, HostShell>();
  private readonly opening = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private held = false;
  /** Floods whose reading went to the terminal helper (for tests and the curious). */
  handOffs = 0;
  /**
   * The board's ptmx, held by the service's terminal helper (ctl.c) for this host: terminals are made
   * through it and their masters held here. Null when the host offered none or it was not one: then
   * every shell's bytes go through the host.
   */
  private ptmx: { ctl: PtyCtl; held: number; uid: number; gid: number } | null = null;
  /** The host's descriptors of that ptmx and of its devpts root, as its ready frame said. */
  private ptmxFd = -1;
  private ptsFd = -1;

  constructor(private readonly opts: PtyHostOptions) {}

  /** Whether shells of this host are read by the service itself (no relay through the board). */
  get direct(): boolean {
    return this.ptmx !== null;
  }

  /** The terminal helper, while it runs. */
  get ctl(): PtyCtl | null {
    return this.ptmx?.ctl.alive ? this.ptmx.ctl : null;
  }

  /** Opens `spec.argv` on a new terminal of the board. */
  async open(spec: OpenSpec): Promise<PtyHandle> {
    const payload = openPayload(spec);
    const child = await this.start();
    const id = this.nextId++;
    if (this.nextId > 0xffffffff) this.nextId = 1;
    const master = await this.openMaster(spec.size);
    if (this.child !== child) {
      // The host ended meanwhile: the terminal was made through its ptmx, so start over.
      if (master) fs.closeSync(master.fd);
      return this.open(spec);
    }
    const shell = new HostShell(this, id);
    shell.viaMaster = master !== null;
    this.shells.set(id, shell);
    const opened = new Promise<void>((resolve, reject) => {
      this.opening.set(id, { resolve, reject });
    });
    if (master) {
      const pts = Buffer.allocUnsafe(4);
      pts.writeUInt32BE(master.pts, 0);
      this.send(ToHost.openPts, id, Buffer.concat([pts, payload]));
    } else {
      this.send(ToHost.open, id, payload);
    }
    try {
      await withTimeout(opened, this.opts.timeoutMs, 'terminal open', undefined, () => {
        return new DriverError('driver.failed', 'The board did not open a terminal in time');
      });
    } catch (err) {
      this.opening.delete(id);
      this.shells.delete(id);
      if (master) fs.closeSync(master.fd);
      if (this.child === child) this.send(ToHost.signal, id, Buffer.from('SIGKILL'));
      throw err;
    }
    // Read once the program holds the terminal: before, the helper's closing of it reads as its end.
    if (master) shell.attachMaster(master.fd);
    return shell;
  }

  /**
   * A new terminal in the board's devpts whose master only the service holds (ctl.c): its number and
   * the master. Null when this host has no ptmx or the helper fails (the shell is relayed instead).
   */
  private async openMaster(size: PtySize): Promise<{ fd: number; pts: number } | null> {
    // A helper that ended took its copy of the ptmx with it: the next one takes it again.
    if (this.ptmx && !this.ptmx.ctl.alive && this.child && this.ptmxFd >= 0)
      this.ptmx = await this.takePtmx(this.child, this.ptmxFd);
    const p = this.ptmx;
    if (!p?.ctl.alive) return null;
    let fd = -1;
    try {
      const { O_RDWR, O_NOCTTY, O_NONBLOCK } = fs.constants;
      fd = fs.openSync(`/proc/${p.ctl.pid}/fd/${p.held}`, O_RDWR | O_NOCTTY | O_NONBLOCK);
      const { cols, rows } = clampSize(size);
      const [n] = await p.ctl.request(`pty ${fd} ${cols} ${rows} ${p.uid} ${p.gid}`);
      const pts = Number(n);
      if (!Number.isSafeInteger(pts) || pts < 0 || pts > 0xffffffff) throw new Error(`terminal number ${n}`);
      return { fd, pts };
    } catch (err) {
      if (fd >= 0) fs.closeSync(fd);
      this.opts.log?.('a shell is relayed by the PTY host: its terminal could not be made here', {
        why: (err as Error).message,
      });
      return null;
    }
  }

  /** One request to the terminal helper of this host's ptmx; rejects when there is none. */
  ctlCall(line: string): Promise<string[]> {
    return this.ptmx ? this.ptmx.ctl.request(line) : Promise.reject(new Error('no terminal helper'));
  }

  /**
   * Takes the host's ptmx handle (descriptor `fd` of the host, the entry's child) into the terminal
   * helper, which checks that it is a devpts ptmx. Null, and shells relayed, when anything fails.
   */
  private async takePtmx(child: ChildProcess, fd: number): Promise<BoardPtyHost['ptmx']> {
    const entry = child.pid;
    if (!entry) return null;
    try {
      const ctl = await ptyCtl();
      const kids = fs.readFileSync(`/proc/${entry}/task/${entry}/children`, 'latin1').trim().split(/\s+/);
      if (kids.length !== 1 || !/^\d+$/.test(kids[0]))
        throw new Error(`the entry has ${kids.length} children`);
      const bound = this.ptsFd >= 0 ? ` ${this.ptsFd} ${this.opts.terminals ?? BOARD_TERMINALS}` : '';
      const [held, uid, gid, bounded] = (await ctl.request(`ptmx ${kids[0]} ${entry} ${fd}${bound}`)).map(
        Number,
      );
      if (![held, uid, gid].every(Number.isSafeInteger)) throw new Error('the helper answered nonsense');
      if (bounded !== 1)
        this.opts.log?.("a board's terminals are not bounded: its devpts has no max", {
          offered: bound !== '',
        });
      return { ctl, held, uid, gid };
    } catch (err) {
      this.opts.log?.("shells are relayed by the board's PTY host", { why: (err as Error).message });
      return null;
    }
  }

  /** Ends the host (its shells end with it). */
  stop(): void {
    this.child?.kill('SIGKILL');
  }

  send(type: number, id: number, payload?: Buffer): void {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) return;
    // One write, so one system call, per frame: keystrokes are small.
    const parts = frame(type, id, payload);
    stdin.write(parts.length === 1 ? parts[0] : Buffer.concat(parts));
    if (stdin.writableLength > MAX_UNREAD_INPUT) this.kill('it stopped reading its input');
  }

  /** A shell resumed: if the host was held for a paused shell flooding, read again. */
  shellResumed(): void {
    if (!this.held) return;
    for (const s of this.shells.values()) if (s.paused && s.sincePause > PAUSED_SLACK) return;
    this.held = false;
    this.child?.stdout?.resume();
  }

  /**
   * Host pid of the program `boardPid` names inside the board: a child of this host's node (itself the
   * child of the entry process the service spawned) whose innermost pid is `boardPid`. Read from the
   * host's /proc (numbers the kernel writes), never from inside the board.
   */
  hostPidOf(boardPid: number): number | undefined {
    const entry = this.child?.pid;
    if (!entry) return undefined;
    const parents = new Map<number, number>();
    for (const name of fs.readdirSync('/proc')) {
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue;
      try {
        const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        parents.set(Number(name), ppid);
      } catch {}
    }
    const hosts = [...parents].filter(([, pp]) => pp === entry).map(([p]) => p);
    for (const [pid, pp] of parents) {
      if (!hosts.includes(pp)) continue;
      try {
        const status = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
        const ns = /^NSpid:\s+([\d\s]+)$/m.exec(status)?.[1].trim().split(/\s+/);
        if (ns && Number(ns[ns.length - 1]) === boardPid) return pid;
      } catch {}
    }
    return undefined;
  }

  /**
   * Starts the host now rather than at the first shell (a board's boot): the terminal helper then
   * takes its ptmx and bounds its devpts (a board it could not bound is logged by takePtmx).
   */
  async warm(): Promise<void> {
    await this.start();
  }

  private start(): Promise<ChildProcess> {
    const c = this.child;
    // One that died and whose exit is still on its way is as good as gone.
    if (c && c.exitCode === null && c.signalCode === null && !c.stdin?.destroyed) return Promise.resolve(c);
    if (c) this.ended(c, '');
    this.starting ??= this.launch().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async launch(): Promise<ChildProcess> {
    const prog = await ptyHostProgram().catch((err: Error) => {
      throw new DriverError('driver.failed', err.message);
    });
    const { file, args } = this.opts.launch();
    const child = spawn(file, [...args, '/proc/self/fd/3'], {
      stdio: ['pipe', 'pipe', 'pipe', prog],
      env: this.opts.env,
    });
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-2000);
    });
    child.stdin?.on('error', () => {});
    const reader = new FrameReader(undefined, new Set([FromHost.data]));
    let ptmxFd = -1;
    let ptsFd = -1;
    const ready = new Promise<void>((resolve, reject) => {
      const onFrame = (f: Frame) => {
        if (f.type === FromHost.ready && f.id === 0) {
          if (f.payload.length === 4 || f.payload.length === 8) ptmxFd = f.payload.readUInt32BE(0);
          if (f.payload.length === 8) ptsFd = f.payload.readUInt32BE(4);
          resolve();
        } else this.onFrame(child, f);
      };
      child.stdout?.on('data', (chunk: Buffer) => {
        try {
          reader.push(chunk, onFrame);
        } catch (err) {
          this.kill((err as Error).message, child);
        }
      });
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        reject(
          new DriverError(
            'driver.failed',
            `The board's PTY host ended (${signal ?? code}): ${stderr.trim()}`,
          ),
        );
        this.ended(child, stderr);
      });
    });
    await withTimeout(
      ready,
      this.opts.timeoutMs,
      'PTY host start',
      undefined,
      () => new DriverError('driver.failed', 'The board did not start its PTY host in time'),
    ).catch((err: unknown) => {
      child.kill('SIGKILL');
      throw err;
    });
    this.child = child;
    this.ptmxFd = ptmxFd;
    this.ptsFd = ptsFd;
    this.ptmx = ptmxFd >= 0 ? await this.takePtmx(child, ptmxFd) : null;
    return child;
  }

  private onFrame(child: ChildProcess, f: Frame): void {
    if (this.child !== child) return;
    const shell = this.shells.get(f.id);
    switch (f.type) {
      case FromHost.data:
        if (shell?.direct) {
          this.kill('output for a terminal the service reads itself', child);
          return;
        }
        if (!shell || shell.ended) return;
        if (shell.paused) {
          shell.sincePause += f.payload.length;
          if (shell.sincePause > PAUSED_SLACK && !this.held) {
            // The host ignores this shell's pause: hold the whole board's pipe until it resumes.
            this.held = true;
            child.stdout?.pause();
          }
        }
        shell.data(f.payload);
        return;
      case FromHost.opened: {
        const waiting = this.opening.get(f.id);
        if (!shell || !waiting || f.payload.length !== 4) return;
        shell.boardPid = f.payload.readUInt32BE(0);
        this.opening.delete(f.id);
        waiting.resolve();
        return;
      }
      case FromHost.failed: {
        const waiting = this.opening.get(f.id);
        if (!waiting) return;
        this.opening.delete(f.id);
        this.shells.delete(f.id);
        waiting.reject(
          new DriverError(
            'driver.failed',
            `The board could not start a shell: ${f.payload.toString('utf8', 0, 500)}`,
          ),
        );
        return;
      }
      case FromHost.exit: {
        if (!shell || this.opening.has(f.id)) return;
        let info: { code?: unknown; signal?: unknown } = {};
        try {
          if (f.payload.length <= 256) info = JSON.parse(f.payload.toString('utf8'));
        } catch {}
        this.shells.delete(f.id);
        const code = Number.isSafeInteger(info.code) ? (info.code as number) : null;
        const signal = Number.isSafeInteger(info.signal) && info.signal ? (info.signal as number) : 0;
        shell.exited({ exitCode: code, reason: signal ? `signal ${signal}` : undefined });
        this.shellResumed();
        return;
      }
      default:
        this.kill(`unknown frame type ${f.type}`, child);
    }
  }

  private kill(why: string, child = this.child): void {
    if (!child) return;
    this.opts.log?.("a board's PTY host broke the protocol and was stopped", { why });
    child.kill('SIGKILL');
  }

  private ended(child: ChildProcess, stderr: string): void {
    if (this.child !== child) return;
    this.child = null;
    this.held = false;
    if (this.ptmx) void this.ptmx.ctl.request(`drop ${this.ptmx.held}`).catch(() => {});
    this.ptmx = null;
    this.ptmxFd = -1;
    this.ptsFd = -1;
    for (const [id, w] of this.opening) {
      w.reject(new DriverError('driver.failed', 'The board ended its PTY host'));
      this.opening.delete(id);
    }
    for (const s of this.shells.values()) s.end({ exitCode: null, reason: 'the board ended' });
    this.shells.clear();
    if (stderr.trim()) this.opts.log?.("a board's PTY host ended", { stderr: stderr.trim() });
  }
}
