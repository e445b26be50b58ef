import { describe, expect, it } from 'vitest';
import { keyAction } from '#web/workbench/keys.ts';

const key = (over: Partial<Parameters<typeof keyAction>[0]>) => ({
  key: '',
  code: '',
  ctrlKey: false,
  altKey: false,
  shiftKey: false,
  metaKey: false,
  ...over,
});

describe('workbench keys', () => {
  it('maps Ctrl+` to the last terminal, whatever the layout prints on the key', () => {
    expect(keyAction(key({ key: '`', code: 'Backquote', ctrlKey: true }))).toEqual({ kind: 'lastTerminal' });
    expect(keyAction(key({ key: 'ö', code: 'Backquote', ctrlKey: true }))).toEqual({ kind: 'lastTerminal' });
    expect(keyAction(key({ key: '`', code: 'Backquote' }))).toBeNull();
    expect(keyAction(key({ key: '`', code: 'Backquote', ctrlKey: true, shiftKey: true }))).toBeNull();
  });

  it('keeps the Ctrl+Alt map', () => {
    expect(keyAction(key({ key: 'ArrowLeft', ctrlKey: true, altKey: true }))).toEqual({
      kind: 'focus',
      dir: 'left',
    });
    expect(keyAction(key({ key: 'w', code: 'KeyW', ctrlKey: true, altKey: true }))).toEqual({
      kind: 'close',
    });
  });
});

describe('pane keys', () => {
  it('maps Ctrl+Alt+Z to maximise/restore and Ctrl+Alt+Enter to a new shell in place of the focused one', () => {
    expect(keyAction(key({ key: 'z', code: 'KeyZ', ctrlKey: true, altKey: true }))).toEqual({
      kind: 'maximize',
    });
    expect(keyAction(key({ key: 'Enter', code: 'Enter', ctrlKey: true, altKey: true }))).toEqual({
      kind: 'restart',
    });
    // Plain Enter is the terminal's own.
    expect(keyAction(key({ key: 'Enter', code: 'Enter' }))).toBeNull();
  });

  it('maps Ctrl+Alt with =, - and 0 (by physical key) to the terminal font size', () => {
    const ca = { ctrlKey: true, altKey: true };
    expect(keyAction(key({ ...ca, key: '=', code: 'Equal' }))).toEqual({ kind: 'font', step: 1 });
    expect(keyAction(key({ ...ca, key: '-', code: 'Minus' }))).toEqual({ kind: 'font', step: -1 });
    expect(keyAction(key({ ...ca, key: '0', code: 'Digit0' }))).toEqual({ kind: 'font', step: 0 });
    // A German layout prints ß on the Minus key: the physical key counts.
    expect(keyAction(key({ ...ca, key: 'ß', code: 'Minus' }))).toEqual({ kind: 'font', step: -1 });
    // Without Alt the browser keeps its own zoom.
    expect(keyAction(key({ ctrlKey: true, key: '=', code: 'Equal' }))).toBeNull();
  });
});
