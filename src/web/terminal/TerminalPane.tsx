// A shell in a pane: mounts the shell's live xterm (from the registry) into itself, keeps it fitted
// with a debounced ResizeObserver (skipped while hidden), shows why input is unavailable while the
// connection is down or the shell has ended, and offers scrollback search. `data-status` carries
// the shell's status for tests (connecting | live | disconnected | closed).
import '@xterm/xterm/css/xterm.css';
import './cursor-blink.css';
import { type ReactNode, type Ref, useEffect, useImperativeHandle, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { useCoarsePointer } from '#web/components/useMedia.ts';
import { appState } from '#web/state/app.ts';
import { getShell } from './get-shell.ts';
import { SearchBar, type SearchBarHandle } from './SearchBar.tsx';

const RESIZE_DEBOUNCE_MS = 60;

export interface TerminalPaneHandle {
  focus(): void;
  openSearch(): void;
}

export interface TerminalPaneProps {
  shellId: string;
  /** Focus the terminal once mounted. */
  autoFocus?: boolean;
  className?: string;
  ref?: Ref<TerminalPaneHandle>;
  /** A joined shell the user watches as a guest (src/shared/share.ts). */
  guest?: boolean;
  /** Replaces an ended shell with a new one: Enter in the ended terminal, named in its banner. */
  onRestart?: () => void;
  /** A bar above the terminal (the workbench and joined shells put the share bar there). */
  bar?: ReactNode;
}

export function TerminalPane({
  shellId,
  autoFocus,
  className,
  ref,
  guest,
  onRestart,
  bar,
}: TerminalPaneProps) {
  const { t } = useTranslation('terminal');
  const host = useRef<HTMLDivElement>(null);
  const shell = getShell(shellId);
  const view = useSnapshot(shell.view);
  const { darkTermTheme } = useSnapshot(appState);
  const [searching, setSearching] = useState(false);
  const touch = useCoarsePointer();
  const searchBar = useRef<SearchBarHandle>(null);

  useImperativeHandle(ref, () => ({
    focus: () => shell.focus(),
    openSearch: () => {
      setSearching(true);
      setTimeout(() => searchBar.current?.focus(), 0);
    },
  }));

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    shell.mount(el);
    if (autoFocus) shell.focus();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const ro = new ResizeObserver(() => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => shell.refit(), RESIZE_DEBOUNCE_MS);
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      if (timer) clearTimeout(timer);
    };
  }, [shell, autoFocus]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (
        e.ctrlKey &&
        e.shiftKey &&
        e.key.toLowerCase() === 'f' &&
        host.current?.contains(document.activeElement)
      ) {
        e.preventDefault();
        setSearching(true);
        setTimeout(() => searchBar.current?.focus(), 0);
      }
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, []);

  // An ended shell takes one key to replace (as VS Code's ended terminals do).
  const ended = view.status === 'closed' && !!onRestart;
  useEffect(() => {
    if (!ended) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Enter' || e.ctrlKey || e.altKey || e.metaKey || e.shiftKey) return;
      if (!host.current?.contains(document.activeElement)) return;
      e.preventDefault();
      e.stopPropagation();
      onRestart?.();
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, [ended, onRestart]);

  const closeSearch = () => {
    setSearching(false);
    shell.focus();
  };

  const banner =
    view.status === 'closed'
      ? t(`closed.${view.reason}`, { defaultValue: t('closed.generic') })
      : view.status === 'disconnected'
        ? t(`reason.${view.reason || 'connection.lost'}`)
        : view.status === 'connecting'
          ? t('status.connecting')
          : '';

  return (
    <div
      className={`relative flex h-full min-h-0 w-full flex-col ${className ?? ''}`}
      data-testid="terminal-pane"
      data-shell-id={shellId}
      data-status={view.status}
      data-renderer={view.renderer}
      style={{ background: darkTermTheme ? '#0d1117' : '#ffffff' }}
    >
      {searching && <SearchBar ref={searchBar} search={shell.search} onClose={closeSearch} />}
      {bar}
      <div ref={host} className="min-h-0 flex-1 overflow-hidden px-1 pt-1" />
      {banner && ended ? (
        // An ended shell's banner is also its restart button: a tap does what Enter does.
        <button
          type="button"
          data-testid="terminal-banner"
          onClick={() => onRestart?.()}
          className="absolute right-0 bottom-0 left-0 z-10 cursor-pointer bg-amber-600/90 px-3 py-1 text-left text-xs text-white hover:bg-amber-600 pointer-coarse:min-h-11"
        >
          <span role="status">{banner}</span>
          <span data-testid="terminal-restart-hint">{` — ${t(touch ? 'restartHintTouch' : 'restartHint')}`}</span>
        </button>
      ) : banner ? (
        <div
          role="status"
          data-testid="terminal-banner"
          className={`pointer-events-none absolute right-0 bottom-0 left-0 z-10 px-3 py-1 text-xs ${
            view.status === 'closed' ? 'bg-amber-600/90 text-white' : 'bg-zinc-700/90 text-zinc-100'
          }`}
        >
          {banner}
          {view.status !== 'closed' && view.status !== 'live' && ` — ${t('input.paused')}`}
        </div>
      ) : null}
    </div>
  );
}
