// The workbench's keyboard map. Bound on window in the capture phase so the keys reach us before a
// focused terminal turns them into input; only Ctrl+Alt combinations are taken, which programs in a
// shell rarely need and the browser does not reserve (Ctrl+T / Ctrl+W / Ctrl+N cannot be captured).
import { useEffect } from 'react';
import { paletteState } from '#web/palette/registry.ts';
import { workbenchUi } from './commands.ts';
import { directionOf, moveFocus } from './focus.ts';
import { shellOps } from './shell-ops.ts';
import { cycleTab, togglePane } from './store.ts';

export interface KeyLike {
  key: string;
  code?: string;
  ctrlKey: boolean;
  altKey: boolean;
  shiftKey: boolean;
  metaKey: boolean;
}

export type KeyAction =
  | { kind: 'focus'; dir: 'left' | 'right' | 'up' | 'down' }
  | { kind: 'newShell' }
  | { kind: 'newSerial' }
  | { kind: 'split' }
  | { kind: 'close' }
  | { kind: 'search' }
  | { kind: 'termTheme' }
  | { kind: 'tab'; delta: 1 | -1 }
  | { kind: 'toggle'; pane: 'files' | 'editor' | 'load' }
  | { kind: 'reset' };

/** The action a key press means in the workbench, or null. `code` is used so layouts do not matter. */
export function keyAction(e: KeyLike): KeyAction | null {
  if (!e.ctrlKey || !e.altKey || e.metaKey) return null;
  const dir = directionOf(e.key);
  if (dir && !e.shiftKey) return { kind: 'focus', dir };
  const code = e.code ?? '';
  const letter = /^Key([A-Z])$/.exec(code)?.[1] ?? (e.key.length === 1 ? e.key.toUpperCase() : '');
  if (e.shiftKey) return letter === 'N' ? { kind: 'newSerial' } : null;
  if (e.key === 'PageDown') return { kind: 'tab', delta: 1 };
  if (e.key === 'PageUp') return { kind: 'tab', delta: -1 };
  if (code === 'Backslash' || e.key === '\\') return { kind: 'split' };
  switch (letter) {
    case 'N':
      return { kind: 'newShell' };
    case 'W':
      return { kind: 'close' };
    case 'F':
      return { kind: 'search' };
    case 'M':
      return { kind: 'termTheme' };
    case 'B':
      return { kind: 'toggle', pane: 'files' };
    case 'E':
      return { kind: 'toggle', pane: 'editor' };
    case 'G':
      return { kind: 'toggle', pane: 'load' };
    case 'R':
      return { kind: 'reset' };
    default:
      return null;
  }
}

export function runKeyAction(a: KeyAction): void {
  switch (a.kind) {
    case 'focus':
      moveFocus(a.dir);
      return;
    case 'newShell':
      shellOps.newShell('login');
      return;
    case 'newSerial':
      shellOps.newShell('serial');
      return;
    case 'split':
      shellOps.split();
      return;
    case 'close':
      shellOps.closeFocused();
      return;
    case 'search':
      shellOps.search();
      return;
    case 'termTheme':
      shellOps.toggleTheme();
      return;
    case 'tab':
      cycleTab(a.delta);
      window.setTimeout(() => shellOps.focusActive(), 0);
      return;
    case 'toggle':
      togglePane(a.pane);
      return;
    case 'reset':
      workbenchUi.resetOpen = true;
      return;
  }
}

export function useWorkbenchKeys(): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (paletteState.open) return;
      const a = keyAction(e);
      if (!a) return;
      e.preventDefault();
      e.stopPropagation();
      runKeyAction(a);
    };
    window.addEventListener('keydown', onKey, { capture: true });
    return () => window.removeEventListener('keydown', onKey, { capture: true });
  }, []);
}
