import { describe, expect, it } from 'vitest';
import { PULSE_ATTR, PULSE_MS, Pulse } from '#web/components/pulse.ts';

function harness() {
  const attrs = new Set<string>();
  const flips: boolean[] = [];
  let tick: (() => void) | null = null;
  let timers = 0;
  const root = {
    toggleAttribute(name: string) {
      const on = !attrs.has(name);
      if (on) attrs.add(name);
      else attrs.delete(name);
      flips.push(on);
      return on;
    },
    removeAttribute(name: string) {
      attrs.delete(name);
    },
  };
  const ticker = {
    every(fn: () => void, ms: number) {
      expect(ms).toBe(PULSE_MS);
      timers++;
      tick = fn;
      return fn;
    },
    cancel(t: unknown) {
      if (t === tick) tick = null;
    },
  };
  return {
    pulse: new Pulse(() => root, ticker),
    tick: () => tick?.(),
    get dim() {
      return attrs.has(PULSE_ATTR);
    },
    flips,
    get timers() {
      return timers;
    },
  };
}

describe('the page’s pulse', () => {
  it('dims and brightens by one attribute on one timer, whatever pulses', () => {
    const h = harness();
    const a = h.pulse.hold();
    const b = h.pulse.hold();
    expect(h.timers).toBe(1);
    h.tick();
    expect(h.dim).toBe(true);
    h.tick();
    expect(h.dim).toBe(false);
    expect(h.flips).toEqual([true, false]);
    a();
    expect(h.pulse.running).toBe(true); // b still pulses
    h.tick();
    b();
    // The last one gone: no timer, and nothing left dim.
    expect(h.pulse.running).toBe(false);
    expect(h.dim).toBe(false);
  });

  it('lets go once per hold, and starts again for the next', () => {
    const h = harness();
    const a = h.pulse.hold();
    a();
    a();
    expect(h.pulse.running).toBe(false);
    const b = h.pulse.hold();
    expect(h.pulse.running).toBe(true);
    expect(h.timers).toBe(2);
    b();
    expect(h.pulse.running).toBe(false);
  });
});
