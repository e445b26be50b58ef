// The held boards as palette choices ("Renew a board…", "Flash a board…"): the one in front of the
// user (the workbench's) first, each named by its lease name with the board and model beside it.
import type { PaletteOption } from '#web/commands/registry.ts';
import { session } from '#web/state/session.ts';
import { dataOf, leases } from './store.ts';

export function heldBoardChoices(): PaletteOption[] {
  const items = [...(dataOf(leases.mine)?.items ?? [])];
  const front = session.applyInfo?.deviceId;
  items.sort((a, b) => Number(b.deviceId === front) - Number(a.deviceId === front));
  return items.map((l) => ({
    value: l.deviceId,
    label: l.serverName,
    detail: `${l.boardName} · ${l.model}`,
  }));
}
