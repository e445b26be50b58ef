// When a shell's output is held back to go out in one larger MESSAGE instead of one per PTY read.
//
// Every PTY read (about 4 KiB during a flood) used to become one STOMP frame, one WebSocket message
// and one writev: on loopback the syscall and the TCP wake-up, not the bytes, were most of the
// server's CPU (`writev` was the top self-time function under `--cpu-prof`). A flood is recognised by
// its shape: a large chunk went out to the same subscription a moment ago. Only then is the next
// chunk held, for at most `flushMs` or until `maxBytes` are waiting. A lone keystroke's echo follows
// either nothing or a small chunk, so it is never held; neither is the first chunk of any burst.
// (Holding to the end of the loop turn, setImmediate, does not help: reads come about one per turn.)

export const COALESCE = {
  /** A data frame at least this large marks the subscription as streaming. */
  burstBytes: 1024,
  /** How long after such a frame the next chunk is held. */
  windowMs: 2,
  /** The longest a held chunk waits (one timer per connection). */
  flushMs: 1,
  /** Held bytes of one subscription that are sent at once (when nothing is in flight). */
  maxBytes: 128 * 1024,
} as const;

export type CoalescePolicy = { readonly [K in keyof typeof COALESCE]: number };

/**
 * Whether output for a subscription whose last data frame carried `lastBytes` bytes at `lastAt` (ms,
 * a monotonic clock; -Infinity for never) is held at `now` rather than sent at once.
 */
export function holdOutput(
  now: number,
  lastAt: number,
  lastBytes: number,
  policy: CoalescePolicy = COALESCE,
): boolean {
  return lastBytes >= policy.burstBytes && now - lastAt < policy.windowMs;
}
