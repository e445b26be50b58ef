// Palette commands of the file panes. Every file action of the tree and the editor is here too, so
// it can be run from the keyboard without the pointer; commands that need a name open the same
// dialogs the pane's buttons open. Registered while a pane is mounted.
import { normalizeBoardPath, parentOf } from '#shared/files.ts';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { t } from '#web/i18n/i18n.ts';
import { notify } from '#web/state/notices.ts';
import { listDir } from './api.ts';
import { completeFolder } from './complete.ts';
import { completeFiles, forgetIndex } from './find.ts';
import {
  closeTab,
  download,
  editorOf,
  errorText,
  openFile,
  refreshTree,
  select,
  setRoot,
  targetFolder,
  treeOf,
} from './state.ts';
import { focusTargets, pickers, saveActive, uiOf } from './ui.ts';

const SECTION = 'files:palette.section';

function selectedEntry(applyId: string) {
  const tree = treeOf(applyId);
  return tree.selected ? tree.known[tree.selected] : undefined;
}

/** The entry at a path: as listed in the tree, else its folder is listed to find it. */
async function entryAt(applyId: string, path: string) {
  const known = treeOf(applyId).known[path];
  if (known) return known;
  const listed = await listDir(applyId, parentOf(path));
  return listed.entries.find((e) => e.path === path) ?? null;
}

/** A path typed or chosen in the palette, made absolute from the tree's folder (null: outside the root). */
function absolute(applyId: string, v: string): string | null {
  return normalizeBoardPath(v.trim().replace(/\/+$/, '') || '/', treeOf(applyId).root);
}

/** A path of the board, completed over its files as typed ('files': files only; 'any': folders too). */
function boardPathArg(applyId: string, promptKey: string, kinds: 'files' | 'any') {
  return {
    key: 'path',
    promptKey,
    complete: (typed: string) =>
      completeFiles(applyId, treeOf(applyId).root, typed, Object.values(treeOf(applyId).known), kinds),
    validate: (v: string) => (absolute(applyId, v) ? null : t('files:errors.path.outside_root')),
  };
}

/** "Open file…" (Ctrl+P): the board's files completed as typed; a file opens in the editor, focused. */
function openFileCommand(applyId: string): PaletteCommand {
  return {
    id: 'files.open',
    titleKey: 'files:palette.open',
    section: SECTION,
    context: 'files',
    shortcut: ['Ctrl', 'P'],
    keywords: ['open', 'file', 'quick open', 'find file', 'edit'],
    aliases: ['open file', 'quick open', 'go to file', 'find file', 'edit file'],
    quick: { verbs: ['open', 'edit', 'o'] },
    args: [boardPathArg(applyId, 'files:palette.openAsk', 'files')],
    run: async (_ctx, { path }) => {
      const target = absolute(applyId, path) ?? '/';
      try {
        const entry = await entryAt(applyId, target);
        if (!entry) throw new Error(t('files:palette.notFound', { path: target }));
        if (entry.type === 'dir') {
          setRoot(applyId, target);
          setTimeout(() => focusTargets.get(`tree:${applyId}`)?.(), 0);
          return;
        }
        if (treeOf(applyId).known[target]) select(applyId, target);
        // Asked now: the editor takes the focus once the file's text shows.
        setTimeout(() => focusTargets.get(`editor:${applyId}`)?.(), 0);
        await openFile(applyId, target);
      } catch (err) {
        notify('error', t('files:palette.openFailed', { path: target, error: errorText(err) }));
      }
    },
  };
}

/** "Download…": any file or folder of the board, completed as typed (a folder comes as a .tar). */
function downloadAskCommand(applyId: string, deviceId: string): PaletteCommand {
  return {
    id: 'files.downloadAsk',
    titleKey: 'files:palette.downloadAsk',
    section: SECTION,
    context: 'files',
    keywords: ['download', 'get', 'save', 'fetch', 'scp'],
    aliases: ['download file', 'download a file', 'get file'],
    quick: { verbs: ['download', 'get'] },
    args: [boardPathArg(applyId, 'files:palette.downloadAskPrompt', 'any')],
    run: async (_ctx, { path }) => {
      const target = absolute(applyId, path) ?? '/';
      try {
        const entry = await entryAt(applyId, target);
        if (!entry) throw new Error(t('files:palette.notFound', { path: target }));
        await download(deviceId, entry);
      } catch (err) {
        notify('error', t('files:palette.openFailed', { path: target, error: errorText(err) }));
      }
    },
  };
}

export function registerTreeCommands(applyId: string, deviceId: string): () => void {
  const ui = uiOf(applyId);
  const hasSelection = () => !!selectedEntry(applyId);
  forgetIndex(applyId);
  const commands: PaletteCommand[] = [
    openFileCommand(applyId),
    downloadAskCommand(applyId, deviceId),
    {
      id: 'files.focusTree',
      titleKey: 'files:palette.focusTree',
      section: SECTION,
      context: 'files',
      keywords: ['files', 'tree', 'explorer'],
      aliases: ['files', 'file tree', 'explorer', '文件', '文件树', 'ファイル', 'ファイルツリー'],
      run: ({ close }) => {
        close();
        setTimeout(() => focusTargets.get(`tree:${applyId}`)?.(), 0);
      },
    },
    {
      id: 'files.refresh',
      titleKey: 'files:palette.refresh',
      section: SECTION,
      context: 'files',
      icon: 'refresh',
      keywords: ['reload', 'files'],
      run: () => void refreshTree(applyId),
    },
    {
      id: 'files.goto',
      titleKey: 'files:palette.goto',
      section: SECTION,
      context: 'files',
      keywords: ['cd', 'open folder', 'path'],
      aliases: ['cd', 'open folder', 'go to path'],
      // Asked in the palette with the board's folders completed as typed (Tab takes one, like a shell).
      args: [
        {
          key: 'path',
          promptKey: 'files:palette.gotoAsk',
          complete: (typed) => completeFolder(applyId, treeOf(applyId).root, typed),
          validate: (v) =>
            normalizeBoardPath(v.trim() || '/', treeOf(applyId).root)
              ? null
              : t('files:errors.path.outside_root'),
        },
      ],
      run: async (_ctx, { path }) => {
        const target = normalizeBoardPath(path.trim() || '/', treeOf(applyId).root) ?? '/';
        try {
          const listed = await listDir(applyId, target);
          setRoot(applyId, listed.path);
          setTimeout(() => focusTargets.get(`tree:${applyId}`)?.(), 0);
        } catch (err) {
          notify('error', t('files:palette.gotoFailed', { path: target, error: errorText(err) }));
        }
      },
    },
    {
      id: 'files.up',
      titleKey: 'files:palette.up',
      section: SECTION,
      context: 'files',
      when: () => treeOf(applyId).root !== '/',
      run: () => setRoot(applyId, parentOf(treeOf(applyId).root)),
    },
    {
      id: 'files.newFile',
      titleKey: 'files:palette.newFile',
      section: SECTION,
      context: 'files',
      keywords: ['create', 'touch'],
      run: ({ close }) => {
        close();
        ui.dialog = { kind: 'newFile', folder: targetFolder(applyId) };
      },
    },
    {
      id: 'files.newFolder',
      titleKey: 'files:palette.newFolder',
      section: SECTION,
      context: 'files',
      keywords: ['create', 'mkdir', 'directory'],
      run: ({ close }) => {
        close();
        ui.dialog = { kind: 'newFolder', folder: targetFolder(applyId) };
      },
    },
    {
      id: 'files.upload',
      titleKey: 'files:palette.upload',
      section: SECTION,
      context: 'files',
      icon: 'upload',
      keywords: ['send', 'put'],
      run: ({ close }) => {
        // The picker must open inside the key press that ran the command (a user gesture).
        pickers.get(applyId)?.click();
        close();
      },
    },
    {
      id: 'files.download',
      titleKey: 'files:palette.download',
      section: SECTION,
      context: 'files',
      keywords: ['get', 'save', 'archive', 'tar'],
      when: hasSelection,
      run: ({ close }) => {
        close();
        const entry = selectedEntry(applyId);
        if (entry) void download(deviceId, entry);
      },
    },
    {
      id: 'files.rename',
      titleKey: 'files:palette.rename',
      section: SECTION,
      context: 'files',
      shortcut: ['F2'],
      keywords: ['move', 'mv'],
      aliases: ['mv'],
      when: hasSelection,
      run: ({ close }) => {
        close();
        const entry = selectedEntry(applyId);
        if (entry) ui.renaming = entry.path;
      },
    },
    {
      id: 'files.delete',
      titleKey: 'files:palette.delete',
      section: SECTION,
      context: 'files',
      shortcut: ['Delete'],
      keywords: ['remove', 'rm'],
      aliases: ['remove', 'rm'],
      destructive: true,
      when: hasSelection,
      run: ({ close }) => {
        close();
        const entry = selectedEntry(applyId);
        if (entry) ui.dialog = { kind: 'delete', entry: { ...entry }, step: 1 };
      },
    },
  ];
  return registerCommands(`files.tree.${applyId}`, commands);
}

export function registerEditorCommands(applyId: string, _deviceId: string): () => void {
  const hasTab = () => !!editorOf(applyId).active;
  const commands: PaletteCommand[] = [
    {
      id: 'files.save',
      titleKey: 'files:palette.save',
      section: SECTION,
      context: 'editor',
      shortcut: ['Ctrl', 'S'],
      when: hasTab,
      run: ({ close }) => {
        close();
        saveActive.get(applyId)?.();
      },
    },
    {
      id: 'files.closeTab',
      titleKey: 'files:palette.closeTab',
      section: SECTION,
      context: 'editor',
      when: hasTab,
      run: () => {
        const ed = editorOf(applyId);
        const tab = ed.tabs.find((x) => x.path === ed.active);
        if (!tab) return;
        if (tab.dirty) uiOf(applyId).closing = tab.path;
        else closeTab(applyId, tab.path);
      },
    },
    {
      id: 'files.focusEditor',
      titleKey: 'files:palette.focusEditor',
      section: SECTION,
      context: 'editor',
      when: hasTab,
      run: ({ close }) => {
        close();
        setTimeout(() => focusTargets.get(`editor:${applyId}`)?.(), 0);
      },
    },
  ];
  return registerCommands(`files.editor.${applyId}`, commands);
}
