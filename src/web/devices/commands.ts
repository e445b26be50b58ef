// Palette commands of the device pages: apply for a board, and per held board Start, Rename, Renew
// and Unlock (so typing a board's name finds its actions). They follow the lease list in the store:
// whenever it changes, the per-board commands are registered again. Actions that need a page to show
// their dialog go to /mainboard first unless a page hosting the dialogs is mounted.
import { subscribe } from 'valtio';
import { t } from '#web/i18n/i18n.ts';
import { notify } from '#web/state/notices.ts';
import { dataOf, type LeaseDialog, leases, loadLeases, messageOf, startApply } from '#web/state/devices.ts';
import { type PaletteCommand, type PaletteContext, registerCommands } from '#web/palette/registry.ts';
import { readToken } from '#web/state/storage.ts';
import { realtime, realtimeState } from '#web/realtime/client.ts';
import { watchLeaseNotices } from './live.ts';

const SECTION = 'devices:palette.section';

let dialogHosts = 0;

/** Pages that render the lease dialogs (mainboard, workbench) count themselves in and out. */
export function hostLeaseDialogs(): () => void {
  dialogHosts++;
  return () => {
    dialogHosts--;
  };
}

function ensureHost(ctx: PaletteContext): void {
  if (dialogHosts === 0) ctx.navigate('/mainboard');
}

export function openLeaseDialog(ctx: PaletteContext, dialog: LeaseDialog): void {
  ensureHost(ctx);
  leases.selected = dialog.deviceId;
  leases.dialog = dialog;
}

export function beginRename(ctx: PaletteContext | null, deviceId: string): void {
  if (ctx) ensureHost(ctx);
  leases.selected = deviceId;
  leases.renaming = deviceId;
}

/** Start: apply, keep the apply in the cookie, open the workbench. */
export async function startAndOpen(navigate: (to: string) => void, deviceId: string, name: string): Promise<void> {
  try {
    await startApply(deviceId);
    // CONNECT carries the applyId: a connection made before this apply reconnects with it.
    if (realtimeState.status !== 'idle') realtime.reconnect();
    navigate('/workbench');
  } catch (err) {
    if (messageOf(err) !== 'busy') notify('error', t('devices:mainboard.startFailed', { name, error: messageOf(err) }));
  }
}

function perLease(): PaletteCommand[] {
  const items = dataOf(leases.mine)?.items ?? [];
  const out: PaletteCommand[] = [];
  for (const l of items) {
    const p = { name: l.serverName };
    const kw = [l.serverName, l.boardName, l.model, l.deviceId];
    out.push(
      {
        id: `device.start.${l.deviceId}`,
        titleKey: 'devices:palette.start',
        titleParams: p,
        section: SECTION,
        keywords: kw,
        icon: 'terminal',
        run: (ctx) => startAndOpen(ctx.navigate, l.deviceId, l.serverName),
      },
      {
        id: `device.rename.${l.deviceId}`,
        titleKey: 'devices:palette.rename',
        titleParams: p,
        section: SECTION,
        keywords: kw,
        shortcut: ['F2'],
        run: (ctx) => beginRename(ctx, l.deviceId),
      },
      {
        id: `device.renew.${l.deviceId}`,
        titleKey: 'devices:palette.renew',
        titleParams: p,
        section: SECTION,
        keywords: kw,
        shortcut: ['R'],
        icon: 'refresh',
        run: (ctx) => openLeaseDialog(ctx, { kind: 'renew', deviceId: l.deviceId }),
      },
      {
        id: `device.unlock.${l.deviceId}`,
        titleKey: 'devices:palette.unlock',
        titleParams: p,
        section: SECTION,
        keywords: kw,
        shortcut: ['Del'],
        icon: 'lock',
        run: (ctx) => openLeaseDialog(ctx, { kind: 'unlock', deviceId: l.deviceId }),
      },
    );
  }
  return out;
}

const fixed: PaletteCommand[] = [
  {
    id: 'device.applyNew',
    titleKey: 'devices:palette.applyNew',
    section: SECTION,
    keywords: ['request', 'lease', 'new', 'riscvhouse'],
    shortcut: ['A'],
    icon: 'cpu',
    run: (ctx) => ctx.navigate('/riscvhouse'),
  },
];

let installed = false;

/** Installs the device commands once; later calls only refresh the lease list if it was never loaded. */
export function installDeviceCommands(): void {
  if (installed) return;
  installed = true;
  const sync = () => registerCommands('devices', [...fixed, ...perLease()]);
  sync();
  subscribe(leases, sync);
  if (readToken()) {
    if (leases.mine.status === 'idle') void loadLeases();
    realtime.start();
    watchLeaseNotices();
  }
}
