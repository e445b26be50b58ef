import { describe, expect, it } from 'vitest';
import { timeRange, WINDOW_SECONDS } from '#web/workbench/load-range.ts';

describe('the load pane time axis', () => {
  it('spans the whole window ending now before the board has sent a sample', () => {
    expect(timeRange(null, 1_800_000_000)).toEqual([1_800_000_000 - WINDOW_SECONDS, 1_800_000_000]);
  });

  it('ends at the newest sample, on the board clock rather than the page clock', () => {
    expect(timeRange(1_700_000_000, 1_800_000_000)).toEqual([1_700_000_000 - WINDOW_SECONDS, 1_700_000_000]);
  });

  it('keeps the span of the window with a single sample', () => {
    const [a, b] = timeRange(1_700_000_000, 1_700_000_003, 60);
    expect(b - a).toBe(60);
  });

  it('ignores a non-finite end', () => {
    expect(timeRange(Number.NaN, 100, 10)).toEqual([90, 100]);
  });
});
