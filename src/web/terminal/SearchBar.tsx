// The terminal's find bar, after VS Code's terminal find: a query, "3 of 17" (or "No results"),
// toggles for Match Case (Alt+C), Regular Expression (Alt+R) and Whole Word (Alt+W), Enter / Shift+Enter
// for the next / previous match, Escape to close (the pane gives the focus back to the terminal). All
// matches are highlighted through the search addon's decorations; its onDidChangeResults gives the count.
import type { ISearchOptions, SearchAddon } from '@xterm/addon-search';
import { type Ref, useEffect, useId, useImperativeHandle, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { cx } from '#web/components/ui.tsx';
import { type SearchResults, searchLabel } from './search-label.ts';

export interface SearchBarHandle {
  focus(): void;
}

type Toggle = 'caseSensitive' | 'regex' | 'wholeWord';
const TOGGLE_KEYS: Record<string, Toggle> = { KeyC: 'caseSensitive', KeyR: 'regex', KeyW: 'wholeWord' };

const DECORATIONS: ISearchOptions['decorations'] = {
  matchBackground: '#6b5b12',
  matchBorder: '#d29922',
  matchOverviewRuler: '#d29922',
  activeMatchBackground: '#b35c00',
  activeMatchBorder: '#ffa657',
  activeMatchColorOverviewRuler: '#ffa657',
};

export function SearchBar({
  search,
  onClose,
  ref,
}: {
  search: SearchAddon;
  /** Escape or ✕: the pane closes the bar and focuses the terminal. */
  onClose: () => void;
  ref?: Ref<SearchBarHandle>;
}) {
  const { t } = useTranslation('terminal');
  const input = useRef<HTMLInputElement>(null);
  const [query, setQuery] = useState('');
  const [opts, setOpts] = useState({ caseSensitive: false, regex: false, wholeWord: false });
  const [results, setResults] = useState<SearchResults | null>(null);
  const statusId = useId();

  useImperativeHandle(ref, () => ({
    focus: () => {
      input.current?.focus();
      input.current?.select();
    },
  }));

  useEffect(() => {
    const d = search.onDidChangeResults((e) => setResults({ ...e }));
    return () => {
      d.dispose();
      search.clearDecorations();
    };
  }, [search]);

  const label = searchLabel(query, results, opts);
  const invalid = label?.key === 'search.badRegex';

  const run = (forward: boolean, q = query, o = opts, incremental = false) => {
    if (!q || searchLabel(q, null, o)?.key === 'search.badRegex') {
      search.clearDecorations();
      setResults(null);
      return;
    }
    const options: ISearchOptions = { ...o, incremental, decorations: DECORATIONS };
    try {
      if (forward) search.findNext(q, options);
      else search.findPrevious(q, options);
    } catch {
      // The addon compiles the query itself; anything it still refuses reads as no results.
      setResults({ resultIndex: -1, resultCount: 0 });
    }
  };

  const toggle = (k: Toggle) => {
    const next = { ...opts, [k]: !opts[k] };
    setOpts(next);
    // @xterm/addon-search 0.16 records the new options before comparing them with the last ones, so
    // the same term with other options would keep the old highlights and count: forget the last
    // search (clearDecorations also drops its cached term) so the next one highlights afresh.
    search.clearDecorations();
    run(true, query, next, true);
    input.current?.focus();
  };

  const text = label ? t(label.key, label.params) : '';

  return (
    <form
      data-testid="terminal-search"
      className="absolute top-1 right-3 z-20 flex items-center gap-0.5 rounded-md border border-zinc-600/60 bg-zinc-800/95 py-0.5 pr-1 pl-2 text-xs text-zinc-100 shadow-lg"
      onSubmit={(e) => {
        e.preventDefault();
        run(true);
      }}
      onKeyDown={(e) => {
        if (e.key === 'Escape') {
          e.preventDefault();
          e.stopPropagation();
          onClose();
          return;
        }
        const k = TOGGLE_KEYS[e.code];
        if (k && e.altKey && !e.ctrlKey && !e.metaKey && !e.shiftKey) {
          e.preventDefault();
          e.stopPropagation();
          toggle(k);
        }
      }}
    >
      <input
        ref={input}
        value={query}
        aria-label={t('search.placeholder')}
        aria-invalid={invalid || undefined}
        aria-describedby={statusId}
        placeholder={t('search.placeholder')}
        data-testid="terminal-search-input"
        className={cx(
          'w-44 rounded-sm bg-transparent px-0.5 py-0.5 outline-none',
          invalid && 'text-red-300 underline decoration-red-400 decoration-wavy',
        )}
        onChange={(e) => {
          setQuery(e.target.value);
          run(true, e.target.value, opts, true);
        }}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && e.shiftKey) {
            e.preventDefault();
            run(false);
          }
        }}
      />
      {(['caseSensitive', 'wholeWord', 'regex'] as const).map((k) => (
        <button
          key={k}
          type="button"
          aria-pressed={opts[k]}
          aria-label={t(`search.${k}`)}
          title={t(`search.${k}`)}
          data-testid={`terminal-search-${k}`}
          onClick={() => toggle(k)}
          className={cx(
            'flex h-5 min-w-5 items-center justify-center rounded-sm border px-0.5 font-mono text-[11px] leading-none',
            opts[k]
              ? 'border-sky-400 bg-sky-500/30 text-sky-100'
              : 'border-transparent text-zinc-300 hover:bg-zinc-700',
          )}
        >
          {k === 'caseSensitive' ? (
            'Aa'
          ) : k === 'regex' ? (
            '.*'
          ) : (
            <span className="underline underline-offset-2">ab</span>
          )}
        </button>
      ))}
      <span
        id={statusId}
        role="status"
        data-testid="terminal-search-count"
        className={cx(
          'min-w-[5.5rem] px-1.5 text-right whitespace-nowrap tabular-nums',
          invalid || label?.key === 'search.none' ? 'text-red-300' : 'text-zinc-300',
        )}
      >
        {text}
      </span>
      <button
        type="button"
        className="flex h-5 w-5 items-center justify-center rounded-sm hover:bg-zinc-700 disabled:opacity-40"
        title={t('search.previousKey')}
        aria-label={t('search.previous')}
        disabled={!query || invalid}
        onClick={() => run(false)}
      >
        ↑
      </button>
      <button
        type="submit"
        className="flex h-5 w-5 items-center justify-center rounded-sm hover:bg-zinc-700 disabled:opacity-40"
        title={t('search.nextKey')}
        aria-label={t('search.next')}
        disabled={!query || invalid}
      >
        ↓
      </button>
      <button
        type="button"
        className="flex h-5 w-5 items-center justify-center rounded-sm hover:bg-zinc-700"
        title={t('search.closeKey')}
        aria-label={t('search.close')}
        onClick={onClose}
      >
        ✕
      </button>
    </form>
  );
}
