// Closing shells from the workbench (Ctrl+Alt+W, a tab's ×, a split's ×): a shell at its prompt closes
// at once; one running a foreground job (`sleep`, `vim`, `top`: device-shell-job, answered by the
// service from the board host's /proc) is named in a confirmation first, as VS Code and terminal
// emulators ask before killing a running process. What is closed is remembered for "Reopen closed
// shell" (store.ts). Cancelling gives the focus back to the terminal it came from.
import { proxy } from 'valtio';
import { type ShellJob, shellCalls } from '#shared/shells.ts';
import { call } from '#web/api/http.ts';
import { leaveApply } from '#web/boards/store.ts';
import { rememberClosed, removeSlot, type ShellSlot, slotApply, workbench } from './store.ts';
import { closeShell, focusSlot } from './TerminalSlot.tsx';

const jobCall = shellCalls.find((c) => c.name === 'deviceShellJob') as Extract<
  (typeof shellCalls)[number],
  { name: 'deviceShellJob' }
>;

/** How long the question waits for the service; a shell whose state is not known by then closes. */
export const JOB_ASK_TIMEOUT_MS = 2_000;

export interface CloseQuestion {
  applyId: string;
  slotIds: string[];
  /** The busy shells' programs, as the service named them (null: not named). */
  commands: (string | null)[];
  /** Where the focus goes back on cancel. */
  returnSlot: string | null;
}

export const closeUi = proxy({ question: null as CloseQuestion | null });

function slotsOf(ids: readonly string[]): ShellSlot[] {
  return workbench.layout.tabs.flatMap((t) => t.slots.filter((s) => ids.includes(s.id)));
}

async function jobOf(applyId: string, slot: ShellSlot): Promise<ShellJob | null> {
  if (slot.kind !== 'login' || !slot.clientId) return null;
  const timeout = new Promise<null>((r) => window.setTimeout(() => r(null), JOB_ASK_TIMEOUT_MS));
  const asked = call(
    jobCall,
    { applyId: slotApply(slot, applyId), clientId: slot.clientId },
    { silent: true },
  ).catch(() => null);
  return Promise.race([asked, timeout]);
}

/** Closes the slots now: remembered for reopening, removed from the layout, their shells closed. */
export function closeSlotsNow(applyId: string, slotIds: readonly string[]): void {
  const slots = slotsOf(slotIds);
  if (slots.length === 0) return;
  rememberClosed(slots.map((s) => s.id));
  for (const s of slots) {
    const removed = removeSlot(s.id);
    if (removed) void closeShell(applyId, removed);
  }
}

/** Whether a close is being decided (asking the service or the user): a second close waits. */
let pending = false;

/**
 * Closes the slots (all of one tab, or one shell of a split), asking first when a shell runs a
 * foreground job. `afterClose` runs once they are closed (the caller moves the focus).
 */
export async function requestClose(
  applyId: string,
  slotIds: readonly string[],
  afterClose?: () => void,
): Promise<void> {
  if (pending || closeUi.question) return;
  const slots = slotsOf(slotIds);
  if (slots.length === 0) return;
  pending = true;
  try {
    const jobs = await Promise.all(slots.map((s) => jobOf(applyId, s)));
    const busy = jobs.filter((j): j is ShellJob => j?.state === 'busy');
    if (busy.length === 0) {
      closeSlotsNow(applyId, slotIds);
      afterClose?.();
      return;
    }
    const active = document.activeElement?.closest<HTMLElement>('[data-slot-id]')?.dataset.slotId;
    closeUi.question = {
      applyId,
      slotIds: slots.map((s) => s.id),
      commands: busy.map((j) => j.command),
      returnSlot: active ?? slots[0].id,
    };
    closeAfter = afterClose ?? null;
  } finally {
    pending = false;
  }
}

let closeAfter: (() => void) | null = null;

/** The user's answer to the question. */
export function answerClose(confirm: boolean): void {
  const q = closeUi.question;
  if (!q) return;
  closeUi.question = null;
  const after = closeAfter;
  closeAfter = null;
  if (confirm) {
    closeSlotsNow(q.applyId, q.slotIds);
    after?.();
  } else if (q.returnSlot) {
    const back = q.returnSlot;
    // After the dialog has given the focus back to where it was when it opened.
    window.setTimeout(() => focusSlot(back), 0);
  }
}

/**
 * Leaving the workbench ends its apply (and with it the shells of its own board); the shells it had
 * opened on other boards are closed here, since their applies stay open (see store.ts, SlotBoard).
 */
export async function leaveWorkbench(applyId: string, deviceId: string): Promise<void> {
  const others = workbench.layout.tabs.flatMap((t) => t.slots.filter((s) => s.board));
  await Promise.all(others.map((s) => closeShell(applyId, s)));
  await leaveApply(applyId, deviceId);
}
