// A reload keeps the file pane where it was (issue 38): the tree's folder, its open folders, the open
// files and the one in front, per apply, in this browser's storage (a session's place, not a setting).
import { subscribe } from 'valtio';
import { editorOf, openFile, setRoot, toggleFolder, treeOf } from './state.ts';

// Two entries: the tree's, saved by the tree pane, and the tabs', saved by the editor pane once it has
// restored them (the editor loads later than the tree: one entry would lose the tabs to the tree's
// first save).
const KEY = (applyId: string, part: 'tree' | 'tabs') => `bianbu.files.${applyId}.${part}`;
/** At most this many open files come back (each is read from the board again). */
export const MAX_RESTORED_TABS = 8;

export interface SavedPlace {
  root: string;
  expanded: string[];
  tabs: string[];
  active: string | null;
}

function read(applyId: string, part: 'tree' | 'tabs'): Record<string, unknown> | null {
  try {
    const raw = localStorage.getItem(KEY(applyId, part));
    const v: unknown = raw ? JSON.parse(raw) : null;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const paths = (x: unknown) =>
  Array.isArray(x) ? x.filter((p): p is string => typeof p === 'string' && p.startsWith('/')) : [];

export function readPlace(applyId: string): SavedPlace | null {
  const tree = read(applyId, 'tree');
  if (!tree || typeof tree.root !== 'string' || !tree.root.startsWith('/')) return null;
  const tabs = read(applyId, 'tabs');
  return {
    root: tree.root,
    expanded: paths(tree.expanded).slice(0, 50),
    tabs: paths(tabs?.tabs).slice(0, MAX_RESTORED_TABS),
    active: typeof tabs?.active === 'string' && tabs.active.startsWith('/') ? tabs.active : null,
  };
}

function write(applyId: string, part: 'tree' | 'tabs', value: unknown): void {
  try {
    localStorage.setItem(KEY(applyId, part), JSON.stringify(value));
  } catch {
    // Storage full or denied: a reload starts from the default folder.
  }
}

function saveTree(applyId: string): void {
  const tree = treeOf(applyId);
  write(applyId, 'tree', {
    root: tree.root,
    expanded: Object.keys(tree.expanded).filter((p) => tree.expanded[p] && p !== tree.root),
  });
}

function saveTabs(applyId: string): void {
  const ed = editorOf(applyId);
  write(applyId, 'tabs', {
    tabs: ed.tabs.filter((x) => x.kind !== 'failed').map((x) => x.path),
    active: ed.active,
  });
}

/** The tree's saved folder (and its open folders), when the tree has none of its own yet. */
export function restoreTree(applyId: string): boolean {
  const place = readPlace(applyId);
  if (!place) return false;
  setRoot(applyId, place.root);
  for (const p of place.expanded) if (p.startsWith(place.root)) toggleFolder(applyId, p, true);
  return true;
}

/** Opens the saved files again (the one in front last, so it is in front), when none are open. */
export function restoreTabs(applyId: string): void {
  const tabs = read(applyId, 'tabs');
  if (!tabs || editorOf(applyId).tabs.length) return;
  const active = typeof tabs.active === 'string' && tabs.active.startsWith('/') ? tabs.active : null;
  const order = paths(tabs.tabs)
    .slice(0, MAX_RESTORED_TABS)
    .filter((p) => p !== active);
  if (active) order.push(active);
  for (const p of order) void openFile(applyId, p);
}

function keep(target: object, save: () => void): () => void {
  let timer = 0;
  const off = subscribe(target, () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(save, 300);
  });
  return () => {
    window.clearTimeout(timer);
    off();
  };
}

/** Saves the tree's place whenever it changes, a moment after the last change. */
export function keepTree(applyId: string): () => void {
  return keep(treeOf(applyId), () => saveTree(applyId));
}

/** Saves the open files whenever they change (call after restoreTabs). */
export function keepTabs(applyId: string): () => void {
  return keep(editorOf(applyId), () => saveTabs(applyId));
}
