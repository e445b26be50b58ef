// Broadcast input (iTerm2's "Broadcast Input", tmux's synchronize-panes): the shells in the broadcast
// set take every key and paste typed into any one of them. The set holds shell ids (the server's
// clientIds), so shells of any tab — and of any board whose shells are open in this page — can join.
//
// Lifecycle: a shell joins when the user turns broadcast on for it (palette, key, tab toggle); it
// leaves when the user turns it off, when it is closed or restarted (registry.disposeShell), when it
// ends (LiveShell.end: exit, board reset, share revoked), or when broadcasting stops for all at once.
// The set lives in memory only and is deliberately not persisted: after a reload, or once the
// workbench is left, broadcast is off, so nobody types into several boards by surprise.
//
// Only what the user types is broadcast: keys, paste and IME text. The terminal's own answers to a
// program (cursor position, device attributes, focus reports) and mouse reports belong to the one
// shell they came from, and resizes are never broadcast. A member that cannot take input right now —
// a joined shell whose host has not granted this user input, a shell whose connection is down, an
// ended one — is skipped when input is sent; a read-only or ended shell cannot join.
import { proxy } from 'valtio';

export const broadcast = proxy({
  /** Shell ids in the set, in the order they joined. */
  members: [] as string[],
});

/** What the set needs to know of a shell. */
export interface BroadcastReceiver {
  /** Connected and attached: input sent now reaches the shell. */
  readonly live: boolean;
  /** Ended for good (exit, reset, revoked): it never takes input again. */
  readonly ended: boolean;
  /** A joined shell whose host has not granted this user input. */
  readonly readOnly: boolean;
}

export type ReceiverLookup = (shellId: string) => BroadcastReceiver | undefined;

/** Whether a shell may join: it exists, has not ended, and the user may type into it. */
export function canJoin(r: BroadcastReceiver | undefined): boolean {
  return !!r && !r.ended && !r.readOnly;
}

export function isBroadcasting(shellId: string | null | undefined): boolean {
  return !!shellId && broadcast.members.includes(shellId);
}

/** Adds the shells that may join (see canJoin); answers the ids that were refused. */
export function joinBroadcast(shellIds: readonly string[], lookup: ReceiverLookup): string[] {
  const refused: string[] = [];
  for (const id of shellIds) {
    if (!canJoin(lookup(id))) refused.push(id);
    else if (!broadcast.members.includes(id)) broadcast.members.push(id);
  }
  return refused;
}

export function leaveBroadcast(shellIds: readonly string[]): void {
  if (!shellIds.some((id) => broadcast.members.includes(id))) return;
  broadcast.members = broadcast.members.filter((id) => !shellIds.includes(id));
}

/** Turns broadcast off for every shell at once. */
export function stopBroadcast(): void {
  if (broadcast.members.length) broadcast.members = [];
}

/**
 * Turns broadcast on or off for a shell; answers whether it is on afterwards (false when it may not
 * join).
 */
export function toggleBroadcast(shellId: string, lookup: ReceiverLookup): boolean {
  if (isBroadcasting(shellId)) {
    leaveBroadcast([shellId]);
    return false;
  }
  return joinBroadcast([shellId], lookup).length === 0;
}

/**
 * Where input typed into `from` goes: null when `from` is not in the set (it goes to `from` alone, as
 * always); else every member that can take it now (live and not read-only), `from` included when it
 * can. Pure, for tests.
 */
export function broadcastTargets(
  members: readonly string[],
  from: string,
  lookup: ReceiverLookup,
): string[] | null {
  if (!members.includes(from)) return null;
  return members.filter((id) => {
    const r = lookup(id);
    return !!r && r.live && !r.ended && !r.readOnly;
  });
}

/**
 * The shells a piece of input typed into `from` is sent to: the broadcast targets when it is typed
 * input and `from` is in the set, else `from` alone (each shell still drops input it may not take).
 */
export function inputRecipients(
  members: readonly string[],
  from: string,
  typed: boolean,
  lookup: ReceiverLookup,
): string[] {
  return (typed ? broadcastTargets(members, from, lookup) : null) ?? [from];
}

// Mouse reports in the X10/normal (ESC [ M b x y), SGR (ESC [ < b;x;y M|m) and urxvt (ESC [ b;x;y M)
// encodings: xterm sends them as user input, but a click means a place in one terminal only.
const MOUSE_REPORT = /^\x1b\[(?:M[\s\S]{3}|<\d+;\d+;\d+[Mm]|\d+;\d+;\d+M)$/;

/** Whether data a terminal produced is typed input to broadcast (not a report or a mouse event). */
export function isBroadcastInput(data: string, wasUserInput: boolean): boolean {
  return wasUserInput && !MOUSE_REPORT.test(data);
}
