// Broadcast input from the workbench's side: turning it on or off for a shell slot, a tab's slots or
// every open shell, on top of the broadcast set of the terminal layer (terminal/broadcast.ts, which
// routes the typed input). The set is not persisted — a reload or leaving the workbench turns
// broadcast off (WorkbenchPage stops it on unmount) — so nobody types into several boards by surprise.
import { t } from '#web/i18n/i18n.ts';
import { notify } from '#web/state/notices.ts';
import {
  broadcast,
  canJoin,
  isBroadcasting,
  joinBroadcast,
  leaveBroadcast,
  stopBroadcast,
} from '#web/terminal/broadcast.ts';
import { findShell } from '#web/terminal/registry.ts';
import type { ShellSlot, WorkbenchLayout } from './store.ts';

/** The shell ids of the slots that could be in the broadcast set now. */
function joinable(slots: readonly ShellSlot[]): string[] {
  return slots.flatMap((s) => (s.clientId && canJoin(findShell(s.clientId)) ? [s.clientId] : []));
}

function join(slots: readonly ShellSlot[]): void {
  const ids = joinable(slots);
  joinBroadcast(ids, findShell);
  const refused = slots.length - ids.length;
  if (refused > 0) notify('info', t('workbench:broadcast.refused', { count: refused }));
}

/**
 * Turns broadcast on for the slots, or off for all of them when every one that can join is already
 * on (a toggle, as iTerm2's menu item and tmux's `setw synchronize-panes` are).
 */
export function toggleSlotsBroadcast(slots: readonly ShellSlot[]): void {
  const ids = joinable(slots);
  if (ids.length > 0 && ids.every((id) => isBroadcasting(id))) leaveBroadcast(ids);
  else join(slots);
}

/** Every open shell of the workbench joins. */
export function broadcastAllSlots(layout: WorkbenchLayout): void {
  join(layout.tabs.flatMap((tab) => tab.slots));
}

/** Broadcast off for every shell, said in a notice (a palette command has no other visible answer). */
export function stopAllBroadcast(): void {
  if (broadcast.members.length === 0) return;
  stopBroadcast();
  notify('info', t('workbench:broadcast.stopped'));
}

/** Whether any shell of the slots is in the broadcast set. */
export function slotsBroadcasting(slots: readonly ShellSlot[], members: readonly string[]): boolean {
  return slots.some((s) => !!s.clientId && members.includes(s.clientId));
}
