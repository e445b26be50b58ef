// Palette commands of the device pages: apply for a board, and per held board Start, Rename, Renew
// and Unlock (so typing a board's name finds its actions). They follow the lease list in the store:
// whenever it changes, the per-board commands are registered again. Actions that need a page to show
// their dialog go to /mainboard first unless a page hosting the dialogs is mounted.
import { subscribe } from 'valtio';
import { heldBoardChoices } from '#web/boards/choices.ts';
import { watchLeaseNotices } from '#web/boards/live.ts';
import { startAndOpen } from '#web/boards/start.ts';
import {
  dataOf,
  type LeaseDialog,
  latestRenewal,
  leaseOf,
  leases,
  loadLeases,
  messageOf,
  renewalPresets,
  renewLease,
} from '#web/boards/store.ts';
import { dateTimeText } from '#web/boards/time.ts';
import {
  type PaletteCommand,
  type PaletteContext,
  type PaletteOption,
  registerCommands,
} from '#web/commands/registry.ts';
import { currentLanguage, t } from '#web/i18n/i18n.ts';
import { realtime } from '#web/realtime/client.ts';
import { recordRenewal } from '#web/sequences/state.ts';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { readToken } from '#web/state/storage.ts';

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

function perLease(): PaletteCommand[] {
  const items = dataOf(leases.mine)?.items ?? [];
  const out: PaletteCommand[] = [];
  for (const l of items) {
    const p = { name: l.serverName };
    const kw = [l.serverName, l.boardName, l.model, l.deviceId];
    // The board open in the workbench is the one in front of the user: its actions rank first.
    const context = () => (session.applyInfo?.deviceId === l.deviceId ? ('board' as const) : undefined);
    out.push(
      {
        id: `device.start.${l.deviceId}`,
        titleKey: 'devices:palette.start',
        titleParams: p,
        section: SECTION,
        keywords: kw,
        context,
        icon: 'terminal',
        // Typing a board's name means "take me to it".
        aliases: [l.serverName],
        run: (ctx) => startAndOpen(ctx.navigate, l.deviceId, l.serverName),
      },
      {
        id: `device.rename.${l.deviceId}`,
        titleKey: 'devices:palette.rename',
        titleParams: p,
        section: SECTION,
        keywords: kw,
        context,
        shortcut: ['F2'],
        run: (ctx) => beginRename(ctx, l.deviceId),
      },
      {
        id: `device.renew.${l.deviceId}`,
        titleKey: 'devices:palette.renew',
        titleParams: p,
        section: SECTION,
        keywords: kw,
        context,
        aliases: ['extend'],
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
        context,
        aliases: ['release'],
        destructive: true,
        shortcut: ['Del'],
        icon: 'lock',
        run: (ctx) => openLeaseDialog(ctx, { kind: 'unlock', deviceId: l.deviceId }),
      },
    );
  }
  return out;
}

/**
 * "Renew a board…": asks which board (any held one, from any page) and until when (the durations of a
 * lease added to its current end, capped at the latest allowed, or the latest), then renews in place.
 */
export const renewAsking: PaletteCommand = {
  id: 'device.renewAsk',
  titleKey: 'devices:palette.renewAsk',
  section: SECTION,
  keywords: ['renew', 'extend', 'lease', 'time'],
  aliases: ['extend a board'],
  icon: 'refresh',
  // Its parsing loads with the palette's first quick renewal, not with the page.
  quick: {
    verbs: ['renew', 'extend', '续期', '延长', '延長', '更新'],
    parse: (text) => import('./renew-quick.ts').then((m) => m.parseRenew(text)),
  },
  when: () => (dataOf(leases.mine)?.items.length ?? 0) > 0,
  args: [
    { key: 'deviceId', promptKey: 'devices:palette.whichBoard', options: heldBoardChoices },
    {
      key: 'until',
      promptKey: 'devices:palette.renewUntil',
      options: ({ deviceId }) => {
        const lease = leaseOf(deviceId);
        if (!lease) return [];
        const end = Date.parse(lease.endsAt);
        const latest = latestRenewal();
        const lng = currentLanguage();
        const seen = new Set<number>();
        const out: PaletteOption[] = [];
        for (const { key, ms } of renewalPresets(end, latest)) {
          if (ms <= end + 60_000 || seen.has(ms)) continue;
          seen.add(ms);
          out.push({
            value: String(ms),
            keywords: [key, t(`devices:duration.${key}`)],
            label: dateTimeText(lng, new Date(ms)),
            detail:
              ms === latest
                ? t('devices:renew.latest')
                : t('devices:renew.extendBy', { duration: t(`devices:duration.${key}`) }),
          });
        }
        if (latest > end + 60_000 && !seen.has(latest))
          out.push({
            value: String(latest),
            label: dateTimeText(lng, new Date(latest)),
            detail: t('devices:renew.latest'),
          });
        return out;
      },
    },
  ],
  run: async (_ctx, { deviceId, until }) => {
    try {
      const updated = await renewLease(deviceId, new Date(Number(until)));
      recordRenewal(new Date(updated.endsAt));
      notify(
        'success',
        t('devices:renew.done', {
          name: updated.serverName,
          date: dateTimeText(currentLanguage(), updated.endsAt),
        }),
      );
    } catch (err) {
      notify('error', t('devices:renew.failed', { error: messageOf(err) }));
    }
  },
};

const fixed: PaletteCommand[] = [
  renewAsking,
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

/** The device commands for the current lease list (exported for the ranking test). */
export function deviceCommands(): PaletteCommand[] {
  return [...fixed, ...perLease()];
}

let installed = false;

/** Installs the device commands once; later calls only refresh the lease list if it was never loaded. */
export function installDeviceCommands(): void {
  if (installed) return;
  installed = true;
  const sync = () => registerCommands('devices', deviceCommands());
  sync();
  subscribe(leases, sync);
  if (readToken()) {
    if (leases.mine.status === 'idle') void loadLeases();
    // The realtime channel brings the STOMP client and zod (88 KB gzip): started once the page is
    // idle (at most a second late), off the first load of /mainboard. Topics wait for it; a sign-out
    // before then leaves it unstarted.
    const start = () => {
      if (readToken()) realtime.start();
    };
    if (window.requestIdleCallback) window.requestIdleCallback(start, { timeout: 1000 });
    else window.setTimeout(start, 300);
    watchLeaseNotices();
  }
}
