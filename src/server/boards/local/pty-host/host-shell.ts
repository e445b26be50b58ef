import fs from 'node:fs';
import tty from 'node:tty';
import { resumeReading, stopReading } from '#server/system/stop-reading.ts';
import type { PtyHandle, PtySize, RelayServe } from '../../driver.ts';
import type { PtyCtl } from './ctl.ts';
import { type Frame, FromCtl, ToHost } from './protocol.ts';
import type { WsRelay } from './relay.ts';

/** Input is cut into frames of at most this many bytes. */
const INPUT_SLICE = 64 * 1024;
/** Output a paused shell may still receive (frames in flight) before the host is held. */
export const PAUSED_SLACK = 1024 * 1024;
/** Input the host may leave unread before it is taken for stuck and killed. */
export const MAX_UNREAD_INPUT = 8 * 1024 * 1024;
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

/** What a shell needs of the PTY host it belongs to (BoardPtyHost). */
export interface ShellHost {
  readonly ctl: PtyCtl | null;
  /** Terminals handed from the host to the service's own reading (a count, for tests). */
  handOffs: number;
  hostPidOf(boardPid: number): number | undefined;
  send(type: number, id: number, payload?: Buffer): void;
  ctlCall(line: string): Promise<string[]>;
  shellResumed(): void;
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

export class HostShell implements PtyHandle {
  private readonly dataListeners = new Set<Listener<Buffer>>();
  private readonly exitListeners = new Set<Listener<{ exitCode: number | null; reason?: string }>>();
  boardPid = 0;
  ended = false;
  paused = false;
  /** Bytes received since the last pause. */
  sincePause = 0;
  private resolvedHostPid: number | undefined;

  constructor(
    private readonly host: ShellHost,
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

export function clampSize(s: PtySize): PtySize {
  return { cols: Math.min(0xffff, Math.max(1, s.cols)), rows: Math.min(0xffff, Math.max(1, s.rows)) };
}
