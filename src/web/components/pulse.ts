// Things that pulse while a state lasts (a recording dot, a board being flashed, a running step) blink
// from one timer on <html> instead of an endless CSS animation. An animation that never ends makes the
// page draw every frame, and Chromium holds other tasks back after each key until the next frame is
// drawn: a shell's echo then waits a frame (src/web/terminal/cursor-blink.ts has the figures). A
// pulse that lasts minutes while the user types — recording a sequence, flashing one board while
// working in another — would cost every key that frame. Here the page draws once per toggle.
//
// An element pulses with the class `pulse-step` (styles.css dims it while <html> has PULSE_ATTR); the
// component showing it holds the timer with usePulse while the state lasts.
import { useEffect } from 'react';

/** Bright, then dim, this long each. */
export const PULSE_MS = 700;
export const PULSE_ATTR = 'data-pulse-dim';

interface PulseRoot {
  toggleAttribute(name: string, force?: boolean): boolean;
  removeAttribute(name: string): void;
}

interface Ticker {
  every(fn: () => void, ms: number): unknown;
  cancel(timer: unknown): void;
}

const realTicker: Ticker = {
  every: (fn, ms) => setInterval(fn, ms),
  cancel: (t) => clearInterval(t as ReturnType<typeof setInterval>),
};

/** One timer for every pulse on the page, running while anything holds it. */
export class Pulse {
  private holders = 0;
  private timer: unknown = null;

  constructor(
    private readonly root: () => PulseRoot,
    private readonly ticker: Ticker = realTicker,
  ) {}

  /** Whether the timer runs (tests). */
  get running(): boolean {
    return this.timer !== null;
  }

  /** Holds the timer; the function returned lets go (once). */
  hold(): () => void {
    if (this.holders++ === 0) {
      const root = this.root();
      this.timer = this.ticker.every(() => root.toggleAttribute(PULSE_ATTR), PULSE_MS);
    }
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (--this.holders > 0) return;
      this.ticker.cancel(this.timer);
      this.timer = null;
      this.root().removeAttribute(PULSE_ATTR);
    };
  }
}

export const pulse = new Pulse(() => document.documentElement);

/** Keeps the page's pulse going while `active` (a component showing a `pulse-step` element). */
export function usePulse(active: boolean): void {
  useEffect(() => (active ? pulse.hold() : undefined), [active]);
}
