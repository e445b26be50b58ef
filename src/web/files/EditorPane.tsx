// The editor of files opened from the tree: tabs, CodeMirror 6 with highlighting by file type,
// Ctrl/Cmd+S to save, a dot on tabs with unsaved changes. One EditorView per mounted pane; each tab's
// EditorState (text, selection, undo history) is kept in `documents`, so switching tabs or remounting
// the pane loses nothing. A save that finds the file changed on the board asks before overwriting.
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import {
  bracketMatching,
  defaultHighlightStyle,
  foldGutter,
  indentOnInput,
  syntaxHighlighting,
} from '@codemirror/language';
import { highlightSelectionMatches, searchKeymap } from '@codemirror/search';
import { Compartment, EditorState, Prec, type Text } from '@codemirror/state';
import { oneDark } from '@codemirror/theme-one-dark';
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from '@codemirror/view';
import { useEffect, useMemo, useRef } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { EDITOR_MAX_BYTES, type TextEncoding } from '#shared/files.ts';
import { Modal } from '#web/components/Modal.tsx';
import { Button, cx, EmptyState, Spinner } from '#web/components/ui.tsx';
import { appState } from '#web/state/app.ts';
import { registerEditorCommands } from './commands.ts';
import { formatSize } from './format.ts';
import { languageFor, languageLabel } from './languages.ts';
import { keepTabs, restoreTabs } from './persist.ts';
import {
  closeTab,
  documentOf,
  download,
  editorOf,
  openFile,
  saveTab,
  setDocument,
  type Tab,
  tabOf,
  takeIncoming,
} from './state.ts';
import { focusTargets, saveActive, uiOf } from './ui.ts';

export interface EditorPaneProps {
  /** The caller's apply: files open from and save to its board. */
  applyId: string;
  /** The board of the apply (the "download instead" button names it). */
  deviceId: string;
  className?: string;
}

/** The text each tab last loaded or saved, to tell whether it has unsaved changes. */
const savedTexts = new Map<string, Text>();
const keyOf = (applyId: string, path: string) => `${applyId}\n${path}`;

/** Module-wide so documents built by an earlier mount of the pane can still be re-themed. */
const themeSlot = new Compartment();

export function EditorPane({ applyId, deviceId, className }: EditorPaneProps) {
  const { t, i18n } = useTranslation('files');
  const store = useMemo(() => editorOf(applyId), [applyId]);
  const snap = useSnapshot(store);
  const theme = useSnapshot(appState).theme;
  const hostRef = useRef<HTMLDivElement>(null);
  // The focus was asked for while the file was still loading (Enter in the tree, "Open file…").
  const focusDue = useRef(false);
  const viewRef = useRef<EditorView | null>(null);
  const activeRef = useRef<string | null>(null);
  const ui = useMemo(() => uiOf(applyId), [applyId]);
  const closing = useSnapshot(ui).closing;
  const setClosing = (p: string | null) => {
    ui.closing = p;
  };

  const active = snap.tabs.find((x) => x.path === snap.active) as Tab | undefined;
  activeRef.current = active?.path ?? null;

  const save = (force = false) => {
    const path = activeRef.current;
    const view = viewRef.current;
    if (!path || !view) return;
    const doc = view.state.doc;
    void saveTab(applyId, path, doc.toString(), force).then((ok) => {
      if (ok) savedTexts.set(keyOf(applyId, path), doc);
      const tab = tabOf(applyId, path);
      if (tab && ok) tab.dirty = !(view.state.doc === doc || view.state.doc.eq(doc));
    });
  };
  const saveRef = useRef(save);
  saveRef.current = save;

  const themeExt = (dark: boolean) =>
    dark ? oneDark : syntaxHighlighting(defaultHighlightStyle, { fallback: true });

  const buildState = (path: string, text: string) =>
    EditorState.create({
      doc: text,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        foldGutter(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        highlightSelectionMatches(),
        Prec.highest(
          keymap.of([
            {
              key: 'Mod-s',
              preventDefault: true,
              run: () => {
                saveActive.get(applyId)?.();
                return true;
              },
            },
          ]),
        ),
        keymap.of([...defaultKeymap, ...historyKeymap, ...searchKeymap, indentWithTab]),
        themeSlot.of(themeExt(theme === 'dark')),
        EditorView.theme({
          '&': { height: '100%', fontSize: '13px' },
          '.cm-scroller': { fontFamily: 'ui-monospace, monospace' },
        }),
        ...languageFor(path.slice(path.lastIndexOf('/') + 1)),
      ],
    });

  // The view lives as long as the pane; tab switches swap its state.
  useEffect(() => {
    if (!hostRef.current) return;
    const view = new EditorView({
      parent: hostRef.current,
      dispatchTransactions: (trs, v) => {
        v.update(trs);
        const path = activeRef.current;
        if (!path) return;
        setDocument(applyId, path, v.state);
        if (trs.some((tr) => tr.docChanged)) {
          const saved = savedTexts.get(keyOf(applyId, path));
          const tab = tabOf(applyId, path);
          const dirty = !saved || !v.state.doc.eq(saved);
          if (tab && tab.dirty !== dirty) tab.dirty = dirty;
        }
      },
    });
    viewRef.current = view;
    saveActive.set(applyId, () => saveRef.current());
    // A file still loading has no visible editor to focus yet: the focus is taken once its text shows.
    focusTargets.set(`editor:${applyId}`, () => {
      if (hostRef.current?.getClientRects().length) view.focus();
      else focusDue.current = true;
    });
    const off = registerEditorCommands(applyId, deviceId);
    // After a reload the files that were open come back (persist.ts).
    restoreTabs(applyId);
    const unkeep = keepTabs(applyId);
    return () => {
      off();
      unkeep();
      saveActive.delete(applyId);
      focusTargets.delete(`editor:${applyId}`);
      view.destroy();
      viewRef.current = null;
    };
  }, [applyId, deviceId]);

  // Show the active tab's document, building it when its text has just arrived (`version` bumps).
  // biome-ignore lint/correctness/useExhaustiveDependencies: rebuilt only when a load lands, the tab or the theme changes
  useEffect(() => {
    const view = viewRef.current;
    if (!view || !active || active.kind !== 'text') return;
    const key = keyOf(applyId, active.path);
    const arrived = takeIncoming(applyId, active.path);
    let state = arrived === undefined ? documentOf(applyId, active.path) : undefined;
    if (!state) {
      state = buildState(active.path, arrived ?? '');
      savedTexts.set(key, state.doc);
      setDocument(applyId, active.path, state);
    }
    if (view.state !== state) view.setState(state);
    view.dispatch({ effects: themeSlot.reconfigure(themeExt(theme === 'dark')) });
    if (focusDue.current) {
      focusDue.current = false;
      requestAnimationFrame(() => view.focus());
    }
  }, [applyId, active?.path, active?.kind, active?.version, theme]);

  const tryClose = (path: string) => {
    if (tabOf(applyId, path)?.dirty) setClosing(path);
    else closeTab(applyId, path);
  };

  const changeEncoding = (enc: TextEncoding) => {
    if (!active) return;
    const tab = tabOf(applyId, active.path);
    if (!tab) return;
    // Unsaved text is kept and will be saved in the new encoding; otherwise the board's bytes are
    // decoded again with it.
    if (tab.dirty) tab.encoding = enc;
    else void openFile(applyId, active.path, enc);
  };

  const lng = i18n.language;
  return (
    <section
      className={cx('flex h-full min-h-0 flex-col bg-white dark:bg-zinc-950', className)}
      aria-label={t('editor.title')}
      data-testid="editor-pane"
    >
      <div
        role="tablist"
        aria-label={t('editor.tabs')}
        className="flex min-h-8 items-stretch overflow-x-auto border-b border-zinc-200 dark:border-zinc-800"
      >
        {snap.tabs.map((tab) => (
          <div
            key={tab.path}
            className={cx(
              'group flex shrink-0 items-center border-r border-zinc-200 dark:border-zinc-800',
              tab.path === snap.active
                ? 'bg-white dark:bg-zinc-950'
                : 'bg-zinc-50 text-zinc-500 dark:bg-zinc-900',
            )}
          >
            <button
              type="button"
              role="tab"
              aria-selected={tab.path === snap.active}
              title={tab.path}
              data-testid="editor-tab"
              data-path={tab.path}
              data-dirty={tab.dirty ? 'true' : 'false'}
              onClick={() => {
                store.active = tab.path;
              }}
              onAuxClick={(e) => {
                if (e.button === 1) tryClose(tab.path);
              }}
              className="flex items-center gap-1.5 py-1 pr-1 pl-3 text-xs focus-ring"
            >
              <span className="max-w-48 truncate">{tab.name}</span>
              {tab.dirty ? (
                <span title={t('editor.unsaved')} className="text-amber-500">
                  <span aria-hidden="true">●</span>
                  <span className="sr-only">{t('editor.unsaved')}</span>
                </span>
              ) : null}
            </button>
            <button
              type="button"
              aria-label={t('editor.close', { name: tab.name })}
              title={t('editor.close', { name: tab.name })}
              onClick={() => tryClose(tab.path)}
              className="mr-1 rounded px-1 text-zinc-400 opacity-60 group-hover:opacity-100 hover:bg-zinc-200 hover:text-zinc-800 dark:hover:bg-zinc-700"
            >
              ×
            </button>
          </div>
        ))}
      </div>

      <div className="relative min-h-0 flex-1">
        <div
          ref={hostRef}
          className={cx('absolute inset-0', active?.kind === 'text' ? 'block' : 'hidden')}
          data-testid="editor-host"
          data-path={active?.kind === 'text' ? active.path : undefined}
        />
        {!active ? (
          <div className="p-6">
            <EmptyState icon="copy" title={t('editor.emptyTitle')}>
              {t('editor.emptyBody')}
            </EmptyState>
          </div>
        ) : active.kind === 'loading' ? (
          <div className="flex h-full items-center justify-center gap-2 text-zinc-400">
            <Spinner size={14} /> {t('editor.loading')}
          </div>
        ) : active.kind === 'failed' ? (
          <div className="p-6 text-red-600 dark:text-red-400">
            <p>{active.error}</p>
            <Button className="mt-3" size="sm" onClick={() => void openFile(applyId, active.path)}>
              {t('tree.retry')}
            </Button>
          </div>
        ) : active.kind === 'binary' || active.kind === 'tooLarge' ? (
          <div className="p-6" data-testid="editor-not-text">
            <EmptyState
              icon="info"
              title={active.kind === 'binary' ? t('editor.binaryTitle') : t('editor.tooLargeTitle')}
              action={
                <Button
                  variant="primary"
                  size="sm"
                  onClick={() =>
                    void download(deviceId, { path: active.path, type: 'file', size: active.size })
                  }
                >
                  {t('editor.downloadInstead')}
                </Button>
              }
            >
              {active.kind === 'binary'
                ? t('editor.binaryBody', { size: formatSize(active.size, lng) })
                : t('editor.tooLargeBody', {
                    size: formatSize(active.size, lng),
                    limit: formatSize(EDITOR_MAX_BYTES, lng),
                  })}
            </EmptyState>
          </div>
        ) : null}
      </div>

      {active && active.kind === 'text' ? (
        <div className="flex items-center gap-3 border-t border-zinc-200 px-2 py-0.5 text-[11px] text-zinc-500 dark:border-zinc-800">
          <span className="min-w-0 flex-1 truncate font-mono" title={active.path}>
            {active.path}
          </span>
          <span>{languageLabel(active.name)}</span>
          <label className="flex items-center gap-1">
            <span className="sr-only">{t('editor.encoding')}</span>
            <select
              value={active.encoding}
              onChange={(e) => changeEncoding(e.target.value as TextEncoding)}
              className="rounded border-none bg-transparent py-0 text-[11px] focus-ring"
              data-testid="editor-encoding"
            >
              <option value="utf-8">UTF-8</option>
              <option value="utf-8-bom">UTF-8 BOM</option>
              <option value="gbk">GBK</option>
            </select>
          </label>
          <Button
            size="sm"
            variant="ghost"
            loading={active.saving}
            disabled={!active.dirty}
            onClick={() => save()}
            data-testid="editor-save"
          >
            {t('editor.save')}
          </Button>
        </div>
      ) : null}

      {active?.conflict ? (
        <Modal
          open
          role="alertdialog"
          onClose={() => {
            const tab = tabOf(applyId, active.path);
            if (tab) tab.conflict = false;
          }}
          title={t('editor.conflictTitle')}
          testId="editor-conflict-dialog"
          footer={
            <>
              <Button
                onClick={() => {
                  const tab = tabOf(applyId, active.path);
                  if (tab) tab.conflict = false;
                }}
              >
                {t('dialog.cancel')}
              </Button>
              <Button onClick={() => void openFile(applyId, active.path, active.encoding)}>
                {t('editor.reload')}
              </Button>
              <Button variant="danger" onClick={() => save(true)} data-testid="editor-overwrite">
                {t('editor.overwrite')}
              </Button>
            </>
          }
        >
          <p>{t('editor.conflictBody', { path: active.path })}</p>
        </Modal>
      ) : null}

      {closing ? (
        <Modal
          open
          role="alertdialog"
          onClose={() => setClosing(null)}
          title={t('editor.discardTitle')}
          footer={
            <>
              <Button onClick={() => setClosing(null)}>{t('dialog.cancel')}</Button>
              <Button
                variant="danger"
                onClick={() => {
                  closeTab(applyId, closing);
                  setClosing(null);
                }}
              >
                {t('editor.discard')}
              </Button>
            </>
          }
        >
          <p>{t('editor.discardBody', { path: closing })}</p>
        </Modal>
      ) : null}
    </section>
  );
}
