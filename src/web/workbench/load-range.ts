/** The load pane's window: the samples it asks for, and the span of its time axis. */
export const WINDOW_SECONDS = 900;

/**
 * The time axis: always the whole window, ending at the newest sample (the board's clock, not this
 * page's) or, before the first one, now. Left to uPlot, an empty or one-sample chart spans nothing and
 * labels every tick with the same time (midnight of 1970 with no samples at all).
 */
export function timeRange(
  max: number | null,
  nowSeconds: number,
  windowSeconds = WINDOW_SECONDS,
): [number, number] {
  const end = max !== null && Number.isFinite(max) ? max : nowSeconds;
  return [end - windowSeconds, end];
}
