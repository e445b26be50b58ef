// Shell output to one socket: the shell subscriptions (views) of one STOMP connection and the bytes
// it queues for them. Lifecycle of a view: attaching (SUBSCRIBE sent an attach to the shell's owner)
// → live (the owner's replay arrived; live output follows at exact offsets) → closed (the shell ended
// or the client unsubscribed). A live view may fall behind: when the socket already holds
// SHELL_FLOW.socketBacklogBytes, output is not queued for it and the shell's ring is its buffer; once
// the socket drains below half, the missing bytes are fetched from the ring (a bounded copy at a time)
// and the stream continues where it stopped. A view's `next` is what was sent (queued) to it, the
// ceiling of what its client may acknowledge — so a client that does not read cannot let the PTY run.
//
// Output goes out at once when nothing is in flight, except while a subscription streams (see
// coalesce.ts): then chunks are held for at most COALESCE.flushMs or COALESCE.maxBytes and leave as
// one frame. A keystroke's echo, or the first chunk after a pause, is never held. Output is also
// coalesced while a send is still being written, until it drains.
// Per frame: the head's constant part is escaped once per subscription, the frame is one allocation.
import { OWNER_ANSWER_TIMEOUT_MS, shellIn } from '#server/shells/bus-protocol.ts';
import { RealtimeEvent, SHELL_FLOW } from '#shared/realtime.ts';
import { escapeHeader, serializeFrame } from '#shared/stomp-codec.ts';
import type { BusMessage } from './bus.ts';
import { COALESCE, type CoalescePolicy, holdOutput } from './coalesce.ts';

export interface ShellView {
  kind: 'shell';
  id: string;
  destination: string;
  off: (() => void) | null;
  shellId: string;
  viewerId: string;
  state: 'attaching' | 'live' | 'closed';
  /** Next absolute offset this subscriber needs: every byte before it was sent (queued) to it. */
  next: number;
  /** The client's last acknowledgement on this subscription (-1: none yet). */
  acked: number;
  pending: Buffer[];
  pendingBytes: number;
  /** The constant head of its output MESSAGEs (command, subscription, destination, content-type), escaped once. */
  head: Buffer;
  pendingOffset: number;
  /** When its last output frame went out (ShellOutput's clock) and how many bytes it carried. */
  lastSentAt: number;
  lastSentBytes: number;
  /** The socket could not take its output: the ring holds it from `next` on. */
  behind: boolean;
  /** When a fetch from the ring went out (0: none in flight). */
  fetchAt: number;
  /** The shell ended while the view was behind: the client is told once it has caught up. */
  exit: { reason: string; code: unknown } | null;
  /** The WebSocket relay writes its output (docs/native-data-plane.md): `next` only follows it here. */
  served: boolean;
  attached?: (answer: { ok: true } | { ok: false; key: string }) => void;
}

/** What the output needs of its connection. */
export interface OutputPort {
  /** Sends in flight (written, not yet taken by the kernel). */
  inflight(): number;
  /** Bytes the socket holds (ws.bufferedAmount). */
  buffered(): number;
  /** `release` runs once the socket no longer needs the frame's bytes (written, or not sent at all). */
  sendFrame(frame: Uint8Array, release?: () => void): void;
  sendEvent(subId: string, destination: string, headers: Record<string, string | undefined>): void;
  messageId(): string;
  publish(channel: string, msg: BusMessage): void;
}

/** Time and the flush timer (tests pass fake ones). */
export interface OutputClock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(t: unknown): void;
}

const realClock: OutputClock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (t) => clearTimeout(t as NodeJS.Timeout),
};

const EMPTY = Buffer.alloc(0);

/**
 * Buffers for large output frames, reused once the socket has written them. During a flood every
 * coalesced frame (up to COALESCE.maxBytes) used to be a fresh allocation outside V8's heap, about as
 * many bytes as the shell printed; that external memory is what made V8 run full collections (30 % of
 * the service's busy time in a 64 MiB `cat` under --cpu-prof). Frames below `minBytes` come from
 * Node's own small-buffer pool, frames above `slotBytes` are allocated as before; at most `keep` free
 * slots stay (about 2 MiB).
 */
export class FramePool {
  private readonly free: Buffer[] = [];
  constructor(
    readonly slotBytes = COALESCE.maxBytes + 4096,
    readonly minBytes = 16 * 1024,
    readonly keep = 16,
  ) {}

  /** A buffer of exactly `size` bytes and the function that gives its slot back (none when unpooled). */
  take(size: number): { buf: Buffer; release?: () => void } {
    if (size < this.minBytes || size > this.slotBytes) return { buf: Buffer.allocUnsafe(size) };
    const slot = this.free.pop() ?? Buffer.allocUnsafeSlow(this.slotBytes);
    let given = false;
    return {
      buf: slot.subarray(0, size),
      release: () => {
        if (given) return;
        given = true;
        if (this.free.length < this.keep) this.free.push(slot);
      },
    };
  }

  /** Free slots held (tests). */
  get idle(): number {
    return this.free.length;
  }
}

const framePool = new FramePool();

export class ShellOutput {
  /** Coalesced bytes across the views, waiting for the in-flight send to drain. */
  pendingBytes = 0;
  private readonly dirty = new Set<ShellView>();
  private readonly lagging = new Set<ShellView>();
  /** Flushes held output (armed while a view's output is held for coalescing). */
  private timer: unknown = null;

  constructor(
    private readonly io: OutputPort,
    private readonly limit: number = SHELL_FLOW.socketBacklogBytes,
    private readonly clock: OutputClock = realClock,
    private readonly policy: CoalescePolicy = COALESCE,
    private readonly pool: FramePool = framePool,
  ) {}

  newView(id: string, destination: string, shellId: string, viewerId: string): ShellView {
    return {
      kind: 'shell',
      id,
      destination,
      off: null,
      shellId,
      viewerId,
      state: 'attaching',
      next: 0,
      acked: -1,
      pending: [],
      pendingBytes: 0,
      head: Buffer.from(
        `MESSAGE\nsubscription:${escapeHeader(id)}\ndestination:${escapeHeader(destination)}\ncontent-type:application/octet-stream\n`,
      ),
      pendingOffset: 0,
      lastSentAt: Number.NEGATIVE_INFINITY,
      lastSentBytes: 0,
      behind: false,
      fetchAt: 0,
      exit: null,
      served: false,
    };
  }

  /** Bytes the connection holds for its socket: in the socket's buffer, and coalesced here. */
  backlog(): number {
    return this.io.buffered() + this.pendingBytes;
  }

  /** Views that fell behind (tests, metrics). */
  get laggingViews(): number {
    return this.lagging.size;
  }

  private room(): number {
    return Math.max(0, this.limit - this.backlog());
  }

  onBusMessage(view: ShellView, m: BusMessage): void {
    const h = m.h;
    if (view.state === 'closed') return;
    switch (h.t) {
      case 'data':
        if (view.state === 'live' && m.data) this.take(view, Number(h.o), m.data);
        return;
      case 'replay': {
        if (h.v !== view.viewerId || view.state !== 'attaching') return;
        const o = Number(h.o);
        const data = m.data ?? EMPTY;
        view.state = 'live';
        const n = Math.min(data.length, this.room());
        view.next = o + n;
        // Sent even when empty: it tells the client where the stream starts and that it is live.
        this.sendOutput(view, o, [data.subarray(0, n)], n, Number(h.lost) || 0);
        if (n < data.length) this.fallBehind(view);
        view.attached?.({ ok: true });
        return;
      }
      case 'catchup':
        if (h.v === view.viewerId && view.state === 'live' && view.fetchAt) this.caughtUp(view, m);
        return;
      case 'refused':
        if (h.v === view.viewerId) view.attached?.({ ok: false, key: String(h.key) });
        return;
      case 'kick':
        // A guest removed from a joined shell: this view ends, the shell goes on for the others.
        if (h.v === view.viewerId && view.state === 'live') this.finish(view, String(h.reason ?? ''), null);
        return;
      case 'presence':
        if (view.state === 'live') this.presence(view, h);
        return;
      case 'exit': {
        if (view.state !== 'live') return;
        if (view.behind) {
          // The last output is still in the ring: the end is told after it.
          view.exit = { reason: String(h.reason ?? ''), code: h.code };
          this.catchUp();
          return;
        }
        this.finish(view, String(h.reason ?? ''), h.code);
        return;
      }
    }
  }

  /** Live output: queued when it fits the socket's backlog, otherwise the view falls behind. */
  private take(view: ShellView, offset: number, chunk: Buffer): void {
    let o = offset;
    let data = chunk;
    const end = o + data.length;
    if (view.served) {
      view.next = Math.max(view.next, end);
      return;
    }
    if (end <= view.next || view.behind) return;
    // A gap (after a partial replay or catch-up): the ring has the bytes in between.
    if (o > view.next) {
      this.fallBehind(view);
      return;
    }
    if (o < view.next) {
      data = data.subarray(view.next - o);
      o = view.next;
    }
    const n = Math.min(data.length, this.room());
    if (n > 0) {
      view.next = o + n;
      this.output(view, o, n === data.length ? data : data.subarray(0, n));
    }
    if (n < data.length) this.fallBehind(view);
  }

  private caughtUp(view: ShellView, m: BusMessage): void {
    view.fetchAt = 0;
    const h = m.h;
    const end = Number(h.end);
    const lost = Number(h.lost) || 0;
    let o = Number(h.o);
    let data = m.data ?? EMPTY;
    if (o < view.next) {
      data = data.subarray(Math.min(data.length, view.next - o));
      o = view.next;
    }
    const n = Math.min(data.length, this.room());
    if (n > 0 || lost > 0) {
      this.flushView(view);
      view.next = o + n;
      this.sendOutput(view, o, [data.subarray(0, n)], n, lost);
    }
    if (view.next >= end) {
      view.behind = false;
      this.lagging.delete(view);
      if (view.exit) this.finish(view, view.exit.reason, view.exit.code);
    } else {
      this.catchUp();
    }
  }

  private fallBehind(view: ShellView): void {
    view.behind = true;
    this.lagging.add(view);
    this.catchUp();
  }

  /**
   * Fetches ring bytes for the views behind, once the socket has drained below half its bound. A fetch
   * the owner does not answer in time is asked again (or, for an ended shell, the end is told as is).
   */
  catchUp(now = Date.now()): void {
    if (this.lagging.size === 0 || this.backlog() > this.limit / 2) return;
    for (const v of [...this.lagging]) {
      if (v.state !== 'live') {
        this.lagging.delete(v);
        continue;
      }
      if (v.fetchAt && now - v.fetchAt < OWNER_ANSWER_TIMEOUT_MS) continue;
      if (v.fetchAt && v.exit) {
        this.finish(v, v.exit.reason, v.exit.code);
        continue;
      }
      v.fetchAt = now;
      this.io.publish(shellIn(v.shellId), {
        h: { t: 'fetch', v: v.viewerId, from: v.next, max: SHELL_FLOW.catchUpBytes },
      });
      if (this.backlog() > this.limit / 2) return;
    }
  }

  /** Who watches a joined shell: an event with a JSON body (SharePresence, src/shared/share.ts). */
  private presence(view: ShellView, h: Record<string, unknown>): void {
    this.flushView(view);
    this.io.sendFrame(
      serializeFrame({
        command: 'MESSAGE',
        headers: {
          subscription: view.id,
          'message-id': this.io.messageId(),
          destination: view.destination,
          event: RealtimeEvent.presence,
          'content-type': 'application/json',
        },
        body: Buffer.from(JSON.stringify({ shellId: h.shellId, users: h.users })),
      }),
    );
  }

  private finish(view: ShellView, reason: string, code: unknown): void {
    this.flushView(view);
    view.state = 'closed';
    view.behind = false;
    this.lagging.delete(view);
    view.off?.();
    view.off = null;
    this.io.sendEvent(view.id, view.destination, {
      event: RealtimeEvent.closed,
      reason,
      'exit-code': code === null || code === undefined ? undefined : String(code),
    });
  }

  /**
   * Sends at once when the socket is idle and the view is not streaming; otherwise accumulates until
   * the flush timer, COALESCE.maxBytes, or (when a send is in flight) until it drains.
   */
  private output(view: ShellView, offset: number, data: Buffer): void {
    const idle = this.io.inflight() === 0;
    if (view.pendingBytes === 0) {
      if (idle && !holdOutput(this.clock.now(), view.lastSentAt, view.lastSentBytes, this.policy)) {
        this.sendOutput(view, offset, [data], data.length, 0);
        return;
      }
      view.pendingOffset = offset;
    }
    view.pending.push(data);
    view.pendingBytes += data.length;
    this.pendingBytes += data.length;
    this.dirty.add(view);
    if (idle && view.pendingBytes >= this.policy.maxBytes) this.flushView(view);
    else if (this.timer === null) this.timer = this.clock.setTimer(this.flushHeld, this.policy.flushMs);
  }

  /** The hold is over: what waits goes out now, unless a send is in flight (then on drain). */
  private readonly flushHeld = (): void => {
    this.timer = null;
    if (this.io.inflight() === 0 && this.dirty.size) for (const v of [...this.dirty]) this.flushView(v);
  };

  flushView(view: ShellView): void {
    if (view.pendingBytes === 0) return;
    const chunks = view.pending;
    const n = view.pendingBytes;
    view.pending = [];
    view.pendingBytes = 0;
    this.pendingBytes -= n;
    this.dirty.delete(view);
    this.sendOutput(view, view.pendingOffset, chunks, n, 0);
  }

  /** One MESSAGE: the view's constant head, then per-frame headers, the bytes and NUL in one buffer. */
  private sendOutput(view: ShellView, offset: number, chunks: Buffer[], n: number, lost: number): void {
    // The rest of the head is ASCII (digits and fixed names).
    const tail = `message-id:${this.io.messageId()}\noffset:${offset}\n${lost ? `truncated:${lost}\n` : ''}content-length:${n}\n\n`;
    const hl = view.head.length + tail.length;
    const { buf: frame, release } = this.pool.take(hl + n + 1);
    view.head.copy(frame, 0);
    frame.write(tail, view.head.length, 'latin1');
    let at = hl;
    for (const c of chunks) {
      frame.set(c, at);
      at += c.length;
    }
    frame[at] = 0;
    view.lastSentAt = this.clock.now();
    view.lastSentBytes = n;
    this.io.sendFrame(frame, release);
  }

  /**
   * A send completed: flush what was coalesced once nothing is in flight (unless it is being held:
   * the timer flushes it), then catch up.
   */
  drained(): void {
    if (this.io.inflight() === 0 && this.timer === null && this.dirty.size)
      for (const v of [...this.dirty]) this.flushView(v);
    if (this.lagging.size) this.catchUp();
  }

  /** The view is gone (unsubscribed, connection closed): nothing of it stays here. */
  forget(view: ShellView): void {
    this.pendingBytes -= view.pendingBytes;
    view.pending = [];
    view.pendingBytes = 0;
    view.behind = false;
    view.exit = null;
    this.dirty.delete(view);
    this.lagging.delete(view);
  }

  clear(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
    this.dirty.clear();
    this.lagging.clear();
    this.pendingBytes = 0;
  }
}
