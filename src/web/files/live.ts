// Live refresh of the file tree: files a shell creates or removes show up without pressing refresh.
// Every few seconds, while the pane is on screen and the browser tab visible, the folders the user
// sees (the root and the expanded folders reachable from it) are listed again. A listing equal to the
// one shown leaves the store untouched, so nothing re-renders; a folder that is being loaded by an
// explicit action is left to that load. Pure over the tree state and a `list` function, so it is
// tested without a browser.
import type { FileEntryDto } from '#shared/files.ts';
import type { Load, TreeState } from './state.ts';

export const TREE_REFRESH_MS = 5000;

/** True when two listings show the same entries in the same order, with the same type, size, time and mode. */
export function sameListing(a: readonly FileEntryDto[] | undefined, b: readonly FileEntryDto[]): boolean {
  if (!a || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (
      x.path !== y.path ||
      x.name !== y.name ||
      x.type !== y.type ||
      x.size !== y.size ||
      x.mtimeMs !== y.mtimeMs ||
      x.mode !== y.mode
    )
      return false;
  }
  return true;
}

const shown = (l: Load<FileEntryDto[]> | undefined) => (l?.status === 'ok' ? l.data : undefined);

/** The folders on screen: the root, then every expanded folder reachable through shown listings. */
export function watchedFolders(tree: Pick<TreeState, 'root' | 'folders' | 'expanded'>): string[] {
  const out: string[] = [];
  const visit = (folder: string) => {
    const entries = shown(tree.folders[folder]);
    if (!entries) return;
    out.push(folder);
    for (const e of entries)
      if ((e.type === 'dir' || e.type === 'symlink') && tree.expanded[e.path]) visit(e.path);
  };
  visit(tree.root);
  return out;
}

export type Lister = (path: string) => Promise<FileEntryDto[]>;

/**
 * Lists each watched folder once and replaces a listing only when it changed. Answers the folders
 * whose listing changed. A failed listing keeps what is shown: the next round or a manual refresh
 * tells the user.
 */
export async function refreshWatched(tree: TreeState, list: Lister): Promise<string[]> {
  const changed: string[] = [];
  await Promise.all(
    watchedFolders(tree).map(async (folder) => {
      const before = tree.folders[folder];
      let entries: FileEntryDto[];
      try {
        entries = await list(folder);
      } catch {
        return;
      }
      const now = tree.folders[folder];
      // An explicit load (or removal) happened meanwhile: its answer wins over this older one.
      if (now !== before || now?.status !== 'ok') return;
      if (sameListing(now.data, entries)) return;
      const names = new Set(entries.map((e) => e.path));
      for (const e of now.data) if (!names.has(e.path)) delete tree.known[e.path];
      for (const e of entries) tree.known[e.path] = e;
      tree.folders[folder] = { status: 'ok', seq: now.seq, data: entries };
      changed.push(folder);
    }),
  );
  return changed;
}

export interface TreeWatch {
  /** Refreshes now (the tab became visible again), then keeps the period. */
  kick(): void;
  stop(): void;
}

/**
 * Refreshes the watched folders every `intervalMs` while `active()` holds. Rounds never overlap: a
 * slow board delays the next round rather than piling requests up.
 */
export function startTreeWatch(opts: {
  tree: TreeState;
  list: Lister;
  active: () => boolean;
  intervalMs?: number;
}): TreeWatch {
  const interval = opts.intervalMs ?? TREE_REFRESH_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(round, interval);
  };
  const round = async () => {
    if (stopped || running) return;
    if (!opts.active()) return schedule();
    running = true;
    try {
      await refreshWatched(opts.tree, opts.list);
    } finally {
      running = false;
      schedule();
    }
  };
  schedule();
  return {
    kick: () => {
      if (stopped || running) return;
      clearTimeout(timer);
      void round();
    },
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
