// The file tree's live refresh: which folders are watched, when a listing counts as changed, that an
// unchanged listing leaves the store (and so the rendered tree) untouched, and the timing of rounds.
import { proxy, snapshot } from 'valtio';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FileEntryDto } from '#shared/files.ts';
import { refreshWatched, sameListing, startTreeWatch, watchedFolders } from '#web/files/live.ts';
import type { TreeState } from '#web/files/state.ts';

const entry = (
  path: string,
  type: FileEntryDto['type'] = 'file',
  over: Partial<FileEntryDto> = {},
): FileEntryDto => ({
  name: path.slice(path.lastIndexOf('/') + 1),
  path,
  type,
  size: type === 'dir' ? 4096 : 10,
  mtimeMs: 1_700_000_000_000,
  mode: type === 'dir' ? 0o40755 : 0o100644,
  ...over,
});

function makeTree(listings: Record<string, FileEntryDto[]>, expanded: string[]): TreeState {
  let seq = 0;
  const folders: TreeState['folders'] = {};
  const known: TreeState['known'] = {};
  for (const [p, data] of Object.entries(listings)) {
    folders[p] = { status: 'ok', seq: ++seq, data };
    for (const e of data) known[e.path] = e;
  }
  return proxy<TreeState>({
    root: '/root',
    folders,
    expanded: Object.fromEntries(['/root', ...expanded].map((p) => [p, true])),
    selected: null,
    known,
  });
}

const shownNames = (tree: TreeState, folder: string) => {
  const l = tree.folders[folder];
  return l?.status === 'ok' ? l.data.map((e) => e.name) : null;
};

describe('sameListing', () => {
  const base = [entry('/r/a', 'dir'), entry('/r/b.txt')];
  it.each([
    ['an identical listing', true, [entry('/r/a', 'dir'), entry('/r/b.txt')]],
    ['an added file', false, [...base, entry('/r/c.txt')]],
    ['a removed file', false, [base[0]]],
    ['a file that grew', false, [base[0], entry('/r/b.txt', 'file', { size: 11 })]],
    ['a file touched', false, [base[0], entry('/r/b.txt', 'file', { mtimeMs: 1_700_000_001_000 })]],
    ['a chmod', false, [base[0], entry('/r/b.txt', 'file', { mode: 0o100755 })]],
    ['a file replaced by a link', false, [base[0], entry('/r/b.txt', 'symlink')]],
    ['the same entries in another order', false, [base[1], base[0]]],
  ])('counts %s as the same listing: %s', (_name, same, next) => {
    expect(sameListing(base, next)).toBe(same);
  });

  it('counts a folder never shown as changed', () => {
    expect(sameListing(undefined, [])).toBe(false);
  });
});

describe('watchedFolders', () => {
  it('watches the root and the expanded folders reachable from it, and nothing collapsed or unloaded', () => {
    const tree = makeTree(
      {
        '/root': [
          entry('/root/a', 'dir'),
          entry('/root/b', 'dir'),
          entry('/root/link', 'symlink'),
          entry('/root/f.txt'),
        ],
        '/root/a': [entry('/root/a/deep', 'dir')],
        '/root/a/deep': [],
        '/root/b': [entry('/root/b/inner', 'dir')],
        '/root/b/inner': [],
        '/root/link': [],
      },
      ['/root/a', '/root/a/deep', '/root/b/inner', '/root/link', '/root/never-loaded'],
    );
    // /root/b is collapsed, so /root/b/inner is off screen though expanded.
    expect(watchedFolders(tree).sort()).toEqual(['/root', '/root/a', '/root/a/deep', '/root/link']);
  });

  it('watches nothing until the root has loaded', () => {
    const tree = makeTree({}, []);
    tree.folders['/root'] = { status: 'loading', seq: 1 };
    expect(watchedFolders(tree)).toEqual([]);
  });
});

describe('refreshWatched', () => {
  it('leaves the store untouched when no listing changed, so nothing re-renders', async () => {
    const tree = makeTree({ '/root': [entry('/root/a.txt')] }, []);
    const before = snapshot(tree);
    const list = vi.fn(async (p: string) => [entry(`${p}/a.txt`)]);
    expect(await refreshWatched(tree, list)).toEqual([]);
    expect(list).toHaveBeenCalledWith('/root');
    expect(snapshot(tree)).toBe(before);
  });

  it('shows a file a shell created and forgets one it removed', async () => {
    const tree = makeTree(
      { '/root': [entry('/root/sub', 'dir'), entry('/root/old.txt')], '/root/sub': [entry('/root/sub/x')] },
      ['/root/sub'],
    );
    const board: Record<string, FileEntryDto[]> = {
      '/root': [entry('/root/sub', 'dir'), entry('/root/from-shell.txt')],
      '/root/sub': [entry('/root/sub/x')],
    };
    expect(await refreshWatched(tree, async (p) => board[p])).toEqual(['/root']);
    expect(shownNames(tree, '/root')).toEqual(['sub', 'from-shell.txt']);
    expect(tree.known['/root/from-shell.txt']).toBeDefined();
    expect(tree.known['/root/old.txt']).toBeUndefined();
    expect(tree.known['/root/sub/x']).toBeDefined();
  });

  it('keeps what is shown when a listing fails', async () => {
    const tree = makeTree({ '/root': [entry('/root/a.txt')] }, []);
    const before = snapshot(tree);
    expect(await refreshWatched(tree, async () => Promise.reject(new Error('board offline')))).toEqual([]);
    expect(snapshot(tree)).toBe(before);
  });

  it('lets an explicit load that started meanwhile win over its older answer', async () => {
    const tree = makeTree({ '/root': [entry('/root/a.txt')] }, []);
    let answer: (v: FileEntryDto[]) => void = () => {};
    const pending = refreshWatched(tree, () => new Promise((r) => (answer = r)));
    // The user pressed refresh (or saved) while the round was in flight.
    tree.folders['/root'] = { status: 'ok', seq: 99, data: [entry('/root/a.txt'), entry('/root/saved.txt')] };
    answer([entry('/root/a.txt'), entry('/root/stale.txt')]);
    expect(await pending).toEqual([]);
    expect(shownNames(tree, '/root')).toEqual(['a.txt', 'saved.txt']);
  });
});

describe('startTreeWatch', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('lists every interval while active, pauses while inactive, and stops for good', async () => {
    const tree = makeTree({ '/root': [] }, []);
    let active = true;
    const list = vi.fn(async () => [] as FileEntryDto[]);
    const watch = startTreeWatch({ tree, list, active: () => active, intervalMs: 5000 });
    await vi.advanceTimersByTimeAsync(4999);
    expect(list).toHaveBeenCalledTimes(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(list).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(list).toHaveBeenCalledTimes(3);
    active = false;
    await vi.advanceTimersByTimeAsync(30_000);
    expect(list).toHaveBeenCalledTimes(3);
    active = true;
    await vi.advanceTimersByTimeAsync(5000);
    expect(list).toHaveBeenCalledTimes(4);
    watch.stop();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(list).toHaveBeenCalledTimes(4);
  });

  it('refreshes at once when kicked (the tab became visible) and then keeps the period', async () => {
    const tree = makeTree({ '/root': [] }, []);
    const list = vi.fn(async () => [] as FileEntryDto[]);
    const watch = startTreeWatch({ tree, list, active: () => true, intervalMs: 5000 });
    await vi.advanceTimersByTimeAsync(2000);
    watch.kick();
    await vi.advanceTimersByTimeAsync(0);
    expect(list).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(4999);
    expect(list).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(list).toHaveBeenCalledTimes(2);
    watch.stop();
  });

  it('never overlaps rounds when the board answers slower than the period', async () => {
    const tree = makeTree({ '/root': [] }, []);
    let inFlight = 0;
    let most = 0;
    const list = vi.fn(async () => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 12_000));
      inFlight--;
      return [] as FileEntryDto[];
    });
    const watch = startTreeWatch({ tree, list, active: () => true, intervalMs: 5000 });
    await vi.advanceTimersByTimeAsync(5000);
    watch.kick();
    await vi.advanceTimersByTimeAsync(40_000);
    expect(most).toBe(1);
    // Rounds start at 5 s, 22 s and 39 s (12 s listing, then the 5 s pause), not every 5 s.
    expect(list).toHaveBeenCalledTimes(3);
    watch.stop();
  });
});
