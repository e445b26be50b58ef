// Palette commands of teams: open /share, create a group, and per item Start a shared board, join a
// shared shell, share the focused workbench shell with a group holding its board, delete a group, leave
// the joined shell. They follow the share store: whenever it changes they are registered again.
import { subscribe } from 'valtio';
import { groupName, SHARE_LIMITS } from '#shared/share.ts';
import { dataOf, messageOf, startApply } from '#web/boards/store.ts';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { t } from '#web/i18n/i18n.ts';
import { realtime, realtimeState } from '#web/realtime/client.ts';
import { frontShell } from '#web/state/front-shell.ts';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { groupsHolding, joinShell, leaveJoined } from './join.ts';
import { createGroup, deleteGroup, inviteShell, loadAllShare, share, watchShareNotices } from './state.ts';

const SECTION = 'share:palette.section';

/** Start a shared board (an apply of one's own on the owner's lease) and open the workbench. */
async function startShared(navigate: (to: string) => void, deviceId: string): Promise<void> {
  try {
    await startApply(deviceId);
    if (realtimeState.status !== 'idle') realtime.reconnect();
    navigate('/workbench');
  } catch (err) {
    notify('error', messageOf(err));
  }
}
const VIEW = ['device.view_share'];

const fixed: PaletteCommand[] = [
  {
    id: 'share.open',
    titleKey: 'share:palette.open',
    section: SECTION,
    keywords: ['share', 'team', 'group', 'members'],
    icon: 'user',
    perms: VIEW,
    run: (ctx) => ctx.navigate('/share'),
  },
  {
    id: 'share.create',
    titleKey: 'share:palette.create',
    section: SECTION,
    keywords: ['share', 'group', 'new', 'team'],
    perms: ['device.add_share'],
    args: [
      {
        key: 'name',
        promptKey: 'share:create.label',
        validate: (v) =>
          groupName.safeParse(v).success
            ? null
            : t('share:palette.nameBad', { max: SHARE_LIMITS.groupNameMax }),
      },
    ],
    run: async (ctx, { name }) => {
      await createGroup(name);
      ctx.navigate('/share');
    },
  },
];

function dynamic(): PaletteCommand[] {
  const out: PaletteCommand[] = [];
  for (const d of dataOf(share.shared)?.items ?? []) {
    out.push({
      id: `share.start.${d.deviceId}`,
      titleKey: 'share:palette.startShared',
      titleParams: { name: d.serverName, owner: d.ownerName },
      section: SECTION,
      keywords: [d.serverName, d.boardName, d.ownerName, 'shared'],
      icon: 'terminal',
      run: (ctx) => startShared(ctx.navigate, d.deviceId),
    });
  }
  for (const s of dataOf(share.joinable)?.items ?? []) {
    if (s.mine) continue;
    out.push({
      id: `share.join.${s.clientId}`,
      titleKey: 'share:palette.join',
      titleParams: { host: s.hostName, name: s.serverName },
      section: SECTION,
      keywords: ['join', 'shell', s.hostName, s.serverName],
      run: async (ctx) => {
        ctx.navigate('/share');
        await joinShell(s);
      },
    });
  }
  const deviceId = session.applyInfo?.deviceId;
  if (deviceId) {
    for (const g of groupsHolding(deviceId)) {
      out.push({
        id: `share.invite.${g}`,
        titleKey: 'share:palette.invite',
        titleParams: { group: g },
        section: SECTION,
        keywords: ['share', 'shell', 'invite', g],
        // Offered while a shell is in front (the workbench), checked when the palette opens.
        when: () => frontShell() !== null,
        run: () => {
          // The shell in front when the command runs, not when the list was made.
          const clientId = frontShell();
          if (clientId) void inviteShell(session.applyInfo?.applyId ?? '', clientId, g);
        },
      });
    }
  }
  for (const g of dataOf(share.owned)?.groups ?? []) {
    out.push({
      id: `share.delete.${g.groupName}`,
      titleKey: 'share:palette.deleteGroup',
      titleParams: { group: g.groupName },
      section: SECTION,
      keywords: ['delete', 'group', g.groupName],
      perms: ['device.del_share'],
      args: [
        {
          key: 'confirm',
          promptKey: 'share:palette.confirmDelete',
          promptParams: { group: g.groupName },
          options: () => [
            { value: 'keep', label: t('share:palette.keep') },
            { value: 'delete', label: t('share:palette.yesDelete', { group: g.groupName }) },
          ],
        },
      ],
      run: (_ctx, { confirm }) => {
        if (confirm === 'delete') void deleteGroup(g.groupName);
      },
    });
  }
  if (share.joined) {
    out.push({
      id: 'share.leave',
      titleKey: 'share:palette.leave',
      section: SECTION,
      run: () => leaveJoined(),
    });
  }
  return out;
}

let installed = false;

export function installShareCommands(): void {
  if (installed) return;
  installed = true;
  const sync = () => registerCommands('share', [...fixed, ...dynamic()]);
  sync();
  subscribe(share, sync);
  subscribe(session, sync);
  watchShareNotices();
  void loadAllShare();
}
