import { describe, expect, it } from 'vitest';
import { CURSOR_OFF_CLASS, CursorBlink } from '#web/terminal/cursor-blink.ts';

/** A clock whose interval is driven by the test. */
function fakeClock() {
  let now = 0;
  let timer: { fn: () => void; ms: number; next: number } | null = null;
  let created = 0;
  return {
    clock: {
      now: () => now,
      repeat: (fn: () => void, ms: number) => {
        created++;
        timer = { fn, ms, next: now + ms };
        return timer;
      },
      cancel: (t: unknown) => {
        if (t === timer) timer = null;
      },
    },
    /** Moves time on, running the interval at each of its due times. */
    advance(ms: number) {
      const end = now + ms;
      while (timer && timer.next <= end) {
        now = timer.next;
        timer.next += timer.ms;
        timer.fn();
      }
      now = end;
    },
    get created() {
      return created;
    },
  };
}

function element() {
  const classes = new Set<string>();
  const changes: boolean[] = [];
  return {
    classList: {
      toggle(token: string, force: boolean) {
        if (force) classes.add(token);
        else classes.delete(token);
        changes.push(force);
        return force;
      },
    },
    get off() {
      return classes.has(CURSOR_OFF_CLASS);
    },
    changes,
  };
}

const policy = { periodMs: 600, idleMs: 10_000 };

/** A blink on a fake clock and element, started (the terminal took the focus). */
function started() {
  const t = fakeClock();
  const el = element();
  const blink = new CursorBlink(el, t.clock, policy);
  blink.start();
  return { t, el, blink };
}

describe("the cursor's blink", () => {
  it('hides and shows the cursor once per period, drawing only at each toggle', () => {
    const { t, el, blink } = started();
    expect(el.off).toBe(false);
    t.advance(600);
    expect(el.off).toBe(true);
    t.advance(600);
    expect(el.off).toBe(false);
    t.advance(600 * 4);
    // Six toggles in six periods: nothing between them.
    expect(el.changes).toEqual([true, false, true, false, true, false]);
  });

  it('shows the cursor at a key and keeps it shown for a whole period after', () => {
    const { t, el, blink } = started();
    t.advance(600);
    expect(el.off).toBe(true);
    t.advance(100);
    blink.poke();
    expect(el.off).toBe(false);
    t.advance(500); // 500 ms after the key: still shown
    expect(el.off).toBe(false);
    t.advance(600); // a period since the key has passed
    expect(el.off).toBe(true);
    // Keys keep coming: the cursor stays shown throughout, on one timer.
    for (let i = 0; i < 20; i++) {
      t.advance(150);
      blink.poke();
      expect(el.off).toBe(false);
    }
    expect(t.created).toBe(1);
  });

  it('stops after a quiet spell with the cursor shown, and starts again at the next key', () => {
    const { t, el, blink } = started();
    t.advance(10_000 + 600);
    expect(blink.running).toBe(false);
    expect(el.off).toBe(false);
    const toggles = el.changes.length;
    t.advance(60_000);
    expect(el.changes.length).toBe(toggles);
    blink.poke();
    expect(blink.running).toBe(true);
    t.advance(600);
    expect(el.off).toBe(true);
  });

  it('keeps blinking at a key without touching the page; the echo moving the cursor shows it', () => {
    const { t, el, blink } = started();
    t.advance(600);
    expect(el.off).toBe(true);
    const before = el.changes.length;
    blink.touch(); // the key: nothing changes on the page in its task
    expect(el.changes.length).toBe(before);
    blink.poke(); // its echo moved the cursor
    expect(el.off).toBe(false);
    // A key after the quiet spell starts the timer again, still without a change.
    t.advance(20_000);
    expect(blink.running).toBe(false);
    const quiet = el.changes.length;
    blink.touch();
    expect(blink.running).toBe(true);
    expect(el.changes.length).toBe(quiet);
    // Keys alone keep it from stopping.
    for (let i = 0; i < 30; i++) {
      t.advance(500);
      blink.touch();
    }
    expect(blink.running).toBe(true);
  });

  it('leaves the cursor shown when stopped (the focus left)', () => {
    const { t, el, blink } = started();
    t.advance(600);
    expect(el.off).toBe(true);
    blink.stop();
    expect(el.off).toBe(false);
    expect(blink.running).toBe(false);
    t.advance(5000);
    expect(el.off).toBe(false);
  });
});
