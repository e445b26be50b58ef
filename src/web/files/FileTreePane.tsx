// The file tree of the board of an apply: folders expand lazily, the keyboard moves through it
// (arrows, Enter, F2 rename, Delete, Backspace for the parent folder), columns show size, time and
// mode. Files dropped on the pane (or picked) upload into the folder under the pointer or the selected
// one. The transfers of this apply are listed at the bottom of the pane.
import { type DragEvent, type KeyboardEvent, useEffect, useMemo, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { type FileEntryDto, fileName, parentOf } from '#shared/files.ts';
import { cx, IconButton, Spinner } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { listDir } from './api.ts';
import { registerTreeCommands } from './commands.ts';
import { startTreeWatch } from './live.ts';
import { keepTree, restoreTree } from './persist.ts';
import {
  dataOf,
  download,
  errorText,
  loadFolder,
  openFile,
  refreshTree,
  renameEntry,
  select,
  setRoot,
  toggleFolder,
  treeOf,
  uploadAll,
} from './state.ts';
import { TransferList } from './TransferList.tsx';
import { TreeDialogs } from './TreeDialogs.tsx';
import { expandable, rowId, ToolbarText, TreeRow } from './TreeRow.tsx';
import { TYPE_AHEAD_MS, typeAheadMatch } from './type-ahead.ts';
import { focusTargets, pickers, uiOf } from './ui.ts';

export interface FileTreePaneProps {
  /** The caller's apply: every call acts on its board. */
  applyId: string;
  /** The board of the apply (downloads name it). */
  deviceId: string;
  /** The folder shown first; default `/`. */
  initialPath?: string;
  className?: string;
}

interface Row {
  key: string;
  depth: number;
  entry?: FileEntryDto;
  /** A placeholder row under a folder that is loading or failed to load. */
  note?: { kind: 'loading' | 'failed' | 'empty'; text?: string; folder: string };
}

export function FileTreePane({ applyId, deviceId, initialPath = '/', className }: FileTreePaneProps) {
  const { t, i18n } = useTranslation('files');
  const store = useMemo(() => treeOf(applyId), [applyId]);
  const ui = useMemo(() => uiOf(applyId), [applyId]);
  const tree = useSnapshot(store);
  const uiSnap = useSnapshot(ui);
  const treeRef = useRef<HTMLDivElement>(null);
  const typeAhead = useRef({ text: '', at: 0 });
  const pickerRef = useRef<HTMLInputElement>(null);
  const [dropFolder, setDropFolder] = useState<string | null>(null);
  const domId = `files-${applyId}`;

  useEffect(() => {
    // After a reload the tree comes back to the folder it showed (persist.ts).
    if (!store.folders[store.root] && !(store.root === '/' && restoreTree(applyId)))
      setRoot(applyId, store.root === '/' ? initialPath : store.root);
    return keepTree(applyId);
  }, [applyId, initialPath, store]);

  useEffect(() => {
    const input = pickerRef.current;
    if (input) pickers.set(applyId, input);
    focusTargets.set(`tree:${applyId}`, () => treeRef.current?.focus());
    const off = registerTreeCommands(applyId, deviceId);
    return () => {
      if (pickers.get(applyId) === input) pickers.delete(applyId);
      focusTargets.delete(`tree:${applyId}`);
      off();
    };
  }, [applyId, deviceId]);

  useEffect(() => {
    // A pane in a collapsed panel or a hidden tab costs the board nothing.
    const onScreen = () => {
      const el = treeRef.current;
      return !!el && el.offsetWidth > 0 && el.offsetHeight > 0;
    };
    const watch = startTreeWatch({
      tree: store,
      list: async (p) => (await listDir(applyId, p)).entries,
      active: () => document.visibilityState === 'visible' && onScreen(),
    });
    const onVisibility = () => {
      if (document.visibilityState === 'visible') watch.kick();
    };
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      document.removeEventListener('visibilitychange', onVisibility);
      watch.stop();
    };
  }, [applyId, store]);

  const rows = useMemo(() => {
    const out: Row[] = [];
    const walk = (folder: string, depth: number) => {
      const load = tree.folders[folder];
      const entries = dataOf(load) as FileEntryDto[] | undefined;
      if (load?.status === 'failed' && !entries) {
        out.push({ key: `${folder}#failed`, depth, note: { kind: 'failed', text: load.error, folder } });
        return;
      }
      if (!entries) {
        out.push({ key: `${folder}#loading`, depth, note: { kind: 'loading', folder } });
        return;
      }
      if (!entries.length && depth > 0)
        out.push({ key: `${folder}#empty`, depth, note: { kind: 'empty', folder } });
      for (const entry of entries) {
        out.push({ key: entry.path, depth, entry });
        if (expandable(entry) && tree.expanded[entry.path]) walk(entry.path, depth + 1);
      }
    };
    walk(tree.root, 0);
    return out;
  }, [tree.folders, tree.expanded, tree.root]);

  const entryRows = rows.filter((r) => r.entry);
  const selectedIndex = entryRows.findIndex((r) => r.entry?.path === tree.selected);
  const selected = selectedIndex >= 0 ? (entryRows[selectedIndex].entry as FileEntryDto) : null;

  useEffect(() => {
    if (!tree.selected) return;
    document.getElementById(rowId(domId, tree.selected))?.scrollIntoView({ block: 'nearest' });
  }, [tree.selected, domId]);

  const activate = async (entry: FileEntryDto) => {
    if (entry.type === 'dir') return toggleFolder(applyId, entry.path);
    if (entry.type === 'symlink') {
      // A link may name a folder or a file; listing tells which.
      await loadFolder(applyId, entry.path);
      if (store.folders[entry.path]?.status === 'ok') return toggleFolder(applyId, entry.path, true);
      delete store.folders[entry.path];
    }
    await openFile(applyId, entry.path);
    focusTargets.get(`editor:${applyId}`)?.();
  };

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (uiSnap.renaming || (e.target as HTMLElement).tagName === 'INPUT') return;
    const move = (i: number) => {
      const r = entryRows[Math.max(0, Math.min(entryRows.length - 1, i))];
      if (r?.entry) select(applyId, r.entry.path);
    };
    switch (e.key) {
      case 'ArrowDown':
        move(selectedIndex + 1);
        break;
      case 'ArrowUp':
        move(selectedIndex < 0 ? entryRows.length - 1 : selectedIndex - 1);
        break;
      case 'Home':
        move(0);
        break;
      case 'End':
        move(entryRows.length - 1);
        break;
      case 'ArrowRight':
        if (selected && expandable(selected)) {
          if (!tree.expanded[selected.path]) toggleFolder(applyId, selected.path, true);
          else move(selectedIndex + 1);
        }
        break;
      case 'ArrowLeft':
        if (selected && expandable(selected) && tree.expanded[selected.path])
          toggleFolder(applyId, selected.path, false);
        else if (selected && parentOf(selected.path) !== tree.root) select(applyId, parentOf(selected.path));
        break;
      case 'Enter':
        if (selected) void activate(selected);
        break;
      case 'F2':
        if (selected) ui.renaming = selected.path;
        break;
      case 'Delete':
        if (selected) ui.dialog = { kind: 'delete', entry: { ...selected }, step: 1 };
        break;
      case 'Backspace':
        if (tree.root !== '/') setRoot(applyId, parentOf(tree.root));
        break;
      default:
        if (e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) {
          // Type-ahead: letters typed in quick succession make a word; the first entry from the
          // selection on whose name starts with it. A single letter moves on to the next such entry.
          const now = Date.now();
          const ta = typeAhead.current;
          ta.text = now - ta.at < TYPE_AHEAD_MS ? ta.text + e.key.toLowerCase() : e.key.toLowerCase();
          ta.at = now;
          const target = typeAheadMatch(
            entryRows.map((r) => r.entry?.name ?? ''),
            selectedIndex,
            ta.text,
          );
          if (target >= 0) select(applyId, (entryRows[target].entry as FileEntryDto).path);
          break;
        }
        return;
    }
    e.preventDefault();
  };

  const onDrop = (e: DragEvent, folder: string) => {
    e.preventDefault();
    e.stopPropagation();
    setDropFolder(null);
    const files = Array.from(e.dataTransfer.files);
    if (files.length) void uploadAll(applyId, folder, files);
  };
  const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer.types).includes('Files');
  const folderOfRow = (entry?: FileEntryDto) =>
    entry ? (entry.type === 'dir' ? entry.path : parentOf(entry.path)) : tree.root;

  const lng = i18n.language;
  const busy = tree.folders[tree.root]?.status === 'loading';

  return (
    <section
      className={cx(
        '@container flex h-full min-h-0 flex-col bg-white text-[13px] dark:bg-zinc-950',
        className,
      )}
      aria-label={t('tree.title')}
      data-testid="file-tree-pane"
      onDragOver={(e) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        if (!dropFolder) setDropFolder(tree.root);
      }}
      onDragLeave={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setDropFolder(null);
      }}
      onDrop={(e) => onDrop(e, dropFolder ?? tree.root)}
    >
      <div className="flex items-center gap-1 border-b border-zinc-200 px-2 py-1 dark:border-zinc-800">
        <IconButton
          icon="arrowLeft"
          label={t('tree.up')}
          size={14}
          className="h-7 w-7"
          disabled={tree.root === '/'}
          onClick={() => setRoot(applyId, parentOf(tree.root))}
        />
        <button
          type="button"
          className="min-w-0 flex-1 truncate rounded px-1.5 py-0.5 text-left font-mono text-xs text-zinc-600 hover:bg-zinc-100 focus-ring dark:text-zinc-300 dark:hover:bg-zinc-800"
          title={t('tree.goto')}
          data-testid="file-tree-root"
          onClick={() => (ui.dialog = { kind: 'goto' })}
        >
          {tree.root}
        </button>
        {busy ? <Spinner size={12} className="text-zinc-400" /> : null}
        <IconButton
          icon="refresh"
          label={t('tree.refresh')}
          size={14}
          className="h-7 w-7"
          onClick={() => void refreshTree(applyId)}
        />
        <IconButton
          icon="upload"
          label={t('tree.upload')}
          size={14}
          className="h-7 w-7"
          onClick={() => pickerRef.current?.click()}
          data-testid="file-upload-button"
        />
        <ToolbarText
          label={t('tree.newFile')}
          onClick={() => (ui.dialog = { kind: 'newFile', folder: folderOfRow(selected ?? undefined) })}
        >
          +F
        </ToolbarText>
        <ToolbarText
          label={t('tree.newFolder')}
          onClick={() => (ui.dialog = { kind: 'newFolder', folder: folderOfRow(selected ?? undefined) })}
        >
          +D
        </ToolbarText>
        <IconButton
          icon="arrowRight"
          label={t('tree.download')}
          size={14}
          className="h-7 w-7 rotate-90"
          disabled={!selected}
          onClick={() => selected && void download(deviceId, selected)}
          data-testid="file-download-button"
        />
        <input
          ref={pickerRef}
          type="file"
          multiple
          hidden
          data-testid="file-upload-input"
          onChange={(e) => {
            const files = Array.from(e.target.files ?? []);
            e.target.value = '';
            if (files.length) void uploadAll(applyId, folderOfRow(selected ?? undefined), files);
          }}
        />
      </div>

      <div className="grid grid-cols-[minmax(0,1fr)_4.5rem] gap-2 border-b border-zinc-100 px-2 py-1 text-[11px] font-medium tracking-wide text-zinc-400 uppercase @md:grid-cols-[minmax(0,1fr)_4.5rem_8rem_5.5rem] dark:border-zinc-900">
        <span>{t('tree.columns.name')}</span>
        <span className="text-right">{t('tree.columns.size')}</span>
        <span className="hidden @md:block">{t('tree.columns.modified')}</span>
        <span className="hidden @md:block">{t('tree.columns.mode')}</span>
      </div>

      <div
        ref={treeRef}
        role="tree"
        tabIndex={0}
        aria-label={t('tree.title')}
        aria-activedescendant={tree.selected && selected ? rowId(domId, tree.selected) : undefined}
        onKeyDown={onKeyDown}
        onFocus={() => {
          if (!tree.selected && entryRows[0]?.entry) select(applyId, entryRows[0].entry.path);
        }}
        className={cx(
          'min-h-0 flex-1 overflow-auto py-0.5 outline-none focus-visible:ring-2 focus-visible:ring-sky-500/40 focus-visible:ring-inset',
          dropFolder === tree.root && 'bg-sky-50 dark:bg-sky-950/30',
        )}
        data-testid="file-tree"
      >
        {rows.map((row) =>
          row.entry ? (
            <TreeRow
              key={row.key}
              id={rowId(domId, row.entry.path)}
              entry={row.entry}
              depth={row.depth}
              lng={lng}
              expanded={!!tree.expanded[row.entry.path]}
              selected={tree.selected === row.entry.path}
              dropTarget={dropFolder === row.entry.path}
              renaming={uiSnap.renaming === row.entry.path}
              onSelect={() => select(applyId, (row.entry as FileEntryDto).path)}
              onActivate={() => void activate(row.entry as FileEntryDto)}
              onToggle={() => toggleFolder(applyId, (row.entry as FileEntryDto).path)}
              onDragOver={(e) => {
                if (!hasFiles(e)) return;
                e.preventDefault();
                e.stopPropagation();
                setDropFolder(folderOfRow(row.entry));
              }}
              onDrop={(e) => onDrop(e, folderOfRow(row.entry))}
              onRename={async (name) => {
                ui.renaming = null;
                const entry = row.entry as FileEntryDto;
                if (name === entry.name) return;
                const parsed = fileName.safeParse(name);
                if (!parsed.success) return notify('error', t('errors.path.invalid'));
                try {
                  await renameEntry(applyId, entry.path, name);
                } catch (err) {
                  notify('error', errorText(err));
                }
                treeRef.current?.focus();
              }}
              onCancelRename={() => {
                ui.renaming = null;
                treeRef.current?.focus();
              }}
            />
          ) : (
            <div
              key={row.key}
              role="none"
              className={cx(
                'flex items-center gap-2 py-0.5 pr-2 text-xs',
                row.note?.kind === 'failed' ? 'text-red-600 dark:text-red-400' : 'text-zinc-400',
              )}
              style={{ paddingLeft: 8 + row.depth * 14 + 18 }}
            >
              {row.note?.kind === 'loading' ? <Spinner size={11} /> : null}
              <span className="truncate">
                {row.note?.kind === 'loading'
                  ? t('tree.loading')
                  : row.note?.kind === 'empty'
                    ? t('tree.empty')
                    : row.note?.text}
              </span>
              {row.note?.kind === 'failed' ? (
                <button
                  type="button"
                  className="underline"
                  onClick={() => void loadFolder(applyId, row.note?.folder ?? '/')}
                >
                  {t('tree.retry')}
                </button>
              ) : null}
            </div>
          ),
        )}
      </div>

      <TransferList className="border-t border-zinc-200 dark:border-zinc-800" compact />
      <TreeDialogs applyId={applyId} />
    </section>
  );
}
