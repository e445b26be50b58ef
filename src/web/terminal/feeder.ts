// Output is handed to xterm a slice at a time, the next slice in a new task once xterm has parsed the
// last. xterm's own write buffer parses everything it holds for 12 ms before it yields, and during a
// flood it always holds something, so the page's main thread ran xterm back to back and a WebSocket
// message waited behind several such tasks: another shell's echo reached the page 22–26 ms (median)
// after the service had sent it, 40–56 ms at p90 (timestamps on both sides, tests/bench/flood.bench.ts,
// 2 cores). Slices of 32 KiB: 13 / 21–26 ms; over a 256 MiB flood, echo p99 63 → 43–44 ms, for 13–17 %
// less flood throughput (the page also draws more often). 16 KiB cost 20–30 %. Between two slices the
// browser delivers messages, input (a Ctrl+C) and frames. Slices are views of the received bytes, not
// copies; their order is the order they were given in.
//
// The next slice is a task of background priority where the browser has a task scheduler
// (`scheduler.postTask`, Chromium): a WebSocket message, a key or a frame waiting beside it goes
// first, not in turn. Another shell's echo during a 256 MiB flood, p99: 41–58 ms (median 48) with
// posted messages, 31–51 ms (median 39) with background tasks, at the same flood rate (5–8 MiB/s;
// tests/bench/flood.bench.ts, runs alternated on one machine). Elsewhere a posted message does it.

/** Largest piece of output parsed in one task. */
export const FEED_SLICE_BYTES = 32 * 1024;

type Write = (data: Uint8Array | string, parsed: () => void) => void;

/** The browser's task scheduler, where it has one (Chromium 94+). */
interface TaskScheduler {
  postTask(
    fn: () => void,
    options: { priority: 'user-blocking' | 'user-visible' | 'background' },
  ): Promise<unknown>;
}

/**
 * Runs `fn` in a task of its own, soon: after the tasks already waiting where the browser can rank
 * them (`scheduler.postTask`, background priority), else in turn (a MessageChannel: no 4 ms clamp as
 * for nested timers).
 */
export function nextTask(fn: () => void): void {
  const scheduler = (globalThis as { scheduler?: Partial<TaskScheduler> }).scheduler;
  if (typeof scheduler?.postTask === 'function') {
    void scheduler.postTask(fn, { priority: 'background' });
    return;
  }
  waiting.push(fn);
  if (!channel) {
    channel = new MessageChannel();
    channel.port1.onmessage = () => waiting.shift()?.();
    // (Node, in unit tests: the port must not hold the process open.)
    (channel.port1 as unknown as { unref?: () => void }).unref?.();
  }
  channel.port2.postMessage(0);
}
let channel: MessageChannel | null = null;
const waiting: Array<() => void> = [];

export class OutputFeeder {
  private readonly queue: Array<{ data: Uint8Array | string; parsed?: () => void }> = [];
  private busy = false;
  private stopped = false;

  constructor(
    private readonly write: Write,
    private readonly slice = FEED_SLICE_BYTES,
    private readonly yieldTask: (fn: () => void) => void = nextTask,
  ) {
    if (slice < 1) throw new RangeError('slice size must be at least 1');
  }

  /** Bytes or text for the terminal; `parsed` runs once all of it is parsed. */
  push(data: Uint8Array | string, parsed?: () => void): void {
    if (this.stopped) return;
    if (typeof data === 'string' || data.length <= this.slice) this.queue.push({ data, parsed });
    else
      for (let at = 0; at < data.length; at += this.slice) {
        const end = Math.min(data.length, at + this.slice);
        this.queue.push({ data: data.subarray(at, end), parsed: end === data.length ? parsed : undefined });
      }
    // Idle: at once, so a keystroke's echo is parsed in the task that received it.
    if (!this.busy) this.pump();
  }

  /** Bytes given and not yet parsed. */
  get pending(): number {
    return this.queue.reduce((n, q) => n + q.data.length, 0);
  }

  /** Drops what is queued; nothing more is written. */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
  }

  private pump(): void {
    // (stop() empties the queue, and push() adds nothing after it.)
    const item = this.queue.shift();
    this.busy = item !== undefined;
    if (!item) return;
    this.write(item.data, () => {
      item.parsed?.();
      if (this.queue.length) this.yieldTask(() => this.pump());
      else this.busy = false;
    });
  }
}
