// One link between a service instance and a board host: a WebSocket carrying calls, events, bus
// traffic and byte streams, multiplexed. Both ends use this class; which calls and streams each
// answers is the caller's business (src/server/hosts/remote-driver.ts on the service,
// src/server/board-host/dispatch.ts on the host).
//
// A frame is one binary WebSocket message: a 4-byte big-endian header length, the header (JSON), then
// raw bytes (stream data, bus payloads). Header types:
//
//   call {id, m, a}          a request; answered once by ret {id, v} or err {id, key, msg}
//   prog {id, p}             progress of a running call (flash), from the side answering it
//   cancel {id}              the caller gave up (an aborted flash)
//   ev {e, ...}              a one-way event
//   so {s, k, a}             open stream s of kind k; answered by sok {s} or sx {s, key, msg}
//   sd {s} + bytes           stream data, within the credit the other side granted
//   sc {s, n}                n more bytes may be sent on s (each side starts with STREAM_WINDOW)
//   sm {s, ...}              a stream's side message (a PTY's resize or exit)
//   se {s}                   no more data from this side
//   sx {s, key?, msg?}       the stream is over, at once (an error when key is set)
//
// Flow control is per stream: a writer holds what the reader has not credited, so a slow browser or
// disk on one stream never stalls another and memory stays bounded by streams × window.
import { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { DriverError } from '#server/boards/driver.ts';

export const STREAM_WINDOW = 1 << 20;
/** Largest data frame: big enough for throughput, small enough to interleave streams. */
const CHUNK = 64 * 1024;
export const CALL_TIMEOUT_MS = 60_000;

export type Header = { t: string } & Record<string, unknown>;

export function encodeFrame(h: Header, data?: Buffer): Buffer {
  const head = Buffer.from(JSON.stringify(h));
  const out = Buffer.allocUnsafe(4 + head.length + (data?.length ?? 0));
  out.writeUInt32BE(head.length, 0);
  head.copy(out, 4);
  if (data) data.copy(out, 4 + head.length);
  return out;
}

export function decodeFrame(buf: Buffer): { h: Header; data: Buffer } | null {
  if (buf.length < 4) return null;
  const n = buf.readUInt32BE(0);
  if (n > buf.length - 4 || n > 1 << 20) return null;
  try {
    const h = JSON.parse(buf.subarray(4, 4 + n).toString('utf8')) as Header;
    if (!h || typeof h !== 'object' || typeof h.t !== 'string') return null;
    return { h, data: buf.subarray(4 + n) };
  } catch {
    return null;
  }
}

export interface CallContext {
  /** Sends progress to the caller. */
  progress(p: unknown): void;
  /** Aborted when the caller cancels or the link ends. */
  signal: AbortSignal;
}

export type CallHandler = (method: string, args: unknown[], ctx: CallContext) => Promise<unknown>;
export type StreamHandler = (kind: string, args: unknown[], stream: LinkStream) => Promise<void>;

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
  onProgress?: (p: unknown) => void;
  timer: NodeJS.Timeout | null;
}

export class LinkClosedError extends DriverError {
  /** The link to the board's host ended under the call (flash jobs record it as interrupted). */
  readonly linkLost = true;
  constructor(reason: string) {
    super('board.offline', `The board host is not connected: ${reason}`);
  }
}

export class Link {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly running = new Map<number, AbortController>();
  private readonly streams = new Map<string, LinkStream>();
  private readonly eventHandlers = new Set<(h: Header, data: Buffer) => void>();
  private readonly closeHandlers = new Set<(reason: string) => void>();
  closed: string | null = null;
  /** Stream ids this side opens carry this prefix; the other side's, the other. */
  private readonly prefix: string;
  private lastHeard = Date.now();
  private pinger: NodeJS.Timeout | null = null;

  constructor(
    private readonly ws: WebSocket,
    side: 'service' | 'host',
    private readonly handlers: { call?: CallHandler; stream?: StreamHandler } = {},
  ) {
    this.prefix = side === 'service' ? 'a' : 'b';
    ws.binaryType = 'nodebuffer';
    ws.on('message', (raw: Buffer, isBinary: boolean) => {
      this.lastHeard = Date.now();
      if (!isBinary) return;
      const f = decodeFrame(raw);
      if (f) this.onFrame(f.h, f.data);
    });
    ws.on('pong', () => {
      this.lastHeard = Date.now();
    });
    ws.on('ping', () => {
      this.lastHeard = Date.now();
    });
    ws.on('close', (code, reason) => this.end(`closed (${code}${reason.length ? `: ${reason}` : ''})`));
    ws.on('error', (err) => this.end(err.message));
  }

  /**
   * Pings every `everyMs`; a link that has heard nothing for `deadMs` is ended (a partition sends no
   * FIN: without this a dead peer would look alive until TCP gives up, minutes later).
   */
  keepAlive(everyMs: number, deadMs: number): void {
    this.pinger = setInterval(() => {
      if (Date.now() - this.lastHeard > deadMs) {
        this.ws.terminate();
        this.end(`no answer for ${deadMs} ms`);
        return;
      }
      try {
        this.ws.ping();
      } catch {}
    }, everyMs);
    this.pinger.unref();
  }

  onEvent(fn: (h: Header, data: Buffer) => void): () => void {
    this.eventHandlers.add(fn);
    return () => this.eventHandlers.delete(fn);
  }

  onClose(fn: (reason: string) => void): () => void {
    if (this.closed !== null) {
      queueMicrotask(() => fn(this.closed as string));
      return () => {};
    }
    this.closeHandlers.add(fn);
    return () => this.closeHandlers.delete(fn);
  }

  /** Bytes queued in the socket, not yet handed to the kernel. */
  get buffered(): number {
    return this.ws.bufferedAmount;
  }

  send(h: Header, data?: Buffer): void {
    if (this.closed !== null) return;
    this.ws.send(encodeFrame(h, data), { binary: true });
  }

  event(e: string, fields: Record<string, unknown> = {}, data?: Buffer): void {
    this.send({ t: 'ev', e, ...fields }, data);
  }

  call<T = unknown>(
    method: string,
    args: unknown[] = [],
    opts: { timeoutMs?: number; onProgress?: (p: unknown) => void; signal?: AbortSignal } = {},
  ): Promise<T> {
    if (this.closed !== null) return Promise.reject(new LinkClosedError(this.closed));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? CALL_TIMEOUT_MS;
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              this.pending.delete(id);
              this.send({ t: 'cancel', id });
              reject(new DriverError('driver.timeout', `The board host did not answer ${method} in time`));
            }, timeoutMs)
          : null;
      timer?.unref();
      this.pending.set(id, {
        resolve: resolve as (v: unknown) => void,
        reject,
        onProgress: opts.onProgress,
        timer,
      });
      opts.signal?.addEventListener('abort', () => this.send({ t: 'cancel', id }), { once: true });
      this.send({ t: 'call', id, m: method, a: args });
    });
  }

  /** Opens a stream of `kind` on the other side; resolves once it accepted. */
  open(kind: string, args: unknown[] = []): Promise<LinkStream> {
    if (this.closed !== null) return Promise.reject(new LinkClosedError(this.closed));
    const s = new LinkStream(this, `${this.prefix}${this.nextId++}`);
    this.streams.set(s.id, s);
    return new Promise<LinkStream>((resolve, reject) => {
      s.opening = { resolve: () => resolve(s), reject };
      this.send({ t: 'so', s: s.id, k: kind, a: args });
    });
  }

  /** Ends the link and everything on it. */
  close(code = 1000, reason = ''): void {
    try {
      this.ws.close(code, reason.slice(0, 120));
    } catch {}
    this.end(reason || 'closed');
  }

  forget(id: string): void {
    this.streams.delete(id);
  }

  private end(reason: string): void {
    if (this.closed !== null) return;
    this.closed = reason;
    if (this.pinger) clearInterval(this.pinger);
    for (const [, p] of this.pending) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(new LinkClosedError(reason));
    }
    this.pending.clear();
    for (const [, c] of this.running) c.abort();
    this.running.clear();
    for (const s of [...this.streams.values()])
      s.remote({ t: 'sx', s: s.id, key: 'board.offline', msg: reason });
    this.streams.clear();
    for (const fn of this.closeHandlers) fn(reason);
    this.closeHandlers.clear();
  }

  private onFrame(h: Header, data: Buffer): void {
    switch (h.t) {
      case 'call':
        void this.answer(h);
        return;
      case 'ret':
      case 'err': {
        const p = this.pending.get(Number(h.id));
        if (!p) return;
        this.pending.delete(Number(h.id));
        if (p.timer) clearTimeout(p.timer);
        if (h.t === 'ret') p.resolve(h.v);
        else p.reject(new DriverError(String(h.key ?? 'driver.failed'), String(h.msg ?? 'failed')));
        return;
      }
      case 'prog':
        this.pending.get(Number(h.id))?.onProgress?.(h.p);
        return;
      case 'cancel':
        this.running.get(Number(h.id))?.abort();
        return;
      case 'ev':
        for (const fn of this.eventHandlers) fn(h, data);
        return;
      case 'so':
        void this.accept(h);
        return;
      default: {
        const s = typeof h.s === 'string' ? this.streams.get(h.s) : undefined;
        s?.remote(h, data);
      }
    }
  }

  private async answer(h: Header): Promise<void> {
    const id = Number(h.id);
    const ctl = new AbortController();
    this.running.set(id, ctl);
    try {
      if (!this.handlers.call) throw new DriverError('capability.unsupported', 'No calls here');
      const v = await this.handlers.call(String(h.m), Array.isArray(h.a) ? h.a : [], {
        progress: (p) => this.send({ t: 'prog', id, p }),
        signal: ctl.signal,
      });
      this.send({ t: 'ret', id, v: v ?? null });
    } catch (err) {
      const e = err as Error & { key?: string };
      this.send({ t: 'err', id, key: typeof e.key === 'string' ? e.key : 'driver.failed', msg: e.message });
    } finally {
      this.running.delete(id);
    }
  }

  private async accept(h: Header): Promise<void> {
    const id = String(h.s);
    if (this.streams.has(id) || id.startsWith(this.prefix)) return;
    const s = new LinkStream(this, id);
    this.streams.set(id, s);
    try {
      if (!this.handlers.stream) throw new DriverError('capability.unsupported', 'No streams here');
      await this.handlers.stream(String(h.k), Array.isArray(h.a) ? h.a : [], s);
      this.send({ t: 'sok', s: id });
    } catch (err) {
      const e = err as Error & { key?: string };
      this.send({ t: 'sx', s: id, key: typeof e.key === 'string' ? e.key : 'driver.failed', msg: e.message });
      this.streams.delete(id);
      s.destroy();
    }
  }
}

/**
 * One byte stream over a link: a Duplex whose writes wait for the reader's credit. Side messages
 * (`message`) carry what is not bytes (a PTY's resize, its exit).
 */
export class LinkStream extends Duplex {
  /** Bytes this side may still send. */
  private credit = STREAM_WINDOW;
  private waiting: { chunk: Buffer; cb: (err?: Error | null) => void } | null = null;
  /** Bytes received and pushed since the last credit sent. */
  private received = 0;
  private remoteEnded = false;
  private localEnded = false;
  private over = false;
  opening: { resolve(): void; reject(e: Error): void } | null = null;

  constructor(
    private readonly link: Link,
    readonly id: string,
  ) {
    super({ allowHalfOpen: true, highWaterMark: CHUNK });
    // Failures reach the other side as `sx` and this side's users through their own listeners and
    // pipelines: one nobody listened to must never take the process down.
    this.on('error', () => {});
  }

  /** A side message to the other end (not data). */
  message(fields: Record<string, unknown>): void {
    if (!this.over) this.link.send({ t: 'sm', s: this.id, ...fields });
  }

  /** Frames from the other side for this stream (called by the link). */
  remote(h: Header, data?: Buffer): void {
    switch (h.t) {
      case 'sok':
        this.opening?.resolve();
        this.opening = null;
        return;
      case 'sd':
        if (!data || this.remoteEnded) return;
        this.received += data.length;
        if (this.push(data)) this.grant();
        return;
      case 'sc': {
        const n = Number(h.n);
        if (Number.isSafeInteger(n) && n > 0) this.credit += n;
        this.flushWaiting();
        return;
      }
      case 'sm':
        this.emit('message', h);
        return;
      case 'se':
        this.remoteEnded = true;
        this.push(null);
        this.maybeForget();
        return;
      case 'sx': {
        this.over = true;
        this.link.forget(this.id);
        const err = h.key ? new DriverError(String(h.key), String(h.msg ?? 'stream failed')) : null;
        if (this.opening) {
          this.opening.reject(err ?? new DriverError('driver.failed', 'stream refused'));
          this.opening = null;
        }
        if (this.waiting) {
          const w = this.waiting;
          this.waiting = null;
          w.cb(err ?? new DriverError('driver.failed', 'stream ended'));
        }
        this.destroy(err ?? undefined);
      }
    }
  }

  private grant(): void {
    if (this.received >= STREAM_WINDOW / 4 && !this.over) {
      this.link.send({ t: 'sc', s: this.id, n: this.received });
      this.received = 0;
    }
  }

  override _read(): void {
    if (this.received > 0 && !this.over) {
      this.link.send({ t: 'sc', s: this.id, n: this.received });
      this.received = 0;
    }
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.over) {
      cb(new DriverError('board.offline', 'stream ended'));
      return;
    }
    this.waiting = { chunk, cb };
    this.flushWaiting();
  }

  private flushWaiting(): void {
    const w = this.waiting;
    if (!w || this.over) return;
    let chunk = w.chunk;
    while (chunk.length && this.credit > 0) {
      const n = Math.min(chunk.length, this.credit, CHUNK);
      this.link.send({ t: 'sd', s: this.id }, chunk.subarray(0, n));
      this.credit -= n;
      chunk = chunk.subarray(n);
    }
    if (chunk.length) {
      w.chunk = chunk;
      return;
    }
    this.waiting = null;
    w.cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.localEnded = true;
    if (!this.over) this.link.send({ t: 'se', s: this.id });
    this.maybeForget();
    cb();
  }

  private maybeForget(): void {
    if (this.localEnded && this.remoteEnded) {
      this.over = true;
      this.link.forget(this.id);
    }
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (!this.over) {
      this.over = true;
      this.link.send({ t: 'sx', s: this.id, ...(err ? { key: 'driver.failed', msg: err.message } : {}) });
      this.link.forget(this.id);
    }
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = null;
      w.cb(err ?? new DriverError('driver.failed', 'stream ended'));
    }
    cb(err);
  }
}
