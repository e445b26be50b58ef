// The workbench keymap: which chord runs which action, as a preset plus the user's own changes, saved
// per user on the service so it follows them between machines.
//
// How the console uses the calls:
//   - GET  /api/user/keymap        after sign-in (and on first use of the workbench or the settings
//     page): `{preset, overrides, updatedAt}`; a user who never saved gets the default preset and no
//     overrides (`updatedAt` null). The console keeps the last answer in localStorage for the first paint.
//   - POST /api/user/keymap/save   with the whole keymap `{preset, overrides}` whenever the user picks
//     a preset, rebinds or resets an action; the answer is what is now stored. It replaces the stored
//     keymap in one statement (last write wins). Refused with 400:
//       request.invalid   an unknown action id, a malformed chord, too many chords (zod, `fields`)
//       keymap.reserved   a chord the browser keeps for itself (Ctrl+T, Ctrl+W, Ctrl+N, Ctrl+Tab…) or
//                         the console's own (Ctrl+K opens the palette); `fields` names the action
//       keymap.conflict   two actions on one chord, or a chord that is the prefix of another's sequence
// Each user reads and writes only their own keymap; there is no way to name another user.
//
// Chords are written by physical key (`KeyboardEvent.code`), so they mean the same keys on every
// layout: modifiers in the order Ctrl, Alt, Shift, Meta, then the code: `Ctrl+Alt+KeyN`,
// `Ctrl+Shift+Backquote`. A sequence (tmux's prefix key) is two strokes separated by a space:
// `Ctrl+KeyB KeyC`. An override of `[]` unbinds the action.
import { z } from 'zod';
import { defineCall } from './http.ts';

/** Every action a chord can run, in the order the settings page lists them. */
export const KEYMAP_ACTIONS = [
  'newShell',
  'newSerial',
  'split',
  'close',
  'reopenClosed',
  'restart',
  'search',
  'broadcast',
  'termTheme',
  'nextTab',
  'prevTab',
  'focusLeft',
  'focusRight',
  'focusUp',
  'focusDown',
  'lastTerminal',
  'maximize',
  'paneWider',
  'paneNarrower',
  'paneTaller',
  'paneShorter',
  'swapPrev',
  'swapNext',
  'toggleFiles',
  'toggleEditor',
  'toggleLoad',
  'toggleDesktop',
  'toggleCode',
  'ctrlAltDel',
  'reset',
  'fontBigger',
  'fontSmaller',
  'fontReset',
] as const;
export type KeymapAction = (typeof KEYMAP_ACTIONS)[number];

export const KEYMAP_PRESETS = ['default', 'shift', 'tmux'] as const;
export type KeymapPreset = (typeof KEYMAP_PRESETS)[number];

/** Most chords one action may have. */
export const MAX_CHORDS_PER_ACTION = 3;

export const KeymapErrorKey = {
  reserved: 'keymap.reserved',
  conflict: 'keymap.conflict',
} as const;

export const MODIFIERS = ['Ctrl', 'Alt', 'Shift', 'Meta'] as const;
export type Modifier = (typeof MODIFIERS)[number];

const NAMED_CODES = [
  'Backquote',
  'Minus',
  'Equal',
  'BracketLeft',
  'BracketRight',
  'Backslash',
  'Semicolon',
  'Quote',
  'Comma',
  'Period',
  'Slash',
  'Space',
  'Enter',
  'Backspace',
  'Tab',
  'Escape',
  'Delete',
  'Insert',
  'Home',
  'End',
  'PageUp',
  'PageDown',
  'ArrowLeft',
  'ArrowRight',
  'ArrowUp',
  'ArrowDown',
];
const CODE_RE = /^(Key[A-Z]|Digit[0-9]|F([1-9]|1[0-2]))$/;

/** A physical key a chord may end in (modifier keys themselves are not). */
export function isChordCode(code: string): boolean {
  return CODE_RE.test(code) || NAMED_CODES.includes(code);
}

/** One key press: the modifiers held and the physical key. */
export interface Stroke {
  ctrl: boolean;
  alt: boolean;
  shift: boolean;
  meta: boolean;
  code: string;
}

export function formatStroke(s: Stroke): string {
  const mods = [s.ctrl && 'Ctrl', s.alt && 'Alt', s.shift && 'Shift', s.meta && 'Meta'].filter(Boolean);
  return [...mods, s.code].join('+');
}

/** A stroke from its text, or null when malformed (unknown key, modifiers repeated or out of order). */
export function parseStroke(text: string): Stroke | null {
  const parts = text.split('+');
  const code = parts.pop() ?? '';
  if (!isChordCode(code)) return null;
  let at = -1;
  const s: Stroke = { ctrl: false, alt: false, shift: false, meta: false, code };
  for (const p of parts) {
    const i = MODIFIERS.indexOf(p as Modifier);
    if (i <= at) return null;
    at = i;
    s[p.toLowerCase() as 'ctrl' | 'alt' | 'shift' | 'meta'] = true;
  }
  return s;
}

/** A chord: one stroke, or a prefix stroke and a second one. */
export type Chord = Stroke[];

/** Why a chord is not well formed, or null when it is. */
export function chordProblem(text: string): string | null {
  const strokes = text.split(' ');
  if (strokes.length > 2) return 'at most two strokes (a prefix key and a key)';
  const parsed = strokes.map(parseStroke);
  if (parsed.some((s) => !s)) return 'must be modifiers in the order Ctrl, Alt, Shift, Meta, then a key code';
  const first = parsed[0] as Stroke;
  // A first stroke without Ctrl, Alt or Meta would be typed text; function keys are the exception.
  if (!first.ctrl && !first.alt && !first.meta && !/^F\d+$/.test(first.code))
    return 'the first key must be held with Ctrl, Alt or Meta (or be a function key)';
  return null;
}

export function parseChord(text: string): Chord | null {
  if (chordProblem(text)) return null;
  return text.split(' ').map((s) => parseStroke(s) as Stroke);
}

export const chordString = z
  .string()
  .max(64)
  .superRefine((v, ctx) => {
    const problem = chordProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: `"${v}": ${problem}` });
  });

/** Chords the browser handles itself before any page sees the key, and the console's own. */
export const RESERVED_CHORDS: Readonly<Record<string, 'browser' | 'console'>> = {
  'Ctrl+KeyT': 'browser',
  'Ctrl+KeyW': 'browser',
  'Ctrl+KeyN': 'browser',
  'Ctrl+Shift+KeyT': 'browser',
  'Ctrl+Shift+KeyW': 'browser',
  'Ctrl+Shift+KeyN': 'browser',
  'Ctrl+Shift+KeyQ': 'browser',
  'Ctrl+Tab': 'browser',
  'Ctrl+Shift+Tab': 'browser',
  'Ctrl+PageUp': 'browser',
  'Ctrl+PageDown': 'browser',
  'Alt+F4': 'browser',
  'Ctrl+KeyK': 'console',
  'Meta+KeyK': 'console',
};

/** Whose the chord is when it cannot be bound (its first stroke decides), or null when it is free. */
export function reservedBy(chord: string): 'browser' | 'console' | null {
  return RESERVED_CHORDS[chord.split(' ')[0]] ?? null;
}

export type Bindings = Record<KeymapAction, readonly string[]>;

const CA = 'Ctrl+Alt+';
const DEFAULT: Bindings = {
  newShell: [`${CA}KeyN`],
  newSerial: [`${CA}Shift+KeyN`],
  split: [`${CA}Backslash`],
  close: [`${CA}KeyW`],
  // Not Ctrl+Shift+T: the browser reopens its own closed tab with it.
  reopenClosed: [`${CA}Shift+KeyT`],
  restart: [`${CA}Enter`],
  search: [`${CA}KeyF`],
  // iTerm2's Cmd+Alt+I ("Broadcast Input").
  broadcast: [`${CA}KeyI`],
  termTheme: [`${CA}KeyM`],
  nextTab: [`${CA}PageDown`],
  prevTab: [`${CA}PageUp`],
  focusLeft: [`${CA}ArrowLeft`],
  focusRight: [`${CA}ArrowRight`],
  focusUp: [`${CA}ArrowUp`],
  focusDown: [`${CA}ArrowDown`],
  lastTerminal: ['Ctrl+Backquote'],
  maximize: [`${CA}KeyZ`],
  paneWider: [`${CA}Shift+ArrowRight`],
  paneNarrower: [`${CA}Shift+ArrowLeft`],
  paneTaller: [`${CA}Shift+ArrowDown`],
  paneShorter: [`${CA}Shift+ArrowUp`],
  swapPrev: [`${CA}Shift+PageUp`],
  swapNext: [`${CA}Shift+PageDown`],
  toggleFiles: [`${CA}KeyB`],
  toggleEditor: [`${CA}KeyE`],
  toggleLoad: [`${CA}KeyG`],
  toggleDesktop: [`${CA}KeyV`],
  toggleCode: [`${CA}KeyC`],
  ctrlAltDel: [`${CA}End`],
  reset: [`${CA}KeyR`],
  fontBigger: [`${CA}Equal`],
  fontSmaller: [`${CA}Minus`],
  fontReset: [`${CA}Digit0`],
};

// VS Code's terminal keys where it has them (Ctrl+Shift+` new terminal, Ctrl+Shift+5 split, Ctrl+`
// back to the terminal), Ctrl+Shift letters elsewhere: no AltGr clash, no GNOME workspace keys.
const CS = 'Ctrl+Shift+';
const SHIFT: Bindings = {
  newShell: [`${CS}Backquote`],
  newSerial: [`${CS}KeyL`],
  split: [`${CS}Digit5`],
  close: [`${CS}KeyX`],
  // Ctrl+Shift+T is the browser's own reopen; Ctrl+Alt letters are AltGr on European layouts.
  reopenClosed: ['Alt+Shift+KeyT'],
  restart: [`${CS}Enter`],
  search: [`${CS}KeyF`],
  // Not Ctrl+Shift+I: the browser's developer tools.
  broadcast: ['Alt+Shift+KeyI'],
  termTheme: [`${CS}KeyH`],
  nextTab: [`${CS}BracketRight`],
  prevTab: [`${CS}BracketLeft`],
  focusLeft: [`${CS}ArrowLeft`],
  focusRight: [`${CS}ArrowRight`],
  focusUp: [`${CS}ArrowUp`],
  focusDown: [`${CS}ArrowDown`],
  lastTerminal: ['Ctrl+Backquote'],
  maximize: [`${CS}KeyM`],
  paneWider: ['Alt+Shift+ArrowRight'],
  paneNarrower: ['Alt+Shift+ArrowLeft'],
  paneTaller: ['Alt+Shift+ArrowDown'],
  paneShorter: ['Alt+Shift+ArrowUp'],
  swapPrev: [`${CS}Comma`],
  swapNext: [`${CS}Period`],
  toggleFiles: [`${CS}KeyE`],
  toggleEditor: [`${CS}KeyO`],
  toggleLoad: [`${CS}KeyG`],
  // Not Ctrl+Shift+V or C: a terminal's paste and copy.
  toggleDesktop: [`${CS}KeyD`],
  toggleCode: [`${CS}KeyU`],
  ctrlAltDel: [`${CS}End`],
  reset: [`${CS}KeyR`],
  fontBigger: [`${CS}Equal`],
  fontSmaller: [`${CS}Minus`],
  fontReset: [`${CS}Digit0`],
};

// tmux's keys after its prefix Ctrl+B: c new window, % split, x kill, n/p windows, arrows between
// panes, Ctrl+arrows resize, z zoom, { } swap, S synchronize-panes (broadcast input).
const P = 'Ctrl+KeyB ';
const TMUX: Bindings = {
  newShell: [`${P}KeyC`],
  newSerial: [`${P}Shift+KeyC`],
  split: [`${P}Shift+Digit5`],
  close: [`${P}KeyX`],
  reopenClosed: [`${P}Shift+KeyT`],
  restart: [`${P}KeyR`],
  search: [`${P}KeyF`],
  // A common binding of `setw synchronize-panes`.
  broadcast: [`${P}Shift+KeyS`],
  termTheme: [`${P}KeyT`],
  nextTab: [`${P}KeyN`],
  prevTab: [`${P}KeyP`],
  focusLeft: [`${P}ArrowLeft`],
  focusRight: [`${P}ArrowRight`],
  focusUp: [`${P}ArrowUp`],
  focusDown: [`${P}ArrowDown`],
  lastTerminal: ['Ctrl+Backquote'],
  maximize: [`${P}KeyZ`],
  paneWider: [`${P}Ctrl+ArrowRight`],
  paneNarrower: [`${P}Ctrl+ArrowLeft`],
  paneTaller: [`${P}Ctrl+ArrowDown`],
  paneShorter: [`${P}Ctrl+ArrowUp`],
  swapPrev: [`${P}Shift+BracketLeft`],
  swapNext: [`${P}Shift+BracketRight`],
  toggleFiles: [`${P}KeyE`],
  toggleEditor: [`${P}KeyV`],
  toggleLoad: [`${P}KeyG`],
  toggleDesktop: [`${P}KeyD`],
  toggleCode: [`${P}KeyO`],
  ctrlAltDel: [`${P}End`],
  reset: [`${P}Shift+KeyR`],
  fontBigger: [`${P}Equal`],
  fontSmaller: [`${P}Minus`],
  fontReset: [`${P}Digit0`],
};

export const PRESET_BINDINGS: Readonly<Record<KeymapPreset, Bindings>> = {
  default: DEFAULT,
  shift: SHIFT,
  tmux: TMUX,
};

export const keymapOverrides = z.partialRecord(
  z.enum(KEYMAP_ACTIONS),
  z.array(chordString).max(MAX_CHORDS_PER_ACTION),
);

export const keymapSettings = z.object({
  preset: z.enum(KEYMAP_PRESETS),
  overrides: keymapOverrides,
});
export type KeymapSettings = z.infer<typeof keymapSettings>;

export const keymapAnswer = keymapSettings.extend({
  /** When the user last saved; null while they never did (the default keymap). */
  updatedAt: z.string().nullable(),
});
export type KeymapAnswer = z.infer<typeof keymapAnswer>;

export function defaultKeymap(): KeymapSettings {
  return { preset: 'default', overrides: {} };
}

/** The chords in force: the preset's, with the user's overrides over them. */
export function resolveBindings(settings: KeymapSettings): Bindings {
  const base = PRESET_BINDINGS[settings.preset] ?? DEFAULT;
  const out = { ...base };
  for (const a of KEYMAP_ACTIONS) {
    const o = settings.overrides[a];
    if (o) out[a] = [...o];
  }
  return out;
}

export type KeymapProblem =
  | { kind: 'reserved'; action: KeymapAction; chord: string; by: 'browser' | 'console' }
  | { kind: 'duplicate'; action: KeymapAction; other: KeymapAction; chord: string }
  | { kind: 'prefix'; action: KeymapAction; other: KeymapAction; chord: string; sequence: string };

/**
 * What is wrong with a set of bindings: reserved chords, one chord on two actions, or a single chord
 * that is also the prefix of another action's sequence (the sequence could never be typed).
 */
export function keymapProblems(b: Bindings): KeymapProblem[] {
  const out: KeymapProblem[] = [];
  const owner = new Map<string, KeymapAction>();
  for (const a of KEYMAP_ACTIONS) {
    for (const chord of b[a]) {
      const by = reservedBy(chord);
      if (by) out.push({ kind: 'reserved', action: a, chord, by });
      const other = owner.get(chord);
      if (other && other !== a) out.push({ kind: 'duplicate', action: a, other, chord });
      else owner.set(chord, a);
    }
  }
  for (const [chord, a] of owner) {
    if (!chord.includes(' ')) continue;
    const head = chord.split(' ')[0];
    const other = owner.get(head);
    if (other) out.push({ kind: 'prefix', action: a, other, chord: head, sequence: chord });
  }
  return out;
}

/** The problem rebinding `action` to `chord` would make, or null when it can be bound. */
export function bindProblem(b: Bindings, action: KeymapAction, chord: string): KeymapProblem | null {
  const by = reservedBy(chord);
  if (by) return { kind: 'reserved', action, chord, by };
  const next = { ...b, [action]: [chord] };
  for (const p of keymapProblems(next)) {
    if (p.kind === 'reserved' || (p.action !== action && p.other !== action)) continue;
    // Said from the rebound action's side: `other` is the action that had the chord first.
    return p.action === action ? p : { ...p, action, other: p.action };
  }
  return null;
}

export const keymapCalls = [
  defineCall({
    name: 'userKeymapGet',
    method: 'GET',
    path: '/api/user/keymap',
    response: keymapAnswer,
    summary: 'The caller’s workbench keymap: preset and overrides (the default when never saved)',
  }),
  defineCall({
    name: 'userKeymapSave',
    method: 'POST',
    path: '/api/user/keymap/save',
    request: keymapSettings,
    response: keymapAnswer,
    bodyLimit: 16 * 1024,
    summary:
      'Replace the caller’s workbench keymap (refused: unknown actions, malformed, reserved or clashing chords)',
  }),
] as const;
