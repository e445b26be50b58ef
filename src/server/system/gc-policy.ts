// The service's garbage-collection policy, set once by the process entry (main.ts) before it serves.
//
// V8 sizes the old generation's next limit from how fast the program allocated before its last full
// collection. This service's heap is mostly long-lived (about 40 MB: routes, schemas, sessions) and
// its bytes in flight are off the heap (Buffers), so after a quiet spell the limit ends up only about
// a fifth above what is live — less than the young generation, and V8 starts marking the whole heap
// again each time it checks. During a shell flood that meant a full collection every 0.3 s, back to
// back: 4–10 per 87.6 MiB, half of the service's CPU per byte (`--trace-gc`, tests/bench and
// ../shared/bench). Growing the heap by 100 % past what is live after each collection instead (V8's
// own factor ranges from 1.1 to 4) takes them to 0–3 per flood: service CPU per GiB 7.2–10 s → 2.5–3.9
// s in alternated runs, for at most twice the live heap in memory.
//
// V8's memory reducer is off (`--no-memory-reducer`, a flag of the node command: V8 sets the reducer
// up with the heap, so setting it later does nothing). When allocation is slow — someone typing in a
// shell — it takes the service for idle and runs full collections to shrink the heap, each stopping
// the event loop for 2–16 ms and marking in steps for 14–21 ms more. Over 4,000 keystrokes 5 ms apart
// it ran one to three of them: the slowest echo took 11–40 ms with it (six runs) and 7.6–13.3 ms
// without (three), p99 2.8–3.7 against 2.7–3.1 ms (echo traces against the service on PostgreSQL,
// alternated). The heap it would give back is about 35 MB. `npm start`, `npm run serve` and the
// tests' service start the node command with SERVICE_NODE_FLAGS.

import v8 from 'node:v8';

/** How far past the live heap the old generation may grow before V8 collects it again, in percent. */
export const HEAP_GROWING_PERCENT = 100;

/** The V8 flags of the policy. */
export const GC_FLAGS = [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`] as const;

/** Applies the policy to this process (V8 reads these flags at every collection, so now is in time). */
export function applyGcPolicy(setFlags: (flags: string) => void = v8.setFlagsFromString): void {
  for (const f of GC_FLAGS) setFlags(f);
}

/** Flags of the `node` command that starts the service (V8 reads them only as it sets up the heap). */
export const SERVICE_NODE_FLAGS = ['--no-memory-reducer'] as const;
