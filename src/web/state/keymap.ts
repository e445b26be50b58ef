// The keymap in force in this browser: the user's settings (src/shared/keymap.ts) and the chords they
// resolve to. Kept in localStorage as well, so the first paint after a reload shows the user's keys
// before the service answers (web/keymap/sync.ts loads and saves them). The palette, the help sheet and
// the workbench's key handler all read it from here.
import { proxy } from 'valtio';
import {
  type Bindings,
  defaultKeymap,
  KEYMAP_ACTIONS,
  type KeymapAction,
  type KeymapSettings,
  keymapSettings,
  resolveBindings,
} from '#shared/keymap.ts';
import { schemasReady, whenZodLoaded } from '#web/lazy-zod.ts';

const CACHE_KEY = 'bianbu.keymap';

interface Cached {
  userId: string;
  settings: KeymapSettings;
}

function readCache(): Cached | null {
  try {
    const raw = typeof localStorage === 'undefined' ? null : localStorage.getItem(CACHE_KEY);
    if (!raw) return null;
    const v = JSON.parse(raw) as { userId?: unknown; settings?: unknown };
    const s = keymapSettings.safeParse(v.settings);
    return s.success && typeof v.userId === 'string' ? { userId: v.userId, settings: s.data } : null;
  } catch {
    return null;
  }
}

// In the browser zod comes after the first page (src/web/lazy-zod.ts): the remembered keymap is
// checked then, unless the service's answer came first.
const cached = schemasReady() ? readCache() : null;
const first = cached?.settings ?? defaultKeymap();

export const keymapState = proxy({
  /** Whose keymap this is ('' before anyone's was loaded). */
  userId: cached?.userId ?? '',
  settings: first as KeymapSettings,
  bindings: resolveBindings(first) as Bindings,
});

if (!cached)
  whenZodLoaded(() => {
    const later = readCache();
    if (!later || keymapState.userId !== '') return;
    keymapState.settings = later.settings;
    keymapState.bindings = resolveBindings(later.settings);
    keymapState.userId = later.userId;
  });

/** Puts a keymap in force at once and remembers it for the next first paint. */
export function applyKeymap(settings: KeymapSettings, userId: string): void {
  keymapState.settings = { preset: settings.preset, overrides: { ...settings.overrides } };
  keymapState.bindings = resolveBindings(settings);
  keymapState.userId = userId;
  try {
    localStorage.setItem(CACHE_KEY, JSON.stringify({ userId, settings }));
  } catch {
    // Storage disabled: the keymap still applies for this visit.
  }
}

const KEY_LABELS: Record<string, string> = {
  Backquote: '`',
  Minus: '-',
  Equal: '=',
  BracketLeft: '[',
  BracketRight: ']',
  Backslash: '\\',
  Semicolon: ';',
  Quote: "'",
  Comma: ',',
  Period: '.',
  Slash: '/',
  ArrowLeft: '←',
  ArrowRight: '→',
  ArrowUp: '↑',
  ArrowDown: '↓',
  PageUp: 'PgUp',
  PageDown: 'PgDn',
  Escape: 'Esc',
  Delete: 'Del',
  Backspace: '⌫',
};

/** The mark shown between the strokes of a sequence (tmux's prefix, then the key). */
export const SEQUENCE_MARK = '›';

/** How a physical key is printed on a key cap: `KeyN` → N, `Digit5` → 5, `Backquote` → `. */
export function keyLabel(code: string): string {
  const m = /^(?:Key|Digit)(.)$/.exec(code);
  return m ? m[1] : (KEY_LABELS[code] ?? code);
}

/** The key caps of a chord, e.g. `Ctrl+KeyB KeyC` → Ctrl, B, ›, C. */
export function chordKeys(chord: string): string[] {
  const out: string[] = [];
  chord.split(' ').forEach((stroke, i) => {
    if (i > 0) out.push(SEQUENCE_MARK);
    const parts = stroke.split('+');
    const code = parts.pop() ?? '';
    out.push(...parts, keyLabel(code));
  });
  return out;
}

/** The key caps of an action's first chord in the keymap in force, or [] when it has none. */
export function actionKeys(action: KeymapAction, bindings: Bindings = keymapState.bindings): string[] {
  const chord = bindings[action]?.[0];
  return chord ? chordKeys(chord) : [];
}

/** Palette commands named after keymap actions (`workbench.<action>`) show the user's chords. */
// Commands outside the workbench's own whose keys the keymap holds.
const COMMAND_ACTIONS: Readonly<Record<string, KeymapAction>> = {
  'desktop.toggleVnc': 'toggleDesktop',
  'desktop.toggleCode': 'toggleCode',
  'desktop.ctrlAltDel': 'ctrlAltDel',
};

export function keymapActionOfCommand(commandId: string): KeymapAction | null {
  if (COMMAND_ACTIONS[commandId]) return COMMAND_ACTIONS[commandId];
  const m = /^workbench\.(.+)$/.exec(commandId);
  return m && (KEYMAP_ACTIONS as readonly string[]).includes(m[1]) ? (m[1] as KeymapAction) : null;
}
