// The on-screen key row of a touch workbench, as mobile SSH clients (Termius, Blink) have: the keys a
// soft keyboard lacks — Esc, Tab, sticky Ctrl and Alt, arrows, Home/End, PgUp/PgDn and a few symbols.
//
// The row never takes the focus (pointerdown and mousedown are cancelled), so the soft keyboard stays
// up and the terminal keeps typing. A key goes to the shell whose terminal has the focus, else to the
// shell in front. Ctrl and Alt are sticky: tapped, they apply to the next key of the row or the next
// character typed into a terminal (caught before xterm sees it, on keydown or, from soft keyboards
// that send no key codes, on beforeinput), then release; tapped again, they release unused.
//
// It sits under the terminal, so it stays just above the soft keyboard: index.html asks the browser to
// shrink the page for the keyboard (interactive-widget=resizes-content), and where a browser overlays
// the keyboard instead (Safari), the page is padded by what the visual viewport lost
// (useKeyboardInset). Wider than a phone, the row scrolls sideways; an arrow at the end that has more
// keys says so, and tapped, scrolls the next keys in.

import { type PointerEvent, type SyntheticEvent, useCallback, useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { proxy, useSnapshot } from 'valtio';
import { cx } from '#web/components/ui.tsx';
import { frontShell } from '#web/state/front-shell.ts';
import type { LiveShell } from '#web/terminal/live-shell.ts';
import { findShell } from '#web/terminal/registry.ts';
import { keySequence, type Modifiers, type RowKey, typedSequence } from './key-row.ts';

/** The armed sticky modifiers. */
export const keyRow = proxy<Modifiers>({ ctrl: false, alt: false });

function shellAt(from: EventTarget | null): LiveShell | undefined {
  const start = from instanceof Element ? from : document.activeElement;
  const id = start?.closest<HTMLElement>('[data-shell-id]')?.dataset.shellId ?? frontShell();
  return id ? findShell(id) : undefined;
}

/** Takes the armed modifiers (they apply once). */
function takeModifiers(): Modifiers {
  const mods = { ctrl: keyRow.ctrl, alt: keyRow.alt };
  keyRow.ctrl = false;
  keyRow.alt = false;
  return mods;
}

function isTerminalInput(target: EventTarget | null): boolean {
  return target instanceof HTMLElement && target.classList.contains('xterm-helper-textarea');
}

/** While a modifier is armed, the next character typed into a terminal is sent with it. */
function useStickyModifiers(armed: boolean): void {
  useEffect(() => {
    if (!armed) return;
    const send = (e: Event, text: string) => {
      e.preventDefault();
      e.stopImmediatePropagation();
      const [first, ...rest] = [...text];
      shellAt(e.target)?.term.input(typedSequence(first, takeModifiers()) + rest.join(''));
    };
    const onKeyDown = (e: KeyboardEvent) => {
      // A real chord, IME composition and non-character keys (Unidentified on Android) pass through.
      if (!isTerminalInput(e.target) || e.isComposing || e.ctrlKey || e.altKey || e.metaKey) return;
      if ([...e.key].length !== 1) return;
      send(e, e.key);
    };
    const onBeforeInput = (e: InputEvent) => {
      if (!isTerminalInput(e.target) || e.inputType !== 'insertText' || !e.data) return;
      send(e, e.data);
    };
    window.addEventListener('keydown', onKeyDown, true);
    window.addEventListener('beforeinput', onBeforeInput, true);
    return () => {
      window.removeEventListener('keydown', onKeyDown, true);
      window.removeEventListener('beforeinput', onBeforeInput, true);
    };
  }, [armed]);
}

type RowItem =
  | { kind: 'key'; key: RowKey; text: string; label?: string }
  | { kind: 'mod'; mod: 'ctrl' | 'alt'; text: string }
  | { kind: 'char'; char: string };

const ROW: RowItem[] = [
  { kind: 'key', key: 'esc', text: 'Esc', label: 'keyRow.esc' },
  { kind: 'key', key: 'tab', text: 'Tab', label: 'keyRow.tab' },
  { kind: 'mod', mod: 'ctrl', text: 'Ctrl' },
  { kind: 'mod', mod: 'alt', text: 'Alt' },
  { kind: 'key', key: 'left', text: '←', label: 'keyRow.left' },
  { kind: 'key', key: 'up', text: '↑', label: 'keyRow.up' },
  { kind: 'key', key: 'down', text: '↓', label: 'keyRow.down' },
  { kind: 'key', key: 'right', text: '→', label: 'keyRow.right' },
  { kind: 'char', char: '|' },
  { kind: 'char', char: '~' },
  { kind: 'char', char: '/' },
  { kind: 'char', char: '-' },
  { kind: 'key', key: 'home', text: 'Home', label: 'keyRow.home' },
  { kind: 'key', key: 'end', text: 'End', label: 'keyRow.end' },
  { kind: 'key', key: 'pgup', text: 'PgUp', label: 'keyRow.pgup' },
  { kind: 'key', key: 'pgdn', text: 'PgDn', label: 'keyRow.pgdn' },
];

/** Keeps the focus where it is (the terminal, and with it the soft keyboard). */
const keepFocus = (e: PointerEvent | SyntheticEvent) => e.preventDefault();

/**
 * Pads the page by the height a soft keyboard covers where the browser overlays it on the layout
 * viewport instead of resizing the page (iOS Safari), so the row stays above the keyboard.
 */
function useKeyboardInset(): void {
  useEffect(() => {
    const vv = window.visualViewport;
    if (!vv) return;
    const root = document.documentElement;
    const update = () => {
      const inset = Math.max(0, Math.round(window.innerHeight - vv.height - vv.offsetTop));
      root.style.setProperty('--keyboard-inset', `${inset}px`);
    };
    update();
    vv.addEventListener('resize', update);
    vv.addEventListener('scroll', update);
    return () => {
      vv.removeEventListener('resize', update);
      vv.removeEventListener('scroll', update);
      root.style.removeProperty('--keyboard-inset');
    };
  }, []);
}

/** Which ends of the scrolling row have keys out of sight. */
function useOverflow(el: HTMLElement | null): { before: boolean; after: boolean } {
  const [edges, setEdges] = useState({ before: false, after: false });
  const measure = useCallback(() => {
    if (!el) return;
    const before = el.scrollLeft > 1;
    const after = el.scrollLeft + el.clientWidth < el.scrollWidth - 1;
    setEdges((e) => (e.before === before && e.after === after ? e : { before, after }));
  }, [el]);
  useEffect(() => {
    if (!el) return;
    measure();
    el.addEventListener('scroll', measure, { passive: true });
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => {
      el.removeEventListener('scroll', measure);
      ro.disconnect();
    };
  }, [el, measure]);
  return edges;
}

export function KeyRow({ className }: { className?: string }) {
  const { t } = useTranslation('workbench');
  const mods = useSnapshot(keyRow);
  useStickyModifiers(mods.ctrl || mods.alt);
  useKeyboardInset();
  const [el, setEl] = useState<HTMLDivElement | null>(null);
  const edges = useOverflow(el);
  const page = (dir: 1 | -1) => {
    if (el) el.scrollBy({ left: dir * Math.max(44, el.clientWidth - 88), behavior: 'smooth' });
  };

  const press = (item: RowItem) => {
    if (item.kind === 'mod') {
      keyRow[item.mod] = !keyRow[item.mod];
      return;
    }
    const shell = shellAt(null);
    const m = takeModifiers();
    if (!shell) return;
    const seq =
      item.kind === 'char'
        ? typedSequence(item.char, m)
        : keySequence(item.key, m, shell.term.modes.applicationCursorKeysMode);
    shell.term.input(seq);
  };

  const more = (dir: 1 | -1) => (
    <button
      type="button"
      tabIndex={-1}
      aria-label={t(dir === 1 ? 'keyRow.moreAfter' : 'keyRow.moreBefore')}
      title={t(dir === 1 ? 'keyRow.moreAfter' : 'keyRow.moreBefore')}
      data-testid={dir === 1 ? 'key-row-more' : 'key-row-back'}
      onPointerDown={keepFocus}
      onMouseDown={keepFocus}
      onClick={() => page(dir)}
      className={cx(
        'absolute inset-y-0 z-10 flex w-11 touch-manipulation items-center text-lg text-zinc-200 select-none',
        dir === 1
          ? 'right-0 justify-end bg-gradient-to-l from-zinc-900 via-zinc-900/90 to-transparent pr-1.5'
          : 'left-0 justify-start bg-gradient-to-r from-zinc-900 via-zinc-900/90 to-transparent pl-1.5',
      )}
    >
      {dir === 1 ? '›' : '‹'}
    </button>
  );

  return (
    <div
      className={cx('relative shrink-0 border-t border-zinc-800 bg-zinc-900', className)}
      data-testid="key-row-bar"
      data-more-after={edges.after ? 'yes' : 'no'}
    >
      {edges.before ? more(-1) : null}
      <div
        ref={setEl}
        role="toolbar"
        aria-label={t('keyRow.label')}
        data-testid="key-row"
        className="flex items-center gap-1 overflow-x-auto overscroll-x-contain px-1 py-0.5 [scrollbar-width:none]"
      >
        {ROW.map((item) => {
          const id = item.kind === 'key' ? item.key : item.kind === 'mod' ? item.mod : item.char;
          const on = item.kind === 'mod' && mods[item.mod];
          const text = item.kind === 'char' ? item.char : item.text;
          const label =
            item.kind === 'mod'
              ? t(`keyRow.${item.mod}`)
              : item.kind === 'key' && item.label
                ? t(item.label)
                : text;
          return (
            <button
              key={id}
              type="button"
              tabIndex={-1}
              aria-label={label}
              aria-pressed={item.kind === 'mod' ? on : undefined}
              title={label}
              data-key={id}
              onPointerDown={keepFocus}
              onMouseDown={keepFocus}
              onClick={() => press(item)}
              className={cx(
                'inline-flex h-11 min-w-11 shrink-0 touch-manipulation items-center justify-center rounded-md px-2 font-mono text-[13px] select-none',
                on
                  ? 'bg-sky-500 text-white ring-1 ring-sky-300'
                  : 'bg-zinc-800 text-zinc-100 active:bg-zinc-600',
              )}
            >
              {text}
            </button>
          );
        })}
      </div>
      {edges.after ? more(1) : null}
    </div>
  );
}
