// A key press as a keymap stroke (src/shared/keymap.ts): by physical key (`code`), so keyboard layouts
// do not matter; the workbench's keys and the keymap editor both read presses through it.
import type { Stroke } from '#shared/keymap.ts';

export interface KeyLike {
  key: string;
  code?: string;
  ctrlKey: boolean;
  altKey: boolean;
  shiftKey: boolean;
  metaKey: boolean;
}

// Without `code` (synthetic events, some virtual keyboards) the key's name stands in for it.
const KEY_CODES: Record<string, string> = {
  '`': 'Backquote',
  '-': 'Minus',
  '=': 'Equal',
  '[': 'BracketLeft',
  ']': 'BracketRight',
  '\\': 'Backslash',
  ';': 'Semicolon',
  "'": 'Quote',
  ',': 'Comma',
  '.': 'Period',
  '/': 'Slash',
  ' ': 'Space',
  Esc: 'Escape',
};

const MODIFIER_KEYS = new Set(['Control', 'Alt', 'Shift', 'Meta', 'AltGraph', 'OS']);

/** The stroke a key press is, by physical key; null for a lone modifier. */
export function strokeOf(e: KeyLike): Stroke | null {
  if (MODIFIER_KEYS.has(e.key)) return null;
  let code = e.code ?? '';
  if (!code) {
    if (/^[a-z]$/i.test(e.key)) code = `Key${e.key.toUpperCase()}`;
    else if (/^[0-9]$/.test(e.key)) code = `Digit${e.key}`;
    else code = KEY_CODES[e.key] ?? e.key;
  }
  if (!code) return null;
  return { ctrl: e.ctrlKey, alt: e.altKey, shift: e.shiftKey, meta: e.metaKey, code };
}
