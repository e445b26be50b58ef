// "Open file…" and the tree's type-ahead (issue 38): the board walk is bounded and skips the kernel's
// folders, typed text ranks names before paths, and letters typed quickly make a word.
import { describe, expect, it } from 'vitest';
import type { FileEntryDto } from '#shared/files.ts';
import { fileScore, matchFiles, WALK, walkBoard } from '#web/files/find.ts';
import { typeAheadMatch } from '#web/files/type-ahead.ts';
import { nextPane } from '#web/workbench/focus.ts';

const entry = (path: string, type: FileEntryDto['type'] = 'file'): FileEntryDto => ({
  path,
  name: path.slice(path.lastIndexOf('/') + 1),
  type,
  size: 1,
  mtimeMs: 0,
  mode: 0o644,
});

describe('the board walk', () => {
  it('lists home first, skips /proc and /sys, and stops at its bounds', async () => {
    const listed: string[] = [];
    // Every folder holds 5 folders and a file: an endless tree.
    const list = async (path: string) => {
      listed.push(path);
      const base = path === '/' ? '' : path;
      return {
        path,
        entries: [
          ...['proc', 'sys', 'a', 'b', 'c'].map((n) => entry(`${base}/${n}`, 'dir')),
          entry(`${base}/notes.txt`),
        ],
      };
    };
    const all = await walkBoard(list, '/', ['/root']);
    expect(listed[0]).toBe('/root');
    expect(listed.length).toBeLessThanOrEqual(WALK.folders);
    expect(listed).not.toContain('/proc');
    expect(listed.some((p) => p.includes('/sys'))).toBe(false);
    expect(all.length).toBeGreaterThan(0);
    expect(all.length).toBeLessThanOrEqual(WALK.entries);
  });

  it('goes on past a folder that cannot be listed', async () => {
    const all = await walkBoard(async (path) => {
      if (path === '/bad') throw new Error('denied');
      return path === '/'
        ? { path, entries: [entry('/bad', 'dir'), entry('/ok', 'dir')] }
        : { path, entries: [entry(`${path}/x.c`)] };
    }, '/');
    expect(all.map((e) => e.path)).toContain('/ok/x.c');
  });
});

describe('matching typed text', () => {
  const files = [
    entry('/root/kbd.txt'),
    entry('/root/src/main.c'),
    entry('/etc/kbd/config'),
    entry('/root/notes/kbd-old.txt'),
    entry('/root/src', 'dir'),
  ];

  it('puts the name typed whole first, then names starting with it, then paths', () => {
    expect(matchFiles('kbd.txt', files, 'files')[0].path).toBe('/root/kbd.txt');
    expect(matchFiles('kbd', files, 'files')[0].path).toBe('/root/kbd.txt');
    expect(matchFiles('main', files, 'files')[0].path).toBe('/root/src/main.c');
    expect(matchFiles('src/ma', files, 'files')[0].path).toBe('/root/src/main.c');
    expect(matchFiles('mnc', files, 'files')[0].path).toBe('/root/src/main.c');
  });

  it('offers folders only when asked for any entry', () => {
    expect(matchFiles('src', files, 'files').some((e) => e.type === 'dir')).toBe(false);
    expect(matchFiles('src', files, 'any').some((e) => e.type === 'dir')).toBe(true);
    expect(fileScore('zzz', files[0])).toBe(0);
  });
});

describe('type-ahead in the tree', () => {
  const names = ['bin', 'kbd.txt', 'kernel', 'keys', 'notes'];

  it('makes a word of letters typed quickly', () => {
    expect(typeAheadMatch(names, -1, 'k')).toBe(1);
    expect(typeAheadMatch(names, 1, 'ke')).toBe(2);
    expect(typeAheadMatch(names, 2, 'key')).toBe(3);
    expect(typeAheadMatch(names, 0, 'kbd')).toBe(1);
  });

  it('cycles with one letter typed again, and keeps the selection while it still matches', () => {
    expect(typeAheadMatch(names, 1, 'k')).toBe(2);
    expect(typeAheadMatch(names, 3, 'k')).toBe(1);
    expect(typeAheadMatch(names, 2, 'kk')).toBe(3);
    expect(typeAheadMatch(names, 2, 'ker')).toBe(2);
    expect(typeAheadMatch(names, 0, 'zz')).toBe(-1);
  });
});

describe('pane moves', () => {
  const tree = { id: 'files', box: { left: 0, top: 0, right: 200, bottom: 900 } };
  const editor = { id: 'editor', box: { left: 200, top: 0, right: 1000, bottom: 340 } };
  const shells = { id: 'shells', box: { left: 200, top: 340, right: 1000, bottom: 900 } };

  it('goes to the pane last used among those beside it at the same distance', () => {
    expect(nextPane(tree.box, [editor, shells], 'right')).toBe('shells');
    const used: Record<string, number> = { editor: 2, shells: 1 };
    expect(nextPane(tree.box, [editor, shells], 'right', (id) => used[id] ?? 0)).toBe('editor');
  });

  it('does not prefer a recent pane farther away', () => {
    const far = { id: 'far', box: { left: 1300, top: 0, right: 1400, bottom: 900 } };
    expect(
      nextPane(
        editor.box,
        [far, { id: 'near', box: { left: 1000, top: 0, right: 1200, bottom: 900 } }],
        'right',
        (id) => (id === 'far' ? 9 : 0),
      ),
    ).toBe('near');
  });
});
