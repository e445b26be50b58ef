import { describe, expect, it } from 'vitest';
import {
  type ClosedShell,
  closedEntry,
  defaultLayout,
  reopenInto,
  type ShellTab,
  type WorkbenchLayout,
} from '#web/workbench/store.ts';

const tab = (id: string, kinds: ('login' | 'serial')[], title?: string): ShellTab => {
  const slots = kinds.map((kind, i) => ({ id: `${id}-s${i}`, kind, clientId: `c-${id}-${i}` }));
  return { id, slots, activeSlot: slots[0].id, ...(title ? { title } : {}) };
};
const layoutOf = (...tabs: ShellTab[]): WorkbenchLayout => ({
  ...defaultLayout(),
  tabs,
  activeTab: tabs[0]?.id ?? null,
});
const shape = (l: WorkbenchLayout) =>
  l.tabs.map((t) => ({ title: t.title, kinds: t.slots.map((s) => s.kind) }));

describe('remembering a closed shell', () => {
  it.each<[string, WorkbenchLayout, string[], ClosedShell | null]>([
    [
      'a whole named tab',
      layoutOf(tab('a', ['login']), tab('b', ['serial'], 'logs')),
      ['b-s0'],
      { tabId: 'b', tabIndex: 1, title: 'logs', slots: [{ kind: 'serial', index: 0 }] },
    ],
    [
      'one shell of a named split (the name stays with the tab)',
      layoutOf(tab('a', ['login', 'serial'], 'pair')),
      ['a-s1'],
      { tabId: 'a', tabIndex: 0, slots: [{ kind: 'serial', index: 1 }] },
    ],
    [
      'every shell of a split tab',
      layoutOf(tab('a', ['login']), tab('b', ['login', 'serial'])),
      ['b-s0', 'b-s1'],
      {
        tabId: 'b',
        tabIndex: 1,
        slots: [
          { kind: 'login', index: 0 },
          { kind: 'serial', index: 1 },
        ],
      },
    ],
    ['a slot that is not there', layoutOf(tab('a', ['login'])), ['nope'], null],
  ])('%s', (_n, layout, ids, want) => {
    expect(closedEntry(layout, ids)).toEqual(want);
  });
});

describe('reopening a closed shell', () => {
  it('puts a closed tab back at its position with its name and kind, as the active tab', () => {
    const l = layoutOf(tab('a', ['login']), tab('c', ['login']));
    const made = reopenInto(l, {
      tabId: 'b',
      tabIndex: 1,
      title: 'logs',
      slots: [{ kind: 'serial', index: 0 }],
    });
    expect(shape(l)).toEqual([
      { title: undefined, kinds: ['login'] },
      { title: 'logs', kinds: ['serial'] },
      { title: undefined, kinds: ['login'] },
    ]);
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ kind: 'serial', clientId: null });
    expect(l.activeTab).toBe(l.tabs[1].id);
    expect(l.tabs[1].activeSlot).toBe(made[0].id);
  });

  it('puts a closed shell back into its split when that tab is still open', () => {
    const l = layoutOf(tab('a', ['login', 'login']));
    l.groups['split-a'] = { 'a-s0': 50, 'a-s1': 50 };
    const [slot] = reopenInto(l, { tabId: 'a', tabIndex: 0, slots: [{ kind: 'serial', index: 1 }] });
    expect(l.tabs[0].slots.map((s) => s.id)).toEqual(['a-s0', slot.id, 'a-s1']);
    expect(l.tabs[0].activeSlot).toBe(slot.id);
    expect(l.groups['split-a']).toBeUndefined();
  });

  it('keeps a position past the end at the end, and works on an empty workbench', () => {
    const l = layoutOf();
    reopenInto(l, { tabId: 'x', tabIndex: 5, slots: [{ kind: 'login', index: 0 }] });
    expect(shape(l)).toEqual([{ title: undefined, kinds: ['login'] }]);
    expect(l.activeTab).toBe(l.tabs[0].id);
  });

  it('gives the new shells new ids (a closed shell’s process cannot come back)', () => {
    const l = layoutOf(tab('a', ['login']));
    const entry = closedEntry(l, ['a-s0']) as ClosedShell;
    l.tabs = [];
    const [slot] = reopenInto(l, entry);
    expect(slot.id).not.toBe('a-s0');
    expect(slot.clientId).toBeNull();
  });
});
