// What the PTY host suites share (pty-host.test.ts, pty-host-fake.test.ts): a terminal's end, and
// waits on a condition.
import type { PtyHandle } from '#server/boards/driver.ts';

export const ended = (p: PtyHandle) =>
  new Promise<{ exitCode: number | null; reason?: string }>((r) => p.onExit(r));
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits until `done()` holds, checking every 20 ms, for `ms` at most. */
export const until = async (done: () => boolean, ms: number) => {
  const t0 = Date.now();
  while (!done() && Date.now() - t0 < ms) await sleep(20);
};
