// The terminals' font size: bounded steps, a default, kept in the termFont cookie.
import { describe, expect, it } from 'vitest';
import { TERM_FONT } from '#shared/constants.ts';
import { appState, stepTermFont, termFont } from '#web/state/app.ts';

describe('terminal font size', () => {
  it('reads a saved size within bounds, anything else as the default', () => {
    expect(termFont(16)).toBe(16);
    expect(termFont(200)).toBe(TERM_FONT.max);
    expect(termFont(2)).toBe(TERM_FONT.min);
    expect(termFont(Number.NaN)).toBe(TERM_FONT.initial);
    expect(termFont(0)).toBe(TERM_FONT.initial);
    expect(termFont(14.6)).toBe(15);
  });

  it('steps by one within bounds and resets, (the cookie is checked in the browser suite)', () => {
    stepTermFont(0);
    stepTermFont(1);
    expect(appState.termFontSize).toBe(TERM_FONT.initial + 1);
    for (let i = 0; i < 40; i++) stepTermFont(-1);
    expect(appState.termFontSize).toBe(TERM_FONT.min);
    for (let i = 0; i < 40; i++) stepTermFont(1);
    expect(appState.termFontSize).toBe(TERM_FONT.max);
    stepTermFont(0);
    expect(appState.termFontSize).toBe(TERM_FONT.initial);
  });
});
