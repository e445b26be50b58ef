// A shell in a pane: mounts the shell's live xterm (from the registry) into itself, keeps it fitted
// with a debounced ResizeObserver (skipped while hidden), shows why input is unavailable while the
// connection is down or the shell has ended, and offers scrollback search. `data-status` carries
// the shell's status for tests (connecting | live | disconnected | closed).
import '@xterm/xterm/css/xterm.css';
import { useEffect, useImperativeHandle, useRef, useState, type Ref } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { appState } from '#web/state/app.ts';
import { getShell } from './registry.ts';

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
}

export function TerminalPane({ shellId, autoFocus, className, ref }: TerminalPaneProps) {
  const { t } = useTranslation('terminal');
  const host = useRef<HTMLDivElement>(null);
  const shell = getShell(shellId);
  const view = useSnapshot(shell.view);
  const { darkTermTheme } = useSnapshot(appState);
  const [searching, setSearching] = useState(false);
  const [query, setQuery] = useState('');
  const searchInput = useRef<HTMLInputElement>(null);

  useImperativeHandle(ref, () => ({
    focus: () => shell.focus(),
    openSearch: () => {
      setSearching(true);
      setTimeout(() => searchInput.current?.focus(), 0);
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
        setTimeout(() => searchInput.current?.focus(), 0);
      }
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, []);

  const find = (forward: boolean) => {
    if (!query) return;
    if (forward) shell.search.findNext(query, { caseSensitive: false });
    else shell.search.findPrevious(query, { caseSensitive: false });
  };
  const closeSearch = () => {
    setSearching(false);
    shell.search.clearDecorations();
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
      {searching && (
        <form
          className="absolute top-1 right-3 z-20 flex items-center gap-1 rounded border border-zinc-500/40 bg-zinc-800/95 px-2 py-1 text-xs text-zinc-100 shadow"
          onSubmit={(e) => {
            e.preventDefault();
            find(true);
          }}
        >
          <input
            ref={searchInput}
            value={query}
            aria-label={t('search.placeholder')}
            placeholder={t('search.placeholder')}
            className="w-40 bg-transparent outline-none"
            onChange={(e) => {
              setQuery(e.target.value);
              if (e.target.value) shell.search.findNext(e.target.value, { incremental: true });
            }}
            onKeyDown={(e) => {
              if (e.key === 'Escape') closeSearch();
              if (e.key === 'Enter' && e.shiftKey) {
                e.preventDefault();
                find(false);
              }
            }}
          />
          <button type="button" className="px-1" title={t('search.previous')} onClick={() => find(false)}>
            ↑
          </button>
          <button type="submit" className="px-1" title={t('search.next')}>
            ↓
          </button>
          <button type="button" className="px-1" title={t('search.close')} onClick={closeSearch}>
            ✕
          </button>
        </form>
      )}
      <div ref={host} className="min-h-0 flex-1 overflow-hidden px-1 pt-1" />
      {banner && (
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
      )}
    </div>
  );
}
