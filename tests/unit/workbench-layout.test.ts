import { describe, expect, it } from 'vitest';
import { type Box, nextPane } from '#web/workbench/focus.ts';
import {
  addTab,
  defaultLayout,
  parseLayout,
  rememberClosed,
  removeSlot,
  renameTab,
  reopenLastClosed,
  slotApply,
  splitActive,
  workbench,
} from '#web/workbench/store.ts';

const box = (left: number, top: number, right: number, bottom: number): Box => ({ left, top, right, bottom });

// files | editor / (shellA | shellB) | load
const panes = [
  { id: 'files', box: box(0, 0, 200, 800) },
  { id: 'editor', box: box(201, 0, 900, 300) },
  { id: 'shellA', box: box(201, 301, 550, 800) },
  { id: 'shellB', box: box(551, 301, 900, 800) },
  { id: 'load', box: box(901, 0, 1200, 800) },
];

describe('focus movement between panes', () => {
  it.each([
    ['shellB', 'left', 'shellA'],
    ['shellA', 'left', 'files'],
    ['shellA', 'up', 'editor'],
    ['editor', 'down', 'shellA'],
    ['shellB', 'right', 'load'],
    ['editor', 'right', 'load'],
    ['load', 'left', 'shellB'],
    ['files', 'left', null],
    ['editor', 'up', null],
  ] as const)('from %s going %s reaches %s', (from, dir, to) => {
    const cur = panes.find((p) => p.id === from);
    if (!cur) throw new Error(from);
    expect(
      nextPane(
        cur.box,
        panes.filter((p) => p !== cur),
        dir,
      ),
    ).toBe(to);
  });
});

describe('saved workbench layout', () => {
  it('falls back to the default for garbage, a wrong version or bad fields', () => {
    expect(parseLayout('not json')).toEqual(defaultLayout());
    expect(parseLayout(JSON.stringify({ version: 99, show: { files: false } }))).toEqual(defaultLayout());
    const parsed = parseLayout(
      JSON.stringify({
        version: 1,
        show: { files: false, editor: 'yes' },
        groups: { 'main:files+center': { files: 20, center: 80, bad: 400 } },
        applyId: 'a1',
        tabs: [
          {
            id: 't1',
            slots: [
              { id: 's1', kind: 'login', clientId: 'c1' },
              { id: 's2', kind: 'bogus' },
            ],
            activeSlot: 'zz',
          },
          { id: 't2', slots: [] },
        ],
        activeTab: 'missing',
      }),
    );
    expect(parsed.show).toEqual({ files: false, editor: true, load: true });
    expect(parsed.groups['main:files+center']).toEqual({ files: 20, center: 80 });
    expect(parsed.tabs).toEqual([
      { id: 't1', slots: [{ id: 's1', kind: 'login', clientId: 'c1' }], activeSlot: 's1' },
    ]);
    expect(parsed.activeTab).toBe('t1');
  });

  it('splits beside the active shell and drops a tab when its last shell closes', () => {
    workbench.layout = defaultLayout();
    const first = addTab('login');
    const second = splitActive('login');
    expect(workbench.layout.tabs).toHaveLength(1);
    expect(workbench.layout.tabs[0].slots.map((s) => s.id)).toEqual([first.id, second.id]);
    expect(workbench.layout.tabs[0].activeSlot).toBe(second.id);
    removeSlot(second.id);
    expect(workbench.layout.tabs[0].activeSlot).toBe(first.id);
    removeSlot(first.id);
    expect(workbench.layout.tabs).toHaveLength(0);
    expect(workbench.layout.activeTab).toBeNull();
  });
});

describe('shell tab names', () => {
  it('names a tab, refuses a bad name, and an empty one gives back the automatic name', () => {
    workbench.layout = defaultLayout();
    const slot = addTab('login');
    const tab = workbench.layout.tabs.find((t) => t.slots[0].id === slot.id)!;
    renameTab(tab.id, '  build logs ');
    expect(tab.title).toBe('build logs');
    renameTab(tab.id, 'x'.repeat(41));
    renameTab(tab.id, 'evil\u202Eexe');
    expect(tab.title).toBe('build logs');
    renameTab(tab.id, '');
    expect(tab.title).toBeUndefined();
  });

  it('keeps a saved name through a reload, and drops a malformed one', () => {
    const saved = (title: unknown) =>
      JSON.stringify({
        version: 1,
        show: {},
        groups: {},
        applyId: 'a',
        tabs: [{ id: 't', slots: [{ id: 's', kind: 'login', clientId: null }], activeSlot: 's', title }],
        activeTab: 't',
      });
    expect(parseLayout(saved('serial debug')).tabs[0].title).toBe('serial debug');
    expect(parseLayout(saved('a\u0007b')).tabs[0].title).toBeUndefined();
    expect(parseLayout(saved(42)).tabs[0].title).toBeUndefined();
    expect(parseLayout(saved('y'.repeat(80))).tabs[0].title).toBeUndefined();
  });
});

describe('shells of other boards', () => {
  const other = { applyId: 'apply-b', deviceId: 'dev-b', serverName: 'board b' };

  it('opens on the given board, splits on the board of the shell it splits, and keeps the board closed', () => {
    workbench.layout = defaultLayout();
    const own = addTab('login');
    const foreign = addTab('login', other);
    expect(slotApply(own, 'apply-a')).toBe('apply-a');
    expect(slotApply(foreign, 'apply-a')).toBe('apply-b');
    const split = splitActive('login');
    expect(split.board).toEqual(other);
    expect(split.board).not.toBe(foreign.board);
    // Closed and reopened, a shell of another board comes back on that board.
    rememberClosed([foreign.id, split.id]);
    removeSlot(foreign.id);
    removeSlot(split.id);
    const back = reopenLastClosed();
    expect(back?.board).toEqual(other);
    expect(workbench.layout.tabs.flatMap((t) => t.slots).filter((s) => s.board)).toHaveLength(2);
  });

  it('keeps the board of a saved shell through a reload, and drops a malformed one', () => {
    const saved = (board: unknown) =>
      JSON.stringify({
        version: 1,
        show: {},
        groups: {},
        applyId: 'a',
        tabs: [{ id: 't', slots: [{ id: 's', kind: 'login', clientId: 'c', board }], activeSlot: 's' }],
        activeTab: 't',
      });
    expect(parseLayout(saved(other)).tabs[0].slots[0].board).toEqual(other);
    for (const bad of [
      null,
      'apply-b',
      { ...other, applyId: '' },
      { ...other, deviceId: 7 },
      { applyId: 'x' },
    ]) {
      expect(parseLayout(saved(bad)).tabs[0].slots[0].board).toBeUndefined();
    }
    expect(parseLayout(saved({ ...other, applyId: 'x'.repeat(65) })).tabs[0].slots[0].board).toBeUndefined();
  });
});
