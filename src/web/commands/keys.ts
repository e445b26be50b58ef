// The palette's keyboard entry (Ctrl+K) and the help sheet's (`?`), installed on every page from the
// root; the palette and the sheet load on first use.
import { useEffect } from 'react';
import { keyHelp, openKeyHelp, openPaletteAsking, paletteState, togglePalette } from './registry.ts';

export function isPaletteShortcut(
  e: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'altKey' | 'shiftKey'>,
): boolean {
  return (e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === 'k';
}

/** Ctrl+P (⌘P): "Open file…", as in VS Code, wherever the board's files are at hand. */
export function isOpenFileShortcut(
  e: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'altKey' | 'shiftKey'>,
): boolean {
  return (e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === 'p';
}

/** `?` typed where it is not text: not in a field, an editor or a terminal, and no dialog open. */
export function isHelpKey(
  e: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'altKey' | 'target'>,
): boolean {
  if (e.key !== '?' || e.ctrlKey || e.metaKey || e.altKey) return false;
  const el = e.target as HTMLElement | null;
  if (!el || typeof el.closest !== 'function') return true;
  if (el.isContentEditable || el.closest('input, textarea, select, [contenteditable], .xterm, .cm-editor'))
    return false;
  return !el.closest('[role="dialog"], [role="alertdialog"]');
}

function isTypedKey(e: KeyboardEvent): boolean {
  return e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey;
}

function paletteFieldFocused(): boolean {
  return document.activeElement?.matches('[cmdk-input]') ?? false;
}

export function isMac(): boolean {
  return (
    typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent)
  );
}

export function usePaletteShortcut(): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isPaletteShortcut(e)) {
        // The browser's own Ctrl+K (focus the search bar) would steal the keystroke.
        e.preventDefault();
        togglePalette();
      } else if (isOpenFileShortcut(e) && !paletteState.open) {
        // Only where "Open file…" is offered (a board's files are mounted); elsewhere the key is the
        // page's (or the terminal's) as before.
        if (openPaletteAsking('files.open')) {
          e.preventDefault();
          e.stopPropagation();
        }
      } else if (
        paletteState.open &&
        e.isTrusted &&
        (isTypedKey(e) || e.key === 'Enter') &&
        (paletteState.pending || !paletteFieldFocused())
      ) {
        // The palette is opening (its chunk loading, its field not focused yet), or something took the
        // focus from its field (a terminal's own focus timer): keep the key for it, and give the field
        // the focus back. Once keys wait, later ones wait behind them even if the field took the focus
        // meanwhile, so they reach the search in the order typed; an Enter among them waits too (as
        // "\n"), else it would run whatever the field held before the keys typed ahead of it.
        e.preventDefault();
        e.stopPropagation();
        paletteState.pending += e.key === 'Enter' ? '\n' : e.key;
        document.querySelector<HTMLElement>('[cmdk-input]')?.focus();
      } else if (!paletteState.open && !keyHelp.open && isHelpKey(e)) {
        e.preventDefault();
        openKeyHelp();
      }
    };
    window.addEventListener('keydown', onKey, { capture: true });
    // Focus that follows dialogs and page changes (focus-home.ts), after the first paint.
    void import('./focus-home.ts').then((m) => m.installFocusHome());
    return () => window.removeEventListener('keydown', onKey, { capture: true });
  }, []);
}
