import { describe, expect, it } from 'vitest';
import type { BusMessage } from '#server/realtime/bus.ts';
import { COALESCE, holdOutput } from '#server/realtime/coalesce.ts';
import {
  FramePool,
  type OutputClock,
  type OutputPort,
  ShellOutput,
  type ShellView,
} from '#server/realtime/shell-output.ts';
import { parseMessage } from '#shared/stomp-codec.ts';

describe('holdOutput', () => {
  const cases: Array<[string, number, number, number, boolean]> = [
    ['never sent', 10, Number.NEGATIVE_INFINITY, 0, false],
    ['a small frame a moment ago (an echo)', 10, 9.5, 1, false],
    ['a large frame a moment ago (a flood)', 10, 9.5, 4096, true],
    ['exactly the burst size a moment ago', 10, 9.9, COALESCE.burstBytes, true],
    ['a large frame long ago (a pause)', 10, 10 - COALESCE.windowMs, 4096, false],
  ];
  it.each(cases)('%s', (_name, now, lastAt, lastBytes, held) => {
    expect(holdOutput(now, lastAt, lastBytes)).toBe(held);
  });
});

/** A connection's side of ShellOutput: frames kept, sends completed when the test says. */
function makeHarness() {
  let t = 0;
  const timers: Array<{ fn: () => void; at: number } | null> = [];
  const clock: OutputClock = {
    now: () => t,
    setTimer: (fn, ms) => timers.push({ fn, at: t + ms }) - 1,
    clearTimer: (i) => {
      timers[i as number] = null;
    },
  };
  const frames: Buffer[] = [];
  let inflight = 0;
  const published: Array<{ channel: string; msg: BusMessage }> = [];
  const io: OutputPort = {
    inflight: () => inflight,
    buffered: () => 0,
    sendFrame: (f) => {
      frames.push(Buffer.from(f));
      inflight++;
    },
    sendEvent: () => {},
    messageId: () => String(frames.length + 1),
    publish: (channel, msg) => published.push({ channel, msg }),
  };
  const out = new ShellOutput(io, 4 * 1024 * 1024, clock);
  return {
    out,
    frames,
    published,
    /** The socket took every send. */
    drain() {
      while (inflight > 0) {
        inflight--;
        out.drained();
      }
    },
    advance(ms: number) {
      t += ms;
      for (let i = 0; i < timers.length; i++) {
        const x = timers[i];
        if (x && x.at <= t) {
          timers[i] = null;
          x.fn();
        }
      }
    },
    pendingTimers: () => timers.filter(Boolean).length,
    /** Offset and body of each output MESSAGE. */
    messages: () =>
      frames.map((f) => {
        const [m] = parseMessage(f);
        return { offset: Number(m.headers.offset), body: Buffer.from(m.body ?? []).toString('latin1') };
      }),
  };
}

function liveView(h: ReturnType<typeof makeHarness>): ShellView {
  const view = h.out.newView('sub-0', '/topic/shell/s1', 's1', 'v1');
  h.out.onBusMessage(view, { h: { t: 'replay', v: 'v1', o: 0, lost: 0 }, data: Buffer.alloc(0) });
  h.drain();
  h.frames.length = 0;
  return view;
}

const data = (o: number, s: string): BusMessage => ({ h: { t: 'data', o }, data: Buffer.from(s, 'latin1') });

describe('ShellOutput coalescing', () => {
  it('sends a lone small chunk (a keystroke echo) at once, without a timer', () => {
    const h = makeHarness();
    const view = liveView(h);
    h.out.onBusMessage(view, data(0, 'a'));
    expect(h.messages()).toEqual([{ offset: 0, body: 'a' }]);
    h.drain();
    h.out.onBusMessage(view, data(1, 'b'));
    expect(h.messages()).toEqual([
      { offset: 0, body: 'a' },
      { offset: 1, body: 'b' },
    ]);
    expect(h.pendingTimers()).toBe(0);
  });

  it('holds chunks that follow a large one and sends them as one frame at the exact offset', () => {
    const h = makeHarness();
    const view = liveView(h);
    const big = 'x'.repeat(4096);
    h.out.onBusMessage(view, data(0, big));
    expect(h.frames).toHaveLength(1);
    h.drain();
    h.advance(0.2);
    h.out.onBusMessage(view, data(4096, 'y'.repeat(4096)));
    h.drain();
    h.out.onBusMessage(view, data(8192, 'z'.repeat(100)));
    h.drain();
    expect(h.frames).toHaveLength(1);
    expect(h.out.pendingBytes).toBe(4196);
    h.advance(COALESCE.flushMs);
    expect(h.messages()).toEqual([
      { offset: 0, body: big },
      { offset: 4096, body: `${'y'.repeat(4096)}${'z'.repeat(100)}` },
    ]);
    expect(h.out.pendingBytes).toBe(0);
    expect(view.next).toBe(8292);
  });

  it('sends held output once it reaches the bound, without waiting for the timer', () => {
    const h = makeHarness();
    const view = liveView(h);
    const chunk = 'q'.repeat(4096);
    h.out.onBusMessage(view, data(0, chunk));
    h.drain();
    let o = 4096;
    while (o < 4096 + COALESCE.maxBytes) {
      h.out.onBusMessage(view, data(o, chunk));
      o += 4096;
    }
    const m = h.messages();
    expect(m).toHaveLength(2);
    expect(m[1]).toEqual({ offset: 4096, body: chunk.repeat(COALESCE.maxBytes / 4096) });
  });

  it('sends output after a pause at once even when the last frame was large', () => {
    const h = makeHarness();
    const view = liveView(h);
    h.out.onBusMessage(view, data(0, 'x'.repeat(4096)));
    h.drain();
    h.advance(COALESCE.windowMs + 1);
    h.out.onBusMessage(view, data(4096, '$ '));
    expect(h.messages()).toEqual([
      { offset: 0, body: 'x'.repeat(4096) },
      { offset: 4096, body: '$ ' },
    ]);
  });

  it('keeps held output while a send is in flight and sends it when the socket drains', () => {
    const h = makeHarness();
    const view = liveView(h);
    h.out.onBusMessage(view, data(0, 'x'.repeat(4096)));
    h.out.onBusMessage(view, data(4096, 'y'.repeat(10)));
    h.advance(COALESCE.flushMs);
    expect(h.frames).toHaveLength(1);
    h.drain();
    expect(h.messages()[1]).toEqual({ offset: 4096, body: 'y'.repeat(10) });
  });

  it('flushes held output before the shell ends, so the close follows the last bytes', () => {
    const h = makeHarness();
    const view = liveView(h);
    h.out.onBusMessage(view, data(0, 'x'.repeat(4096)));
    h.drain();
    h.out.onBusMessage(view, data(4096, 'bye'));
    h.out.onBusMessage(view, { h: { t: 'exit', reason: 'shell.exited', code: 0 } });
    expect(h.messages()[1]).toEqual({ offset: 4096, body: 'bye' });
    expect(view.state).toBe('closed');
  });

  it('drops held output of a forgotten view and its timer does nothing', () => {
    const h = makeHarness();
    const view = liveView(h);
    h.out.onBusMessage(view, data(0, 'x'.repeat(4096)));
    h.drain();
    h.out.onBusMessage(view, data(4096, 'y'));
    h.out.forget(view);
    expect(h.out.pendingBytes).toBe(0);
    h.advance(COALESCE.flushMs);
    expect(h.frames).toHaveLength(1);
  });
});

describe('FramePool', () => {
  it('reuses a large frame’s slot only after the socket released it, once', () => {
    const pool = new FramePool(64 * 1024, 16 * 1024, 2);
    const a = pool.take(40 * 1024);
    expect(a.buf.length).toBe(40 * 1024);
    expect(a.release).toBeTypeOf('function');
    a.buf.fill(7);
    // Not released yet: the next frame gets its own memory, so the first one's bytes stay as written.
    const b = pool.take(50 * 1024);
    b.buf.fill(9);
    expect(a.buf.every((x) => x === 7)).toBe(true);
    a.release?.();
    a.release?.();
    expect(pool.idle).toBe(1);
    const c = pool.take(20 * 1024);
    expect(c.buf.buffer).toBe(a.buf.buffer);
    expect(pool.idle).toBe(0);
  });

  it('leaves small and oversized frames to plain allocation, and keeps at most `keep` free slots', () => {
    const pool = new FramePool(64 * 1024, 16 * 1024, 2);
    expect(pool.take(100).release).toBeUndefined();
    expect(pool.take(65 * 1024).release).toBeUndefined();
    const taken = [pool.take(20_000), pool.take(20_000), pool.take(20_000)];
    for (const t of taken) t.release?.();
    expect(pool.idle).toBe(2);
  });

  it('gives each output frame back only when its send completes', () => {
    const pool = new FramePool(64 * 1024, 1024, 4);
    const releases: Array<(() => void) | undefined> = [];
    const io: OutputPort = {
      inflight: () => 0,
      buffered: () => 0,
      sendFrame: (_f, release) => {
        releases.push(release);
      },
      sendEvent: () => {},
      messageId: () => '1',
      publish: () => {},
    };
    const out = new ShellOutput(io, 4 * 1024 * 1024, undefined, undefined, pool);
    const view = out.newView('s', '/topic/shell/x', 'x', 'v');
    out.onBusMessage(view, { h: { t: 'replay', v: 'v', o: 0 }, data: Buffer.alloc(0) });
    out.onBusMessage(view, { h: { t: 'data', o: 0 }, data: Buffer.alloc(8 * 1024, 1) });
    expect(releases).toHaveLength(2);
    expect(releases[1]).toBeTypeOf('function');
    expect(pool.idle).toBe(0);
    releases[1]?.();
    expect(pool.idle).toBe(1);
  });
});
