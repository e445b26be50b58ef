// Things that move while a state lasts — a recording dot, a board being flashed, a running step, a
// spinner — step from shared timers on <html> instead of endless CSS animations. An animation that
// never ends makes the page draw every frame, and Chromium holds other tasks back after each key until
// the next frame is drawn: a shell's echo then waits a frame (src/web/terminal/cursor-blink.ts has the
// figures). A flash step's spinner or a recording dot lasts minutes while the user types in a shell;
// here the page draws once per step instead.
//
// A pulsing element has the class `pulse-step` (styles.css dims it in one of two phases) and its
// component holds the pulse with usePulse while the state lasts; a spinner (`spin-step`) turns by an
// eighth per step while any is shown (useSpin).
import { useEffect } from 'react';

interface PhaseRoot {
  setAttribute(name: string, value: string): void;
  removeAttribute(name: string): void;
}

/** A repeating timer (tests pass fake ones). */
export interface Ticker {
  repeat(fn: () => void, ms: number): unknown;
  cancel(timer: unknown): void;
}

export const realTicker: Ticker = {
  repeat: (fn, ms) => setInterval(fn, ms),
  cancel: (t) => clearInterval(t as ReturnType<typeof setInterval>),
};

/** One timer that steps an attribute of <html> through `phases` values while anything holds it. */
export class PhaseTimer {
  private holders = 0;
  private timer: unknown = null;
  private phase = 0;

  constructor(
    readonly attr: string,
    readonly phases: number,
    readonly stepMs: number,
    private readonly root: () => PhaseRoot,
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
      this.phase = 0;
      this.timer = this.ticker.repeat(() => {
        this.phase = (this.phase + 1) % this.phases;
        if (this.phase === 0) root.removeAttribute(this.attr);
        else root.setAttribute(this.attr, String(this.phase));
      }, this.stepMs);
    }
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (--this.holders > 0) return;
      this.ticker.cancel(this.timer);
      this.timer = null;
      this.root().removeAttribute(this.attr);
    };
  }
}

const html = () => document.documentElement;
/** Bright, then dim (`html[data-pulse="1"]`), 700 ms each. */
export const pulse = new PhaseTimer('data-pulse', 2, 700, html);
/** Eight steps a turn, 100 ms each (`html[data-spin="1…7"]`). */
export const spin = new PhaseTimer('data-spin', 8, 100, html);

function useHold(timer: PhaseTimer, active: boolean): void {
  useEffect(() => (active ? timer.hold() : undefined), [timer, active]);
}

/** Keeps the page's pulse going while `active` (a component showing a `pulse-step` element). */
export function usePulse(active: boolean): void {
  useHold(pulse, active);
}

/** Keeps the spinners turning while this one is shown. */
export function useSpin(): void {
  useHold(spin, true);
}
