// Palette commands of the file panes. Every file action of the tree and the editor is here too, so
// it can be run from the keyboard without the pointer; commands that need a name open the same
// dialogs the pane's buttons open. Registered while a pane is mounted.
import { parentOf } from '#shared/files.ts';
import { type PaletteCommand, registerCommands } from '#web/palette/registry.ts';
import { closeTab, download, editorOf, refreshTree, setRoot, targetFolder, treeOf } from './state.ts';
import { focusTargets, pickers, saveActive, uiOf } from './ui.ts';

const SECTION = 'files:palette.section';

function selectedEntry(applyId: string) {
  const tree = treeOf(applyId);
  return tree.selected ? tree.known[tree.selected] : undefined;
}

export function registerTreeCommands(applyId: string, deviceId: string): () => void {
  const ui = uiOf(applyId);
  const hasSelection = () => !!selectedEntry(applyId);
  const commands: PaletteCommand[] = [
    {
      id: 'files.focusTree',
      titleKey: 'files:palette.focusTree',
      section: SECTION,
      keywords: ['files', 'tree', 'explorer'],
      run: ({ close }) => {
        close();
        setTimeout(() => focusTargets.get(`tree:${applyId}`)?.(), 0);
      },
    },
    {
      id: 'files.refresh',
      titleKey: 'files:palette.refresh',
      section: SECTION,
      icon: 'refresh',
      keywords: ['reload', 'files'],
      run: () => void refreshTree(applyId),
    },
    {
      id: 'files.goto',
      titleKey: 'files:palette.goto',
      section: SECTION,
      keywords: ['cd', 'open folder', 'path'],
      run: ({ close }) => {
        close();
        ui.dialog = { kind: 'goto' };
      },
    },
    {
      id: 'files.up',
      titleKey: 'files:palette.up',
      section: SECTION,
      when: () => treeOf(applyId).root !== '/',
      run: () => setRoot(applyId, parentOf(treeOf(applyId).root)),
    },
    {
      id: 'files.newFile',
      titleKey: 'files:palette.newFile',
      section: SECTION,
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
      shortcut: ['F2'],
      keywords: ['move', 'mv'],
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
      shortcut: ['Delete'],
      keywords: ['remove', 'rm'],
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
      when: hasTab,
      run: ({ close }) => {
        close();
        setTimeout(() => focusTargets.get(`editor:${applyId}`)?.(), 0);
      },
    },
  ];
  return registerCommands(`files.editor.${applyId}`, commands);
}
