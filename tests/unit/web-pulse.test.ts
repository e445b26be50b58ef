import { describe, expect, it } from 'vitest';
import { PhaseTimer, pulse, spin } from '#web/components/pulse.ts';

function harness(phases: number) {
  const attrs = new Map<string, string>();
  const seen: (string | undefined)[] = [];
  let tick: (() => void) | null = null;
  let timers = 0;
  const root = {
    setAttribute(name: string, value: string) {
      attrs.set(name, value);
      seen.push(value);
    },
    removeAttribute(name: string) {
      if (attrs.delete(name)) seen.push(undefined);
    },
  };
  const ticker = {
    repeat(fn: () => void, ms: number) {
      expect(ms).toBe(50);
      timers++;
      tick = fn;
      return fn;
    },
    cancel(t: unknown) {
      if (t === tick) tick = null;
    },
  };
  return {
    timer: new PhaseTimer('data-x', phases, 50, () => root, ticker),
    tick: () => tick?.(),
    get value() {
      return attrs.get('data-x');
    },
    seen,
    get timers() {
      return timers;
    },
  };
}

describe('the page’s pulse and spinners', () => {
  it('steps one attribute of <html> through its phases on one timer, whatever holds it', () => {
    const h = harness(2);
    const a = h.timer.hold();
    const b = h.timer.hold();
    expect(h.timers).toBe(1);
    h.tick();
    expect(h.value).toBe('1');
    h.tick();
    expect(h.value).toBeUndefined();
    expect(h.seen).toEqual(['1', undefined]);
    a();
    expect(h.timer.running).toBe(true); // b still holds it
    h.tick();
    b();
    // The last one gone: no timer, and the first phase left.
    expect(h.timer.running).toBe(false);
    expect(h.value).toBeUndefined();
  });

  it('turns a spinner by eight steps, back to the first', () => {
    const h = harness(8);
    h.timer.hold();
    for (let i = 0; i < 8; i++) h.tick();
    expect(h.seen).toEqual(['1', '2', '3', '4', '5', '6', '7', undefined]);
  });

  it('lets go once per hold, and starts again for the next', () => {
    const h = harness(2);
    const a = h.timer.hold();
    a();
    a();
    expect(h.timer.running).toBe(false);
    const b = h.timer.hold();
    expect(h.timer.running).toBe(true);
    expect(h.timers).toBe(2);
    b();
  });

  it('pulses at 700 ms in two phases and spins at 100 ms in eight, as styles.css expects', () => {
    expect([pulse.attr, pulse.phases, pulse.stepMs]).toEqual(['data-pulse', 2, 700]);
    expect([spin.attr, spin.phases, spin.stepMs]).toEqual(['data-spin', 8, 100]);
  });
});
