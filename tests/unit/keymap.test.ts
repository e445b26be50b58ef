import { describe, expect, it } from 'vitest';
import {
  bindProblem,
  chordProblem,
  KEYMAP_ACTIONS,
  KEYMAP_PRESETS,
  keymapProblems,
  keymapSettings,
  PRESET_BINDINGS,
  parseStroke,
  reservedBy,
  resolveBindings,
} from '#shared/keymap.ts';
import { chordKeys } from '#web/state/keymap.ts';
import type { strokeOf } from '#web/state/strokes.ts';
import { keyAction, matchKey } from '#web/workbench/keys.ts';

const ev = (over: Partial<Parameters<typeof strokeOf>[0]>) => ({
  key: '',
  code: '',
  ctrlKey: false,
  altKey: false,
  shiftKey: false,
  metaKey: false,
  ...over,
});

describe('chord grammar', () => {
  it.each([
    ['Ctrl+Alt+KeyN', null],
    ['Ctrl+Shift+Backquote', null],
    ['Ctrl+KeyB KeyC', null],
    ['Ctrl+KeyB Shift+Digit5', null],
    ['F2', null],
    ['Shift+F5', null],
    ['Alt+Shift+ArrowLeft', null],
    ['KeyN', 'first key'],
    ['Shift+KeyN', 'first key'],
    ['Alt+Ctrl+KeyN', 'order'],
    ['Ctrl+Ctrl+KeyN', 'order'],
    ['Ctrl+Banana', 'order'],
    ['Ctrl+n', 'order'],
    ['Ctrl+Alt', 'order'],
    ['', 'order'],
    ['Ctrl+KeyB KeyC KeyD', 'two strokes'],
  ])('%s is %s', (chord, problem) => {
    const got = chordProblem(chord);
    if (problem === null) expect(got).toBeNull();
    else expect(got).toMatch(problem);
  });

  it('parses a stroke into its modifiers and physical key', () => {
    expect(parseStroke('Ctrl+Shift+KeyF')).toEqual({
      ctrl: true,
      alt: false,
      shift: true,
      meta: false,
      code: 'KeyF',
    });
    expect(parseStroke('Meta+Ctrl+KeyF')).toBeNull();
  });

  it.each([
    ['Ctrl+Alt+KeyN', ['Ctrl', 'Alt', 'N']],
    ['Ctrl+Backquote', ['Ctrl', '`']],
    ['Ctrl+Shift+Digit5', ['Ctrl', 'Shift', '5']],
    ['Ctrl+Alt+PageDown', ['Ctrl', 'Alt', 'PgDn']],
    ['Ctrl+KeyB Ctrl+ArrowLeft', ['Ctrl', 'B', '›', 'Ctrl', '←']],
  ])('shows %s as the key caps %j', (chord, caps) => {
    expect(chordKeys(chord)).toEqual(caps);
  });
});

describe('matching key presses by physical key', () => {
  const shift = PRESET_BINDINGS.shift;
  const tmux = PRESET_BINDINGS.tmux;
  it.each([
    // [what, event, bindings, action]
    [
      'Ctrl+Shift+` (VS Code new terminal)',
      ev({ key: '~', code: 'Backquote', ctrlKey: true, shiftKey: true }),
      shift,
      'newShell',
    ],
    [
      'a German layout printing ^ on Backquote',
      ev({ key: '°', code: 'Backquote', ctrlKey: true, shiftKey: true }),
      shift,
      'newShell',
    ],
    [
      'Ctrl+Shift+5 by its key, not its % character',
      ev({ key: '%', code: 'Digit5', ctrlKey: true, shiftKey: true }),
      shift,
      'split',
    ],
    [
      'Ctrl+Shift+ArrowLeft',
      ev({ key: 'ArrowLeft', code: 'ArrowLeft', ctrlKey: true, shiftKey: true }),
      shift,
      'focusLeft',
    ],
    [
      'Alt+Shift+ArrowRight',
      ev({ key: 'ArrowRight', code: 'ArrowRight', altKey: true, shiftKey: true }),
      shift,
      'paneWider',
    ],
    [
      'AltGr+E (€) under the Ctrl+Shift preset',
      ev({ key: '€', code: 'KeyE', ctrlKey: true, altKey: true }),
      shift,
      null,
    ],
    [
      'Ctrl+Alt+Arrow under the Ctrl+Shift preset',
      ev({ key: 'ArrowLeft', code: 'ArrowLeft', ctrlKey: true, altKey: true }),
      shift,
      null,
    ],
    [
      'an AZERTY A key (code KeyQ) as Q',
      ev({ key: 'a', code: 'KeyQ', ctrlKey: true, altKey: true }),
      PRESET_BINDINGS.default,
      null,
    ],
    [
      'a key without code falls back to its name',
      ev({ key: 'n', ctrlKey: true, altKey: true }),
      PRESET_BINDINGS.default,
      'newShell',
    ],
    [
      'Ctrl+Alt+I broadcasts input (iTerm2’s Cmd+Alt+I)',
      ev({ key: 'i', code: 'KeyI', ctrlKey: true, altKey: true }),
      PRESET_BINDINGS.default,
      'broadcast',
    ],
    [
      'Alt+Shift+I broadcasts input under the Ctrl+Shift preset (Ctrl+Shift+I is the browser’s)',
      ev({ key: 'I', code: 'KeyI', altKey: true, shiftKey: true }),
      shift,
      'broadcast',
    ],
    ['Ctrl+B alone under tmux is not an action', ev({ key: 'b', code: 'KeyB', ctrlKey: true }), tmux, null],
  ])('%s', (_what, e, bindings, action) => {
    expect(matchKey(e, bindings).action).toBe(action);
  });

  it('waits after a prefix key, then runs the sequence', () => {
    const tmux = PRESET_BINDINGS.tmux;
    const first = matchKey(ev({ key: 'b', code: 'KeyB', ctrlKey: true }), tmux);
    expect(first).toEqual({ action: null, pending: 'Ctrl+KeyB', consume: true });
    // A lone modifier (Shift before %) leaves the prefix waiting.
    expect(matchKey(ev({ key: 'Shift', code: 'ShiftLeft', shiftKey: true }), tmux, first.pending)).toEqual({
      action: null,
      pending: 'Ctrl+KeyB',
      consume: false,
    });
    expect(matchKey(ev({ key: '%', code: 'Digit5', shiftKey: true }), tmux, first.pending).action).toBe(
      'split',
    );
    expect(matchKey(ev({ key: 'c', code: 'KeyC' }), tmux, first.pending)).toEqual({
      action: 'newShell',
      pending: '',
      consume: true,
    });
    // S after the prefix synchronizes the panes (broadcast input).
    expect(matchKey(ev({ key: 'S', code: 'KeyS', shiftKey: true }), tmux, first.pending).action).toBe(
      'broadcast',
    );
    // An unbound key after the prefix is swallowed, as tmux does, and the prefix ends.
    expect(matchKey(ev({ key: 'q', code: 'KeyQ' }), tmux, first.pending)).toEqual({
      action: null,
      pending: '',
      consume: true,
    });
    // Without the prefix the same letter is typed text.
    expect(matchKey(ev({ key: 'c', code: 'KeyC' }), tmux).consume).toBe(false);
  });

  it('keeps the default keymap of the workbench as it was', () => {
    const d = PRESET_BINDINGS.default;
    expect(keyAction(ev({ key: 'Enter', code: 'Enter', ctrlKey: true, altKey: true }), d)).toEqual({
      kind: 'restart',
    });
    expect(keyAction(ev({ key: 'ArrowUp', ctrlKey: true, altKey: true }), d)).toEqual({
      kind: 'focus',
      dir: 'up',
    });
    expect(
      keyAction(
        ev({ key: 'ArrowRight', code: 'ArrowRight', ctrlKey: true, altKey: true, shiftKey: true }),
        d,
      ),
    ).toEqual({
      kind: 'resize',
      axis: 'x',
      delta: 1,
    });
  });
});

describe('presets', () => {
  it.each(KEYMAP_PRESETS)('%s binds every action and has no problem', (p) => {
    const b = PRESET_BINDINGS[p];
    for (const a of KEYMAP_ACTIONS) {
      expect(b[a].length, a).toBeGreaterThan(0);
      for (const c of b[a]) expect(chordProblem(c), `${a}: ${c}`).toBeNull();
    }
    expect(keymapProblems(b)).toEqual([]);
  });

  it.each(['shift', 'tmux'] as const)('%s uses no Ctrl+Alt letter and no Ctrl+Alt arrow', (p) => {
    for (const a of KEYMAP_ACTIONS)
      for (const c of PRESET_BINDINGS[p][a]) {
        expect(c, a).not.toMatch(/(^| )Ctrl\+Alt\+(Shift\+)?(Key[A-Z]|Arrow)/);
      }
  });

  it('puts overrides over the preset, and an empty override unbinds', () => {
    const b = resolveBindings({ preset: 'shift', overrides: { newShell: ['Ctrl+Shift+KeyY'], search: [] } });
    expect(b.newShell).toEqual(['Ctrl+Shift+KeyY']);
    expect(b.search).toEqual([]);
    expect(b.split).toEqual(PRESET_BINDINGS.shift.split);
  });
});

describe('conflicts and reserved chords', () => {
  const shift = PRESET_BINDINGS.shift;
  it.each([
    ['Ctrl+KeyT', 'browser'],
    ['Ctrl+KeyW', 'browser'],
    ['Ctrl+KeyN', 'browser'],
    ['Ctrl+Tab', 'browser'],
    ['Ctrl+Shift+Tab', 'browser'],
    ['Ctrl+PageDown', 'browser'],
    ['Ctrl+KeyK', 'console'],
    ['Ctrl+KeyK KeyC', 'console'],
    ['Ctrl+Shift+KeyY', null],
  ])('%s is reserved by %s', (chord, by) => {
    expect(reservedBy(chord)).toBe(by);
  });

  it.each([
    ['a reserved chord', 'newShell', 'Ctrl+KeyT', { kind: 'reserved', by: 'browser' }],
    ['the palette key', 'search', 'Ctrl+KeyK', { kind: 'reserved', by: 'console' }],
    ['a chord another action has', 'newShell', 'Ctrl+Shift+KeyF', { kind: 'duplicate', other: 'search' }],
    ['its own chord again', 'search', 'Ctrl+Shift+KeyF', null],
    ['a free chord', 'newShell', 'Ctrl+Shift+KeyY', null],
  ] as const)('rebinding to %s', (_what, action, chord, expected) => {
    const p = bindProblem(shift, action, chord);
    if (expected === null) expect(p).toBeNull();
    else expect(p).toMatchObject(expected);
  });

  it('finds a single chord that is the prefix of a sequence', () => {
    const b = resolveBindings({ preset: 'tmux', overrides: { toggleFiles: ['Ctrl+KeyB'] } });
    expect(keymapProblems(b)).toContainEqual(
      expect.objectContaining({ kind: 'prefix', other: 'toggleFiles', chord: 'Ctrl+KeyB' }),
    );
  });

  it('refuses unknown actions and presets in the shared schema', () => {
    expect(keymapSettings.safeParse({ preset: 'shift', overrides: { nope: ['F2'] } }).success).toBe(false);
    expect(keymapSettings.safeParse({ preset: 'vim', overrides: {} }).success).toBe(false);
    expect(
      keymapSettings.safeParse({ preset: 'tmux', overrides: { split: ['Ctrl+KeyB Shift+Digit5'] } }).success,
    ).toBe(true);
  });
});
