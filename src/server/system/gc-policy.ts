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

import v8 from 'node:v8';

/** How far past the live heap the old generation may grow before V8 collects it again, in percent. */
export const HEAP_GROWING_PERCENT = 100;

/** The V8 flags of the policy. */
export const GC_FLAGS = [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`] as const;

/** Applies the policy to this process (V8 reads these flags at every collection, so now is in time). */
export function applyGcPolicy(setFlags: (flags: string) => void = v8.setFlagsFromString): void {
  for (const f of GC_FLAGS) setFlags(f);
}
