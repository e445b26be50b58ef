// The cursor's blink, without drawing the page sixty times a second.
//
// xterm's DOM renderer blinks its cursor with an endless CSS animation, so the page draws every frame
// while a terminal has the focus. Chromium gives the frame after an input event priority and holds
// other tasks back until it is drawn, so a key's echo — a WebSocket message due about 1 ms after the
// key — waited for the next frame, and the echo reached the screen a frame after that. In headless
// Chromium at rest (tests/bench/flood.bench.ts, "at rest", two runs each way): keydown → echo handled
// p50 8.7–8.9 ms with xterm's blink, 1.4–1.7 ms with this one; keydown → the echo in the terminal's
// rows 25–26 ms, 3.3–4.3 ms. A plain page with a WebSocket shows the same 7–9 ms as soon as any
// animation runs (an rAF loop, a CSS opacity or transform animation), and about 1 ms without.
//
// Here the cursor blinks by a class on the terminal's element, toggled every periodMs: a frame per
// toggle, none between. The cursor's move shows it at once and keeps it shown for a whole period, as
// xterm does; a key keeps the blink going without touching the page (a change in the key's own task
// would hold its echo for a frame again), and its echo, moving the cursor, shows it. After idleMs
// without either the cursor stays shown and the timer stops (as GTK's cursor-blink-timeout does), so
// an idle console costs nothing. xterm's WebGL renderer blinks from a timer of its own, and keeps
// doing so (LiveShell hands it the blink).

import { realTicker, type Ticker } from '#web/components/pulse.ts';

export const CURSOR_BLINK = {
  /** Shown, then hidden, this long each (xterm's own period). */
  periodMs: 600,
  /** No key and no cursor move this long: the cursor stays shown and the timer stops. */
  idleMs: 10_000,
} as const;

/** On the terminal's element while the cursor is in its hidden phase (styles.css). */
export const CURSOR_OFF_CLASS = 'bianbu-cursor-off';

export interface BlinkClock extends Ticker {
  now(): number;
}

const realClock: BlinkClock = { ...realTicker, now: () => performance.now() };

export class CursorBlink {
  private timer: unknown = null;
  private hidden = false;
  /** The last key or cursor move. */
  private lastActivity = 0;

  constructor(
    private readonly el: { classList: { toggle(token: string, force: boolean): unknown } },
    private readonly clock: BlinkClock = realClock,
    private readonly policy: { periodMs: number; idleMs: number } = CURSOR_BLINK,
  ) {}

  /** Whether the timer runs (tests). */
  get running(): boolean {
    return this.timer !== null;
  }

  /** Starts blinking (the terminal took the focus), the cursor shown first. */
  start(): void {
    this.poke();
  }

  /** Stops blinking and leaves the cursor shown (the focus left, or another renderer blinks it). */
  stop(): void {
    if (this.timer !== null) this.clock.cancel(this.timer);
    this.timer = null;
    this.show();
  }

  /**
   * A key: the blink goes on (or starts again after the quiet spell) without touching the page. A
   * change to the page in the key's own task would make Chromium hold the echo for a frame again;
   * the echo moves the cursor a moment later, and that shows it (poke).
   */
  touch(): void {
    this.lastActivity = this.clock.now();
    if (this.timer === null) this.timer = this.clock.repeat(this.tick, this.policy.periodMs);
  }

  /** A cursor move: the cursor shows now, for a whole period at least. */
  poke(): void {
    this.lastActivity = this.clock.now();
    this.show();
    if (this.timer === null) this.timer = this.clock.repeat(this.tick, this.policy.periodMs);
  }

  private readonly tick = (): void => {
    const quiet = this.clock.now() - this.lastActivity;
    if (quiet >= this.policy.idleMs) {
      this.stop();
      return;
    }
    // Just active: the cursor stays shown until a period has passed since.
    if (!this.hidden && quiet < this.policy.periodMs) return;
    this.hidden = !this.hidden;
    this.el.classList.toggle(CURSOR_OFF_CLASS, this.hidden);
  };

  private show(): void {
    if (!this.hidden) return;
    this.hidden = false;
    this.el.classList.toggle(CURSOR_OFF_CLASS, false);
  }
}
