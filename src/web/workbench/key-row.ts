// What the on-screen key row of a phone sends: the bytes a terminal expects for Esc, Tab, the arrows
// and a few symbols that soft keyboards bury, and for a character typed while the sticky Ctrl or Alt
// of the row is armed. Pure, so the table of sequences is tested without a terminal.

export interface Modifiers {
  ctrl: boolean;
  alt: boolean;
}

export type RowKey = 'esc' | 'tab' | 'up' | 'down' | 'left' | 'right' | 'home' | 'end' | 'pgup' | 'pgdn';

const ESC = '\x1b';

/** Ctrl+char as a terminal sends it (xterm's table), or null when Ctrl does not change the char. */
export function ctrlChar(ch: string): string | null {
  if (ch.length !== 1) return null;
  const c = ch.charCodeAt(0);
  if ((c >= 0x61 && c <= 0x7a) || (c >= 0x40 && c <= 0x5f)) return String.fromCharCode(c & 0x1f);
  switch (ch) {
    case ' ':
    case '2':
      return '\x00';
    case '3':
      return '\x1b';
    case '4':
      return '\x1c';
    case '5':
      return '\x1d';
    case '6':
    case '~':
      return '\x1e';
    case '/':
    case '-':
    case '7':
      return '\x1f';
    case '?':
    case '8':
      return '\x7f';
    default:
      return null;
  }
}

/** A typed character with the armed modifiers: Ctrl maps it, Alt prefixes Esc (as xterm's metaSendsEscape). */
export function typedSequence(ch: string, mods: Modifiers): string {
  const base = mods.ctrl ? (ctrlChar(ch) ?? ch) : ch;
  return mods.alt ? ESC + base : base;
}

const CURSOR: Partial<Record<RowKey, string>> = {
  up: 'A',
  down: 'B',
  right: 'C',
  left: 'D',
  home: 'H',
  end: 'F',
};

/**
 * A key of the row. Arrows follow the terminal's cursor-key mode (`application`: ESC O A, as vim and
 * less ask for); with a modifier they carry xterm's parameter (ESC [ 1 ; 5 A is Ctrl+Up).
 */
export function keySequence(key: RowKey, mods: Modifiers, application = false): string {
  const mod = 1 + (mods.alt ? 2 : 0) + (mods.ctrl ? 4 : 0);
  const letter = CURSOR[key];
  if (letter) {
    if (mod > 1) return `${ESC}[1;${mod}${letter}`;
    return application ? `${ESC}O${letter}` : `${ESC}[${letter}`;
  }
  switch (key) {
    case 'esc':
      return ESC;
    case 'tab':
      return mods.alt ? `${ESC}\t` : '\t';
    case 'pgup':
      return mod > 1 ? `${ESC}[5;${mod}~` : `${ESC}[5~`;
    case 'pgdn':
      return mod > 1 ? `${ESC}[6;${mod}~` : `${ESC}[6~`;
    default:
      return '';
  }
}
