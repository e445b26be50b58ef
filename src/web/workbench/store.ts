// The workbench layout: which panes are shown, the sizes of every resizable group, the shell tabs
// (each tab one shell or several side by side) and which pane has the focus. It is persisted per user
// in localStorage, so a reload — or the next visit — opens the same workbench. Shells belong to an
// apply: their ids are kept only while the apply they were opened on is the current one, so a reload
// resumes the same shells and a new apply starts clean. Live terminal objects never enter this store.

import type { Layout } from 'react-resizable-panels';
import { proxy, subscribe } from 'valtio';
import type { ShellType } from '#shared/shells.ts';

export type ShellKind = ShellType;

/**
 * Another held board whose shell sits in this workbench (for broadcast input across boards), reached
 * through the user's apply on it. That apply is the same one a workbench of that board uses (one open
 * apply per user and lease), so closing such a shell closes the shell only, never the apply.
 */
export interface SlotBoard {
  applyId: string;
  deviceId: string;
  /** The board's name as its lease calls it (tab labels). */
  serverName: string;
}

export interface ShellSlot {
  /** Stable id of the slot in the layout (panel ids, focus). */
  id: string;
  kind: ShellKind;
  /** The server's clientId once the shell is open; resumed after a reload. */
  clientId: string | null;
  /** Absent: a shell of the workbench's own board. */
  board?: SlotBoard;
}

/** The apply a slot's shell belongs to: its own board's, else the workbench's. */
export function slotApply(slot: Pick<ShellSlot, 'board'>, applyId: string): string {
  return slot.board?.applyId ?? applyId;
}

function parseSlotBoard(v: unknown): SlotBoard | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  const ok = (x: unknown, max: number) => typeof x === 'string' && x.length > 0 && x.length <= max;
  if (!ok(o.applyId, 64) || !ok(o.deviceId, 64) || !ok(o.serverName, 200)) return undefined;
  return { applyId: o.applyId as string, deviceId: o.deviceId as string, serverName: o.serverName as string };
}

export interface ShellTab {
  id: string;
  /** One slot, or several side by side (a split). */
  slots: ShellSlot[];
  /** The slot that has (or last had) the focus inside this tab. */
  activeSlot: string;
  /** A name the user gave the tab; absent: "Shell 1", "Serial 1 | Shell 2"… */
  title?: string;
}

/** Longest tab name; control and invisible characters are not allowed in one. */
export const TAB_TITLE_MAX = 40;
export function validTabTitle(v: string): boolean {
  return v.trim().length <= TAB_TITLE_MAX && !/[\p{Cc}\p{Cf}\u2028\u2029]/u.test(v);
}

export type PaneId = 'files' | 'editor' | 'shells' | 'load';

export interface WorkbenchLayout {
  version: 1;
  show: Record<'files' | 'editor' | 'load', boolean>;
  /** Sizes per resizable group id, in percent. */
  groups: Record<string, Layout>;
  /** The apply the tabs belong to. */
  applyId: string | null;
  tabs: ShellTab[];
  activeTab: string | null;
}

export const LAYOUT_VERSION = 1;

export function defaultLayout(): WorkbenchLayout {
  return {
    version: LAYOUT_VERSION,
    show: { files: true, editor: true, load: true },
    groups: {},
    applyId: null,
    tabs: [],
    activeTab: null,
  };
}

export const workbench = proxy({
  userKey: '',
  layout: defaultLayout(),
  /** The pane that has the keyboard focus (for the focus ring and focus movement). */
  focused: 'shells' as PaneId,
});

export function storageKey(user: string): string {
  return `bianbu.workbench.${user || 'anonymous'}`;
}

/** A saved layout, checked field by field: anything malformed falls back to the default. */
export function parseLayout(raw: string | null): WorkbenchLayout {
  const base = defaultLayout();
  if (!raw) return base;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return base;
  }
  if (!v || typeof v !== 'object' || (v as { version?: unknown }).version !== LAYOUT_VERSION) return base;
  const o = v as Partial<WorkbenchLayout>;
  if (o.show && typeof o.show === 'object') {
    for (const k of ['files', 'editor', 'load'] as const) {
      if (typeof o.show[k] === 'boolean') base.show[k] = o.show[k];
    }
  }
  if (o.groups && typeof o.groups === 'object') {
    for (const [gid, layout] of Object.entries(o.groups)) {
      if (!layout || typeof layout !== 'object') continue;
      const clean: Layout = {};
      for (const [pid, size] of Object.entries(layout)) {
        if (typeof size === 'number' && size >= 0 && size <= 100) clean[pid] = size;
      }
      base.groups[gid] = clean;
    }
  }
  base.applyId = typeof o.applyId === 'string' ? o.applyId : null;
  if (Array.isArray(o.tabs)) {
    for (const tab of o.tabs) {
      if (!tab || typeof tab.id !== 'string' || !Array.isArray(tab.slots)) continue;
      const slots = tab.slots
        .filter((s) => s && typeof s.id === 'string' && (s.kind === 'login' || s.kind === 'serial'))
        .map((s) => {
          const board = parseSlotBoard(s.board);
          return {
            id: s.id,
            kind: s.kind,
            clientId: typeof s.clientId === 'string' ? s.clientId : null,
            ...(board ? { board } : {}),
          };
        });
      if (slots.length === 0) continue;
      const activeSlot = slots.some((s) => s.id === tab.activeSlot) ? tab.activeSlot : slots[0].id;
      const title =
        typeof tab.title === 'string' && tab.title.trim() && validTabTitle(tab.title)
          ? tab.title.trim()
          : undefined;
      base.tabs.push({ id: tab.id, slots, activeSlot, ...(title ? { title } : {}) });
    }
  }
  base.activeTab = base.tabs.some((t) => t.id === o.activeTab)
    ? (o.activeTab as string)
    : (base.tabs[0]?.id ?? null);
  return base;
}

let unsubscribe: (() => void) | null = null;

/**
 * Loads the user's layout and keeps saving it. Shells opened on another apply are dropped: that apply
 * (and its shells) ended, the layout's sizes and panes stay.
 */
export function bindWorkbench(user: string, applyId: string): void {
  const key = storageKey(user);
  unsubscribe?.();
  let layout: WorkbenchLayout;
  try {
    layout = parseLayout(localStorage.getItem(key));
  } catch {
    layout = defaultLayout();
  }
  if (layout.applyId !== applyId) {
    closedShells.list = [];
    layout.tabs = [];
    layout.activeTab = null;
    layout.applyId = applyId;
  }
  workbench.userKey = key;
  workbench.layout = layout;
  unsubscribe = subscribe(workbench.layout, () => save());
  save();
}

export function unbindWorkbench(): void {
  unsubscribe?.();
  unsubscribe = null;
}

function save(): void {
  if (!workbench.userKey) return;
  try {
    localStorage.setItem(workbench.userKey, JSON.stringify(workbench.layout));
  } catch {
    // Storage full or disabled: the layout still works for this visit.
  }
}

let idCounter = 0;
export function newId(prefix: string): string {
  idCounter++;
  return `${prefix}-${Date.now().toString(36)}${idCounter.toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

export function setGroupLayout(groupId: string, layout: Layout): void {
  workbench.layout.groups[groupId] = { ...layout };
}

export function togglePane(pane: 'files' | 'editor' | 'load', on?: boolean): void {
  workbench.layout.show[pane] = on ?? !workbench.layout.show[pane];
}

export function activeTab(): ShellTab | undefined {
  const l = workbench.layout;
  return l.tabs.find((t) => t.id === l.activeTab);
}

/** A new tab with one shell (or serial console), of another board when given; answers the new slot. */
export function addTab(kind: ShellKind, board?: SlotBoard): ShellSlot {
  const slot: ShellSlot = {
    id: newId('sh'),
    kind,
    clientId: null,
    ...(board ? { board: { ...board } } : {}),
  };
  const tab: ShellTab = { id: newId('tab'), slots: [slot], activeSlot: slot.id };
  workbench.layout.tabs.push(tab);
  workbench.layout.activeTab = tab.id;
  return slot;
}

/** A new shell beside the active one in the active tab (a tab is opened when there is none). */
export function splitActive(kind: ShellKind = 'login'): ShellSlot {
  const tab = activeTab();
  if (!tab) return addTab(kind);
  const at = tab.slots.findIndex((s) => s.id === tab.activeSlot);
  // A split opens on the board of the shell it splits.
  const board = tab.slots[at]?.board;
  const slot: ShellSlot = {
    id: newId('sh'),
    kind,
    clientId: null,
    ...(board ? { board: { ...board } } : {}),
  };
  tab.slots.splice(at + 1, 0, slot);
  tab.activeSlot = slot.id;
  // The split's sizes were for fewer panels: let them share the width evenly again.
  delete workbench.layout.groups[`split-${tab.id}`];
  return slot;
}

/** Removes a slot; an emptied tab goes too. Answers the removed slot. */
export function removeSlot(slotId: string): ShellSlot | undefined {
  const l = workbench.layout;
  for (const tab of l.tabs) {
    const i = tab.slots.findIndex((s) => s.id === slotId);
    if (i < 0) continue;
    const [slot] = tab.slots.splice(i, 1);
    delete l.groups[`split-${tab.id}`];
    if (tab.slots.length === 0) {
      const ti = l.tabs.findIndex((x) => x.id === tab.id);
      l.tabs.splice(ti, 1);
      if (l.activeTab === tab.id) l.activeTab = l.tabs[Math.min(ti, l.tabs.length - 1)]?.id ?? null;
    } else if (tab.activeSlot === slotId) {
      tab.activeSlot = tab.slots[Math.max(0, i - 1)].id;
    }
    return slot;
  }
  return undefined;
}

export function setClientId(slotId: string, clientId: string | null): void {
  for (const tab of workbench.layout.tabs) {
    const s = tab.slots.find((x) => x.id === slotId);
    if (s) s.clientId = clientId;
  }
}

/** Names a tab; an empty name gives it back its automatic one. */
export function renameTab(tabId: string, title: string): void {
  const tab = workbench.layout.tabs.find((t) => t.id === tabId);
  if (!tab || !validTabTitle(title)) return;
  const v = title.trim();
  if (v) tab.title = v;
  else delete tab.title;
}

export function selectTab(tabId: string): void {
  if (workbench.layout.tabs.some((t) => t.id === tabId)) workbench.layout.activeTab = tabId;
}

export function cycleTab(delta: number): void {
  const l = workbench.layout;
  if (l.tabs.length === 0) return;
  const i = l.tabs.findIndex((t) => t.id === l.activeTab);
  l.activeTab = l.tabs[(i + delta + l.tabs.length) % l.tabs.length].id;
}

export function setActiveSlot(slotId: string): void {
  for (const tab of workbench.layout.tabs) {
    if (tab.slots.some((s) => s.id === slotId)) {
      tab.activeSlot = slotId;
      workbench.layout.activeTab = tab.id;
    }
  }
}

/** Swaps a shell with its neighbour in its split (delta -1: the one before). False when there is none. */
export function moveSlot(slotId: string, delta: 1 | -1): boolean {
  for (const tab of workbench.layout.tabs) {
    const i = tab.slots.findIndex((s) => s.id === slotId);
    if (i < 0) continue;
    const j = i + delta;
    if (tab.slots.length < 2 || j < 0 || j >= tab.slots.length) return false;
    const [slot] = tab.slots.splice(i, 1);
    tab.slots.splice(j, 0, slot);
    tab.activeSlot = slotId;
    return true;
  }
  return false;
}

/** Moves the tab holding a shell one place left (-1) or right. False at either end. */
export function moveTab(slotId: string, delta: 1 | -1): boolean {
  const tabs = workbench.layout.tabs;
  const i = tabs.findIndex((t) => t.slots.some((s) => s.id === slotId));
  const j = i + delta;
  if (i < 0 || j < 0 || j >= tabs.length) return false;
  const [tab] = tabs.splice(i, 1);
  tabs.splice(j, 0, tab);
  return true;
}

// Recently closed shells, for "Reopen closed shell" (a browser's Ctrl+Shift+T). Kept for this visit and
// this apply only: a shell's process ends when it is closed and cannot be revived, so reopening starts
// a new shell of the same kind in the same place (its tab's position and name, or its place in a split
// when that tab is still open).

export interface ClosedShell {
  /** The tab the shells were in; a split that is still open takes a closed shell back. */
  tabId: string;
  tabIndex: number;
  title?: string;
  /** Kinds, boards and places in the split, in order. */
  slots: { kind: ShellKind; index: number; board?: SlotBoard }[];
}

/** How many closed shells are remembered. */
export const CLOSED_SHELLS_MAX = 10;

export const closedShells = proxy({ list: [] as ClosedShell[] });

/** What closing these slots (all of one tab) will lose; null when none of them is in the layout. */
export function closedEntry(layout: WorkbenchLayout, slotIds: readonly string[]): ClosedShell | null {
  const tabIndex = layout.tabs.findIndex((t) => t.slots.some((s) => slotIds.includes(s.id)));
  if (tabIndex < 0) return null;
  const tab = layout.tabs[tabIndex];
  const slots = tab.slots.flatMap((s, index) =>
    slotIds.includes(s.id) ? [{ kind: s.kind, index, ...(s.board ? { board: { ...s.board } } : {}) }] : [],
  );
  const whole = slots.length === tab.slots.length;
  return { tabId: tab.id, tabIndex, ...(whole && tab.title ? { title: tab.title } : {}), slots };
}

/**
 * Puts new shells where a closed entry was: back into its split when that tab is still open, else a
 * new tab at its old position with its old name. Answers the slots made (the first takes the focus).
 */
export function reopenInto(layout: WorkbenchLayout, entry: ClosedShell): ShellSlot[] {
  const made = entry.slots.map((s) => ({
    slot: { id: newId('sh'), kind: s.kind, clientId: null, ...(s.board ? { board: { ...s.board } } : {}) },
    index: s.index,
  }));
  if (made.length === 0) return [];
  const open = layout.tabs.find((t) => t.id === entry.tabId);
  if (open) {
    for (const { slot, index } of made) open.slots.splice(Math.min(index, open.slots.length), 0, slot);
    open.activeSlot = made[0].slot.id;
    delete layout.groups[`split-${open.id}`];
    layout.activeTab = open.id;
  } else {
    const tab: ShellTab = {
      id: newId('tab'),
      slots: made.map((m) => m.slot),
      activeSlot: made[0].slot.id,
      ...(entry.title ? { title: entry.title } : {}),
    };
    layout.tabs.splice(Math.min(Math.max(0, entry.tabIndex), layout.tabs.length), 0, tab);
    layout.activeTab = tab.id;
  }
  return made.map((m) => m.slot);
}

/** Remembers slots about to be closed (call before removing them). */
export function rememberClosed(slotIds: readonly string[]): void {
  const entry = closedEntry(workbench.layout, slotIds);
  if (!entry) return;
  closedShells.list.push(entry);
  if (closedShells.list.length > CLOSED_SHELLS_MAX)
    closedShells.list.splice(0, closedShells.list.length - CLOSED_SHELLS_MAX);
}

/** Reopens the most recently closed shell(s); answers the slot to focus, undefined when none. */
export function reopenLastClosed(): ShellSlot | undefined {
  const entry = closedShells.list.pop();
  return entry ? reopenInto(workbench.layout, entry)[0] : undefined;
}
