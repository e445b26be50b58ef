// The files domain of the console, per apply: the tree (folders loaded lazily, what is expanded and
// selected), the editor's tabs, and the transfer list. Live objects stay out of the proxies: the
// CodeMirror documents (with their undo history) and the AbortControllers of transfers live in maps
// beside them, so a pane can unmount and come back without losing an unsaved edit.
import type { EditorState as CmState } from '@codemirror/state';
import { proxy } from 'valtio';
import { type FileEntryDto, type FileReadResponse, parentOf, type TextEncoding } from '#shared/files.ts';
import { ApiError } from '#web/api/http.ts';
import { hasKey, t } from '#web/i18n/i18n.ts';
import { notify } from '#web/state/notices.ts';
import {
  downloadBlob,
  listDir,
  makeDir,
  type Progress,
  readFile,
  removePath,
  renamePath,
  saveBlob,
  uploadFiles,
  writeFile,
} from './api.ts';

/** A request's state; a late answer to a superseded request is dropped by its sequence number. */
export type Load<T> =
  | { status: 'idle' }
  | { status: 'loading'; seq: number; previous?: T }
  | { status: 'ok'; seq: number; data: T }
  | { status: 'failed'; seq: number; error: string; previous?: T };

export function dataOf<T>(l: Load<T> | undefined): T | undefined {
  if (!l) return undefined;
  if (l.status === 'ok') return l.data;
  if (l.status === 'loading' || l.status === 'failed') return l.previous;
  return undefined;
}

/** Words a failure through `files:errors.<key>`, falling back to the server's message. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.key && hasKey(`errors.${err.key}`, 'files')) return t(`files:errors.${err.key}`);
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

let seqCounter = 0;

// ---------------------------------------------------------------- tree

export interface TreeState {
  root: string;
  folders: Record<string, Load<FileEntryDto[]>>;
  expanded: Record<string, boolean>;
  selected: string | null;
  /** Entries by path, for the selection's type and the commands. */
  known: Record<string, FileEntryDto>;
}

export const trees = proxy<Record<string, TreeState>>({});

export function treeOf(applyId: string): TreeState {
  trees[applyId] ??= { root: '/', folders: {}, expanded: { '/': true }, selected: null, known: {} };
  return trees[applyId];
}

/** How often a folder is asked for again while its board is still booting. */
const BOOTING_RETRY_MS = 3000;

/**
 * How many times a listing that got no answer in time is asked again before the tree says so: a board
 * under emulation on a busy host can take longer than a call's 5 s for its first listing after a boot.
 */
const TIMEOUT_RETRIES = 3;

export async function loadFolder(applyId: string, path: string, attempt = 0): Promise<void> {
  const tree = treeOf(applyId);
  const seq = ++seqCounter;
  const previous = dataOf(tree.folders[path]);
  tree.folders[path] = { status: 'loading', seq, previous };
  try {
    const res = await listDir(applyId, path);
    if (tree.folders[path]?.status !== 'loading' || (tree.folders[path] as { seq: number }).seq !== seq)
      return;
    for (const e of res.entries) tree.known[e.path] = e;
    tree.folders[path] = { status: 'ok', seq, data: res.entries };
  } catch (err) {
    if ((tree.folders[path] as { seq?: number } | undefined)?.seq !== seq) return;
    // Listing is safe to ask again: a timed-out one is, quietly (the folder stays loading).
    if (err instanceof ApiError && err.key === 'request.timeout' && attempt < TIMEOUT_RETRIES) {
      void loadFolder(applyId, path, attempt + 1);
      return;
    }
    tree.folders[path] = { status: 'failed', seq, error: errorText(err), previous };
    // A riscv64 board still booting answers at once that it is, and the live refresh (live.ts) only
    // re-lists folders already shown: ask again until its agent answers, unless something else has
    // loaded the folder meanwhile.
    if (err instanceof ApiError && err.key === 'board.booting')
      setTimeout(() => {
        if ((tree.folders[path] as { seq?: number } | undefined)?.seq === seq) void loadFolder(applyId, path);
      }, BOOTING_RETRY_MS);
  }
}

export function setRoot(applyId: string, root: string): void {
  const tree = treeOf(applyId);
  tree.root = root;
  tree.expanded[root] = true;
  tree.selected = root;
  void loadFolder(applyId, root);
}

export function toggleFolder(applyId: string, path: string, open?: boolean): void {
  const tree = treeOf(applyId);
  const next = open ?? !tree.expanded[path];
  tree.expanded[path] = next;
  if (next && (!tree.folders[path] || tree.folders[path].status === 'failed')) void loadFolder(applyId, path);
}

export function select(applyId: string, path: string | null): void {
  treeOf(applyId).selected = path;
}

/** Reloads every expanded folder that was loaded, keeping what is shown until the answers land. */
export async function refreshTree(applyId: string): Promise<void> {
  const tree = treeOf(applyId);
  const open = Object.keys(tree.folders).filter((p) => tree.expanded[p] || p === tree.root);
  await Promise.all(open.map((p) => loadFolder(applyId, p)));
}

/** The folder a new file, folder or upload goes into: the selection if a folder, else its parent. */
export function targetFolder(applyId: string): string {
  const tree = treeOf(applyId);
  const sel = tree.selected;
  if (!sel) return tree.root;
  return tree.known[sel]?.type === 'dir' || sel === tree.root ? sel : parentOf(sel);
}

function reloadParent(applyId: string, path: string): Promise<void> {
  return loadFolder(applyId, parentOf(path));
}

export async function createFolder(applyId: string, folder: string, name: string): Promise<string> {
  const { path } = await makeDir(applyId, joinPath(folder, name));
  treeOf(applyId).expanded[folder] = true;
  await loadFolder(applyId, folder);
  select(applyId, path);
  return path;
}

export async function createFile(applyId: string, folder: string, name: string): Promise<string> {
  const res = await writeFile({ applyId, path: joinPath(folder, name), data: '', expectedHash: null });
  treeOf(applyId).expanded[folder] = true;
  await loadFolder(applyId, folder);
  select(applyId, res.path);
  return res.path;
}

export async function renameEntry(applyId: string, path: string, newName: string): Promise<string> {
  const res = await renamePath(applyId, path, newName);
  const tree = treeOf(applyId);
  // What was under the old path is stale now.
  for (const key of Object.keys(tree.folders))
    if (key === path || key.startsWith(`${path}/`)) delete tree.folders[key];
  await reloadParent(applyId, path);
  if (parentOf(res.path) !== parentOf(path)) await reloadParent(applyId, res.path);
  select(applyId, res.path);
  renameTabs(applyId, path, res.path);
  return res.path;
}

export async function removeEntry(applyId: string, entry: FileEntryDto, confirm?: string): Promise<void> {
  await removePath(applyId, entry.path, { recursive: entry.type === 'dir', confirm });
  const tree = treeOf(applyId);
  for (const key of Object.keys(tree.folders))
    if (key === entry.path || key.startsWith(`${entry.path}/`)) delete tree.folders[key];
  delete tree.known[entry.path];
  if (tree.selected === entry.path) tree.selected = parentOf(entry.path);
  await reloadParent(applyId, entry.path);
}

export function joinPath(folder: string, name: string): string {
  return folder === '/' ? `/${name}` : `${folder}/${name}`;
}

// ---------------------------------------------------------------- editor

export interface Tab {
  path: string;
  name: string;
  kind: 'loading' | FileReadResponse['kind'] | 'failed';
  error?: string;
  encoding: TextEncoding;
  hash: string;
  size: number;
  mtimeMs: number;
  dirty: boolean;
  saving: boolean;
  /** Set when a save found the file changed on the board: the pane asks before overwriting. */
  conflict: boolean;
  /** Bumped each time text arrives from the board, so the editor rebuilds the document. */
  version: number;
}

export interface EditorSet {
  tabs: Tab[];
  active: string | null;
}

export const editors = proxy<Record<string, EditorSet>>({});

/** CodeMirror states per `${applyId}\n${path}`, kept outside the proxy (undo history included). */
export const documents = new Map<string, CmState>();
const docKey = (applyId: string, path: string) => `${applyId}\n${path}`;
export const documentOf = (applyId: string, path: string) => documents.get(docKey(applyId, path));
export const setDocument = (applyId: string, path: string, s: CmState) =>
  documents.set(docKey(applyId, path), s);

/** Text that arrived from the board for a tab, waiting for the editor pane to build its document. */
export const incoming = new Map<string, string>();
export const takeIncoming = (applyId: string, path: string) => {
  const k = docKey(applyId, path);
  const v = incoming.get(k);
  incoming.delete(k);
  return v;
};

export function editorOf(applyId: string): EditorSet {
  editors[applyId] ??= { tabs: [], active: null };
  return editors[applyId];
}

export function tabOf(applyId: string, path: string): Tab | undefined {
  return editorOf(applyId).tabs.find((x) => x.path === path);
}

export async function openFile(
  applyId: string,
  path: string,
  encoding: TextEncoding | 'auto' = 'auto',
): Promise<void> {
  const ed = editorOf(applyId);
  const name = path.slice(path.lastIndexOf('/') + 1);
  let tab = tabOf(applyId, path);
  ed.active = path;
  if (tab && encoding === 'auto' && tab.kind !== 'failed') return;
  if (!tab) {
    ed.tabs.push({
      path,
      name,
      kind: 'loading',
      encoding: 'utf-8',
      hash: '',
      size: 0,
      mtimeMs: 0,
      dirty: false,
      saving: false,
      conflict: false,
      version: 0,
    });
    tab = tabOf(applyId, path) as Tab;
  } else tab.kind = 'loading';
  try {
    const res = await readFile(applyId, path, encoding);
    const live = tabOf(applyId, path);
    if (!live) return;
    Object.assign(live, {
      kind: res.kind,
      size: res.size,
      mtimeMs: res.mtimeMs,
      dirty: false,
      conflict: false,
    });
    if (res.kind !== 'tooLarge') live.hash = res.hash;
    if (res.kind === 'text') {
      live.encoding = res.encoding;
      live.version++;
      documents.delete(docKey(applyId, path));
      incoming.set(docKey(applyId, path), res.content);
    }
  } catch (err) {
    const live = tabOf(applyId, path);
    if (live) Object.assign(live, { kind: 'failed', error: errorText(err) });
  }
}

export function closeTab(applyId: string, path: string): void {
  const ed = editorOf(applyId);
  const i = ed.tabs.findIndex((x) => x.path === path);
  if (i < 0) return;
  ed.tabs.splice(i, 1);
  documents.delete(docKey(applyId, path));
  if (ed.active === path) ed.active = ed.tabs[Math.min(i, ed.tabs.length - 1)]?.path ?? null;
}

function renameTabs(applyId: string, from: string, to: string): void {
  for (const tab of editorOf(applyId).tabs) {
    if (tab.path !== from && !tab.path.startsWith(`${from}/`)) continue;
    const next = to + tab.path.slice(from.length);
    const doc = documentOf(applyId, tab.path);
    if (doc) {
      documents.delete(docKey(applyId, tab.path));
      setDocument(applyId, next, doc);
    }
    if (editorOf(applyId).active === tab.path) editorOf(applyId).active = next;
    tab.path = next;
    tab.name = next.slice(next.lastIndexOf('/') + 1);
  }
}

/**
 * Saves a tab's text. Without `force` the service compares the hash the tab opened with; a changed
 * file marks the tab `conflict` and the pane asks whether to overwrite (then saves with `force`).
 */
export async function saveTab(applyId: string, path: string, text: string, force = false): Promise<boolean> {
  const tab = tabOf(applyId, path);
  if (tab?.kind !== 'text' || tab.saving) return false;
  tab.saving = true;
  try {
    const res = await writeFile({
      applyId,
      path,
      data: text,
      encoding: tab.encoding,
      ...(force ? {} : { expectedHash: tab.hash }),
    });
    Object.assign(tab, {
      hash: res.hash,
      size: res.size,
      mtimeMs: res.mtimeMs,
      dirty: false,
      conflict: false,
    });
    notify('success', t('files:editor.saved', { name: tab.name }));
    void loadFolder(applyId, parentOf(path));
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.key === 'file.changed') tab.conflict = true;
    else notify('error', errorText(err));
    return false;
  } finally {
    tab.saving = false;
  }
}

// ---------------------------------------------------------------- transfers

export interface Transfer {
  id: number;
  kind: 'upload' | 'download';
  name: string;
  /** Board path: the file downloaded, or the folder uploaded into. */
  target: string;
  loaded: number;
  total?: number;
  status: 'running' | 'done' | 'failed' | 'cancelled';
  error?: string;
}

export const transfers = proxy({ items: [] as Transfer[] });
const controllers = new Map<number, AbortController>();
let transferIds = 0;
/** Uploads run at most this many at once; the rest wait their turn. */
const UPLOAD_CONCURRENCY = 3;
let running = 0;
const waiting: (() => void)[] = [];

function startTransfer(kind: Transfer['kind'], name: string, target: string, total?: number): Transfer {
  const id = ++transferIds;
  transfers.items.unshift({ id, kind, name, target, loaded: 0, total, status: 'running' });
  controllers.set(id, new AbortController());
  return transfers.items.find((x) => x.id === id) as Transfer;
}

function finish(item: Transfer, status: Transfer['status'], error?: string): void {
  const live = transfers.items.find((x) => x.id === item.id);
  if (live) Object.assign(live, { status, error });
  controllers.delete(item.id);
}

function progress(item: Transfer): (p: Progress) => void {
  return (p) => {
    const live = transfers.items.find((x) => x.id === item.id);
    if (!live) return;
    live.loaded = p.loaded;
    if (p.total) live.total = p.total;
  };
}

const isCancel = (err: unknown) =>
  (err as { name?: string })?.name === 'CanceledError' || (err as { code?: string })?.code === 'ERR_CANCELED';

export function cancelTransfer(id: number): void {
  controllers.get(id)?.abort();
}

export function clearFinished(): void {
  transfers.items = transfers.items.filter((x) => x.status === 'running');
}

async function slot(): Promise<() => void> {
  if (running >= UPLOAD_CONCURRENCY) await new Promise<void>((res) => waiting.push(res));
  running++;
  return () => {
    running--;
    waiting.shift()?.();
  };
}

/** One request per file, so each has its own progress bar and cancel button. */
export async function uploadAll(applyId: string, folder: string, files: readonly File[]): Promise<void> {
  await Promise.all(
    files.map(async (file) => {
      const item = startTransfer('upload', file.name, folder, file.size);
      const release = await slot();
      const ctl = controllers.get(item.id);
      try {
        if (!ctl || ctl.signal.aborted)
          throw Object.assign(new Error('cancelled'), { name: 'CanceledError' });
        await uploadFiles(applyId, folder, [file], progress(item), ctl.signal);
        finish(item, 'done');
        void loadFolder(applyId, folder);
      } catch (err) {
        if (isCancel(err)) finish(item, 'cancelled');
        else finish(item, 'failed', errorText(err));
      } finally {
        release();
      }
    }),
  );
}

export async function download(
  deviceId: string,
  entry: Pick<FileEntryDto, 'path' | 'type' | 'size'>,
): Promise<void> {
  const base = entry.path === '/' ? 'root' : entry.path.slice(entry.path.lastIndexOf('/') + 1);
  const name = entry.type === 'dir' ? `${base}.tar` : base;
  const item = startTransfer('download', name, entry.path, entry.type === 'file' ? entry.size : undefined);
  const ctl = controllers.get(item.id) as AbortController;
  try {
    const blob = await downloadBlob(deviceId, entry.path, progress(item), ctl.signal);
    finish(item, 'done');
    saveBlob(blob, name);
  } catch (err) {
    if (isCancel(err)) finish(item, 'cancelled');
    else finish(item, 'failed', errorText(err));
  }
}
