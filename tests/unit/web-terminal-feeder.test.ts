import { describe, expect, it } from 'vitest';
import { FEED_SLICE_BYTES, nextTask, OutputFeeder } from '#web/terminal/feeder.ts';

/** A terminal that parses one write per call of `parse()` (as xterm does, later), recording each. */
function fakeTerminal() {
  const writes: Array<Uint8Array | string> = [];
  const waiting: Array<() => void> = [];
  return {
    writes,
    write: (d: Uint8Array | string, parsed: () => void) => {
      writes.push(d);
      waiting.push(parsed);
    },
    parse: () => waiting.shift()?.(),
    get unparsed() {
      return waiting.length;
    },
  };
}

describe('output handed to xterm a slice per task', () => {
  it('writes an idle terminal’s output at once, and the next slice only after the last is parsed, in a later task', async () => {
    const term = fakeTerminal();
    const tasks: Array<() => void> = [];
    const feeder = new OutputFeeder(term.write, 4, (fn) => tasks.push(fn));
    let done = 0;
    const bytes = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    feeder.push(bytes, () => done++);
    // The first slice went straight in (an echo is parsed in the task that received it).
    expect(term.writes).toHaveLength(1);
    expect(feeder.pending).toBe(6);
    term.parse();
    // Not written from inside xterm's callback: a new task does it.
    expect(term.writes).toHaveLength(1);
    expect(tasks).toHaveLength(1);
    tasks.shift()!();
    expect(term.writes).toHaveLength(2);
    term.parse();
    tasks.shift()!();
    term.parse();
    expect(tasks).toHaveLength(0);
    expect(done).toBe(1);
    expect(term.writes.map((w) => [...(w as Uint8Array)])).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7, 8],
      [9, 10],
    ]);
    // Views of the received bytes, not copies.
    expect(term.writes.every((w) => (w as Uint8Array).buffer === bytes.buffer)).toBe(true);
  });

  it('keeps the order of bytes and notices given while busy, and calls each callback once its own part is parsed', async () => {
    const term = fakeTerminal();
    const feeder = new OutputFeeder(term.write, 2, (fn) => queueMicrotask(fn));
    const order: string[] = [];
    feeder.push(new Uint8Array([1, 2, 3]), () => order.push('a'));
    feeder.push('notice', () => order.push('notice'));
    feeder.push(new Uint8Array([4]), () => order.push('b'));
    for (let i = 0; i < 10; i++) {
      term.parse();
      await Promise.resolve();
    }
    expect(term.writes.map((w) => (typeof w === 'string' ? w : [...w]))).toEqual([
      [1, 2],
      [3],
      'notice',
      [4],
    ]);
    expect(order).toEqual(['a', 'notice', 'b']);
    expect(term.unparsed).toBe(0);
  });

  it('writes nothing more once stopped (a disposed terminal)', () => {
    const term = fakeTerminal();
    const tasks: Array<() => void> = [];
    const feeder = new OutputFeeder(term.write, 1, (fn) => tasks.push(fn));
    feeder.push(new Uint8Array([1, 2, 3]));
    feeder.stop();
    term.parse();
    for (const t of tasks.splice(0)) t();
    feeder.push(new Uint8Array([4]));
    expect(term.writes).toHaveLength(1);
    expect(() => new OutputFeeder(term.write, 0)).toThrow(RangeError);
  });

  it('runs tasks given to nextTask in order, each later than the caller', async () => {
    const seen: number[] = [];
    const all = new Promise<void>((resolve) => {
      nextTask(() => seen.push(1));
      nextTask(() => seen.push(2));
      nextTask(() => (seen.push(3), resolve()));
    });
    expect(seen).toEqual([]);
    await all;
    expect(seen).toEqual([1, 2, 3]);
    expect(FEED_SLICE_BYTES).toBeGreaterThanOrEqual(4096);
  });

  it('asks a browser with a task scheduler for a background task, so what waits beside it goes first', async () => {
    // Node has no `scheduler.postTask`; this stands in for Chromium's (tests/bench/flood.bench.ts
    // measures what it buys in a real one).
    const asked: Array<{ fn: () => void; priority: string }> = [];
    const g = globalThis as { scheduler?: unknown };
    const before = g.scheduler;
    g.scheduler = {
      postTask: (fn: () => void, o: { priority: string }) => {
        asked.push({ fn, priority: o.priority });
        return Promise.resolve();
      },
    };
    try {
      const term = fakeTerminal();
      const feeder = new OutputFeeder(term.write, 2);
      feeder.push(new Uint8Array([1, 2, 3, 4, 5]));
      term.parse();
      expect(asked.map((a) => a.priority)).toEqual(['background']);
      expect(term.writes).toHaveLength(1);
      asked.shift()!.fn();
      expect(term.writes).toHaveLength(2);
    } finally {
      g.scheduler = before;
    }
  });
});
