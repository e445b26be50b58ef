// What the file panes show besides data: the open dialog and the inline rename, per apply. Palette
// commands set these so a command and a key press open the same dialog.
import { proxy } from 'valtio';
import type { FileEntryDto } from '#shared/files.ts';

export type FileDialog =
  | { kind: 'newFile'; folder: string }
  | { kind: 'newFolder'; folder: string }
  | { kind: 'delete'; entry: FileEntryDto; step: 1 | 2 }
  | { kind: 'goto' };

export interface PaneUi {
  dialog: FileDialog | null;
  renaming: string | null;
  /** A tab with unsaved changes the user asked to close: the editor asks whether to discard them. */
  closing: string | null;
}

export const paneUi = proxy<Record<string, PaneUi>>({});

export function uiOf(applyId: string): PaneUi {
  paneUi[applyId] ??= { dialog: null, renaming: null, closing: null };
  return paneUi[applyId];
}

/** The hidden file inputs of mounted tree panes, so a palette command can open the picker. */
export const pickers = new Map<string, HTMLInputElement>();

/** The focus targets of mounted panes (tree, editor), for "focus" commands. */
export const focusTargets = new Map<string, () => void>();

/** Saves the active tab of a mounted editor pane (Ctrl/Cmd+S and the palette). */
export const saveActive = new Map<string, () => void>();
