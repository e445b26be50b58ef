// Sampling many boards at once: each board's synchronous reads of /proc run in a turn of the event
// loop of their own (procfs.ts inTurn), so I/O that completes meanwhile (a keystroke's socket read)
// is handled between two boards, not after all of them.
import fs from 'node:fs';
import { expect, it } from 'vitest';
import { inTurn } from '#server/boards/local/procfs.ts';

const busy = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
};

it('runs each queued task in its own turn, in order, with I/O handled in between', async () => {
  const ran: number[] = [];
  let ioSeenAfter = -1;
  // One request to the thread pool, answered while the first task holds the loop.
  fs.stat('/', () => {
    ioSeenAfter = ran.length;
  });
  const tasks = [0, 1, 2, 3, 4].map((i) =>
    inTurn(() => {
      busy(5);
      ran.push(i);
      return i * 10;
    }),
  );
  expect(await Promise.all(tasks)).toEqual([0, 10, 20, 30, 40]);
  expect(ran).toEqual([0, 1, 2, 3, 4]);
  // Taken between two tasks: after the first (it held the loop), well before the last.
  expect(ioSeenAfter).toBeGreaterThanOrEqual(1);
  expect(ioSeenAfter).toBeLessThanOrEqual(2);
});

it('passes a task’s error to its caller only, and the next tasks still run', async () => {
  const failed = inTurn(() => {
    throw new Error('gone');
  });
  const next = inTurn(() => 'next');
  await expect(failed).rejects.toThrow('gone');
  await expect(next).resolves.toBe('next');
});
