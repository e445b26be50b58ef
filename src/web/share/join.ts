// Joining a shell another user shared, and the groups a board's shell may be shared with: what the
// palette's share commands need, kept apart from the dialog and the share bar so the first page does
// not load the terminal with them.
import type { JoinableShell } from '#shared/share.ts';
import { call } from '#web/api/http.ts';
import { Calls, dataOf } from '#web/boards/store.ts';
import { notify } from '#web/state/notices.ts';
import { share, shareErrorText } from './state.ts';

export async function joinShell(
  s: Pick<JoinableShell, 'clientId' | 'deviceId' | 'hostName' | 'serverName' | 'mine'>,
): Promise<void> {
  if (s.mine) return;
  try {
    await call(Calls.applyDevice, { deviceId: s.deviceId }, { silent: true });
    share.joined = { clientId: s.clientId, hostName: s.hostName, serverName: s.serverName };
  } catch (err) {
    notify('error', shareErrorText(err));
  }
}

export function leaveJoined(): void {
  const j = share.joined;
  if (!j) return;
  // The terminal module is loaded only where a joined shell was shown (the dialog loads it).
  void import('#web/terminal/registry.ts').then((m) => m.disposeShell(j.clientId));
  share.joined = null;
}

/** Groups that hold this board and that the user owns or belongs to (who a shell may be shared with). */
export function groupsHolding(deviceId: string): string[] {
  const owned = dataOf(share.owned)?.groups ?? [];
  const member = dataOf(share.memberOf)?.groups ?? [];
  const names = [...owned, ...member]
    .filter((g) => g.devices.some((d) => d.deviceId === deviceId))
    .map((g) => g.groupName);
  return [...new Set(names)];
}
