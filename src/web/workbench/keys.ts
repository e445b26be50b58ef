// The workbench's keys, driven by the user's keymap (src/shared/keymap.ts, in force in
// web/state/keymap.ts): a key press is matched by physical key (`code`), so layouts do not matter, to
// an action, and the action runs. Bound on window in the capture phase so the keys reach us before a
// focused terminal turns them into input. A sequence (tmux's prefix Ctrl+B, then a key) is matched in
// two presses: the prefix is swallowed and waits up to PREFIX_TIMEOUT_MS for its second key.

import { useEffect } from 'react';
import {
  type Bindings,
  formatStroke,
  KEYMAP_ACTIONS,
  type KeymapAction,
  type Stroke,
} from '#shared/keymap.ts';
import { paletteState } from '#web/commands/registry.ts';
import { vncOps } from '#web/desktop/ops.ts';
import { toggleCode, toggleVnc, vncWindow } from '#web/desktop/state.ts';
import { startKeymapSync } from '#web/keymap/sync.ts';
import { stepTermFont } from '#web/state/app.ts';
import { keymapState } from '#web/state/keymap.ts';
import { type KeyLike, strokeOf } from '#web/state/strokes.ts';
import { toggleMaximize, workbenchUi } from './commands.ts';
import { focusLastTerminal, moveFocus, trackLastShell } from './focus.ts';
import { resizeFocused, swapFocused } from './pane-keys.ts';
import { shellOps } from './shell-ops.ts';
import { cycleTab, togglePane } from './store.ts';

export type KeyAction =
  | { kind: 'focus'; dir: 'left' | 'right' | 'up' | 'down' }
  | { kind: 'newShell' }
  | { kind: 'newSerial' }
  | { kind: 'split' }
  | { kind: 'close' }
  | { kind: 'reopen' }
  | { kind: 'search' }
  | { kind: 'broadcast' }
  | { kind: 'termTheme' }
  | { kind: 'tab'; delta: 1 | -1 }
  | { kind: 'toggle'; pane: 'files' | 'editor' | 'load' }
  | { kind: 'reset' }
  | { kind: 'lastTerminal' }
  | { kind: 'maximize' }
  | { kind: 'restart' }
  | { kind: 'font'; step: -1 | 0 | 1 }
  | { kind: 'resize'; axis: 'x' | 'y'; delta: 1 | -1 }
  | { kind: 'swap'; delta: 1 | -1 }
  | { kind: 'desktop'; what: 'vnc' | 'code' | 'ctrlAltDel' };

/** What each keymap action does. */
export const ACTION_KINDS: Readonly<Record<KeymapAction, KeyAction>> = {
  newShell: { kind: 'newShell' },
  newSerial: { kind: 'newSerial' },
  split: { kind: 'split' },
  close: { kind: 'close' },
  reopenClosed: { kind: 'reopen' },
  restart: { kind: 'restart' },
  search: { kind: 'search' },
  broadcast: { kind: 'broadcast' },
  termTheme: { kind: 'termTheme' },
  nextTab: { kind: 'tab', delta: 1 },
  prevTab: { kind: 'tab', delta: -1 },
  focusLeft: { kind: 'focus', dir: 'left' },
  focusRight: { kind: 'focus', dir: 'right' },
  focusUp: { kind: 'focus', dir: 'up' },
  focusDown: { kind: 'focus', dir: 'down' },
  lastTerminal: { kind: 'lastTerminal' },
  maximize: { kind: 'maximize' },
  paneWider: { kind: 'resize', axis: 'x', delta: 1 },
  paneNarrower: { kind: 'resize', axis: 'x', delta: -1 },
  paneTaller: { kind: 'resize', axis: 'y', delta: 1 },
  paneShorter: { kind: 'resize', axis: 'y', delta: -1 },
  swapPrev: { kind: 'swap', delta: -1 },
  swapNext: { kind: 'swap', delta: 1 },
  toggleFiles: { kind: 'toggle', pane: 'files' },
  toggleEditor: { kind: 'toggle', pane: 'editor' },
  toggleLoad: { kind: 'toggle', pane: 'load' },
  toggleDesktop: { kind: 'desktop', what: 'vnc' },
  toggleCode: { kind: 'desktop', what: 'code' },
  ctrlAltDel: { kind: 'desktop', what: 'ctrlAltDel' },
  reset: { kind: 'reset' },
  fontBigger: { kind: 'font', step: 1 },
  fontSmaller: { kind: 'font', step: -1 },
  fontReset: { kind: 'font', step: 0 },
};

export interface KeyMatch {
  /** The action to run, if the press completed a chord. */
  action: KeymapAction | null;
  /** The prefix now waiting for its second key ('' when none). */
  pending: string;
  /** The press belongs to the keymap (run or prefix): keep it from the terminal and the browser. */
  consume: boolean;
}

/** Matches a key press against bindings, given the prefix already waiting (if any). */
export function matchKey(e: KeyLike, bindings: Bindings, pending = ''): KeyMatch {
  const stroke = strokeOf(e);
  if (!stroke) return { action: null, pending, consume: false };
  const s = formatStroke(stroke);
  const find = (chord: string) => KEYMAP_ACTIONS.find((a) => bindings[a].includes(chord)) ?? null;
  if (pending) {
    // Like tmux: the key after the prefix is the command's, bound or not.
    return { action: find(`${pending} ${s}`), pending: '', consume: true };
  }
  const action = find(s);
  if (action) return { action, pending: '', consume: true };
  const isPrefix = KEYMAP_ACTIONS.some((a) => bindings[a].some((c) => c.startsWith(`${s} `)));
  return isPrefix
    ? { action: null, pending: s, consume: true }
    : { action: null, pending: '', consume: false };
}

/** The action a single key press means under the keymap in force (no prefix waiting), or null. */
export function keyAction(e: KeyLike, bindings: Bindings = keymapState.bindings): KeyAction | null {
  const m = matchKey(e, bindings);
  return m.action ? ACTION_KINDS[m.action] : null;
}

export function runKeyAction(a: KeyAction): void {
  switch (a.kind) {
    case 'focus':
      moveFocus(a.dir);
      return;
    case 'newShell':
      shellOps.newShell('login');
      return;
    case 'newSerial':
      shellOps.newShell('serial');
      return;
    case 'split':
      shellOps.split();
      return;
    case 'close':
      shellOps.closeFocused();
      return;
    case 'reopen':
      shellOps.reopenClosed();
      return;
    case 'search':
      shellOps.search();
      return;
    case 'broadcast':
      shellOps.toggleBroadcast();
      return;
    case 'termTheme':
      shellOps.toggleTheme();
      return;
    case 'tab':
      cycleTab(a.delta);
      window.setTimeout(() => shellOps.focusActive(), 0);
      return;
    case 'toggle':
      togglePane(a.pane);
      return;
    case 'reset':
      workbenchUi.resetOpen = true;
      return;
    case 'lastTerminal':
      focusLastTerminal();
      return;
    case 'maximize':
      toggleMaximize();
      return;
    case 'restart':
      shellOps.restartFocused();
      return;
    case 'font':
      stepTermFont(a.step);
      return;
    case 'resize':
      resizeFocused(a.axis, a.delta);
      return;
    case 'swap':
      swapFocused(a.delta);
      return;
    case 'desktop':
      if (a.what === 'vnc') {
        toggleVnc();
        if (vncWindow.opened) window.setTimeout(() => vncOps.focus(), 50);
      } else if (a.what === 'code') toggleCode();
      else if (vncWindow.opened) vncOps.sendKeys('ctrlAltDel');
      return;
  }
}

/** How long a prefix key waits for its second key. */
export const PREFIX_TIMEOUT_MS = 2000;

export function useWorkbenchKeys(): void {
  useEffect(() => {
    startKeymapSync();
    let pending = '';
    let pendingAt = 0;
    const onKey = (e: KeyboardEvent) => {
      if (paletteState.open) return;
      if (pending && Date.now() - pendingAt > PREFIX_TIMEOUT_MS) pending = '';
      const m = matchKey(e, keymapState.bindings, pending);
      if (!m.consume) return;
      pending = m.pending;
      pendingAt = Date.now();
      e.preventDefault();
      e.stopPropagation();
      if (m.action) runKeyAction(ACTION_KINDS[m.action]);
    };
    window.addEventListener('keydown', onKey, { capture: true });
    const untrack = trackLastShell();
    return () => {
      window.removeEventListener('keydown', onKey, { capture: true });
      untrack();
    };
  }, []);
}
