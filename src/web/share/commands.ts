// Palette commands of teams: open /share, create a group, and per item Start a shared board, join a
// shared shell, share the focused workbench shell with a group holding its board, delete a group, leave
// the joined shell. They follow the share store: whenever it changes they are registered again.
import { subscribe } from 'valtio';
import { groupName, SHARE_LIMITS } from '#shared/share.ts';
import { heldBoardChoices } from '#web/boards/choices.ts';
import { dataOf, leases, messageOf, startApply } from '#web/boards/store.ts';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { t } from '#web/i18n/i18n.ts';
import { realtime, realtimeState } from '#web/realtime/client.ts';
import { frontShell } from '#web/state/front-shell.ts';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { groupsHolding, joinShell, leaveJoined } from './join.ts';
import {
  addMember,
  createGroup,
  deleteGroup,
  inviteShell,
  loadAllShare,
  loadOwned,
  removeMember,
  setDevices,
  share,
  shareErrorText,
  uninviteShell,
  watchShareNotices,
} from './state.ts';

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
const EDIT = ['device.add_share'];

/** The held board in front of the user (the workbench's), else the only one held. */
function boardInFront(): string | null {
  const held = dataOf(leases.mine)?.items ?? [];
  const front = session.applyInfo?.deviceId;
  if (front && held.some((l) => l.deviceId === front)) return front;
  return held.length === 1 ? held[0].deviceId : null;
}

function boardNameOf(deviceId: string): string {
  return dataOf(leases.mine)?.items.find((l) => l.deviceId === deviceId)?.serverName ?? deviceId;
}

/** Adds a board to one of the user's groups, in place (the page the user is on stays). */
async function shareBoard(groupName: string, deviceId: string): Promise<void> {
  const g = dataOf(share.owned)?.groups.find((x) => x.groupName === groupName);
  if (!g) return;
  if (g.devices.some((d) => d.deviceId === deviceId)) {
    notify('info', t('share:palette.alreadyShared', { name: boardNameOf(deviceId), group: groupName }));
    return;
  }
  await setDevices(groupName, [...g.devices.map((d) => d.deviceId), deviceId]);
}

/**
 * "Share a board with a group…" (`share <group>`): the board in front (else asked), then which of the
 * user's groups; the board is added to it where the user is, without going to the Teams page.
 */
const shareBoardAsking: PaletteCommand = {
  id: 'share.board',
  titleKey: 'share:palette.shareBoard',
  section: SECTION,
  keywords: ['share', 'group', 'team', 'board'],
  aliases: ['share board', 'share this board', 'share with group'],
  context: () => (boardInFront() ? 'board' : undefined),
  icon: 'user',
  perms: EDIT,
  quick: { verbs: ['share', '共享', '分享', '共有'] },
  when: () => (dataOf(leases.mine)?.items.length ?? 0) > 0,
  args: [
    {
      key: 'group',
      promptKey: 'share:palette.whichGroup',
      // Asked afresh: a group made elsewhere (another tab, the CLI) is offered too.
      options: async () => {
        await loadOwned();
        return (dataOf(share.owned)?.groups ?? []).map((g) => ({
          value: g.groupName,
          label: g.groupName,
          detail: t('share:palette.groupDetail', {
            members: String(g.users.length),
            boards: String(g.devices.length),
          }),
        }));
      },
    },
    {
      key: 'deviceId',
      promptKey: 'share:palette.whichBoard',
      options: heldBoardChoices,
      skip: () => boardInFront() !== null,
    },
  ],
  run: (_ctx, { group, deviceId }) => shareBoard(group, deviceId || boardInFront() || ''),
};

const fixed: PaletteCommand[] = [
  shareBoardAsking,
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
    const front = boardInFront();
    // A group's name finds what can be done with it, not only its deletion.
    if (front && !g.devices.some((d) => d.deviceId === front))
      out.push({
        id: `share.boardTo.${g.groupName}`,
        titleKey: 'share:palette.shareBoardTo',
        titleParams: { group: g.groupName, name: boardNameOf(front) },
        section: SECTION,
        keywords: ['share', 'board', g.groupName],
        // About the board in front of the user: ranked with its actions.
        context: 'board',
        icon: 'user',
        perms: EDIT,
        run: () => shareBoard(g.groupName, front),
      });
    out.push({
      id: `share.addMember.${g.groupName}`,
      titleKey: 'share:palette.addMember',
      titleParams: { group: g.groupName },
      section: SECTION,
      keywords: ['member', 'user', 'add', 'invite', g.groupName],
      aliases: ['add member', 'add user', 'invite user'],
      icon: 'user',
      perms: EDIT,
      args: [{ key: 'who', promptKey: 'share:palette.whoToAdd' }],
      run: async (_ctx, { who }) => {
        try {
          await addMember(g.groupName, who);
        } catch (err) {
          notify('error', shareErrorText(err));
        }
      },
    });
    if (g.users.length)
      out.push({
        id: `share.removeMember.${g.groupName}`,
        titleKey: 'share:palette.removeMember',
        titleParams: { group: g.groupName },
        section: SECTION,
        keywords: ['member', 'user', 'remove', g.groupName],
        destructive: true,
        perms: ['device.del_share'],
        args: [
          {
            key: 'userId',
            promptKey: 'share:palette.whoToRemove',
            options: () =>
              g.users.map((u) => ({
                value: u.userId,
                label: u.displayName || u.username,
                detail: u.username,
              })),
          },
          {
            key: 'confirm',
            promptKey: 'share:palette.confirmRemove',
            options: () => [
              { value: 'keep', label: t('share:palette.keep') },
              { value: 'remove', label: t('share:palette.yesRemove') },
            ],
          },
        ],
        run: (_ctx, { userId, confirm }) => {
          const u = g.users.find((x) => x.userId === userId);
          if (confirm === 'remove' && u) void removeMember(g.groupName, u.userId, u.username);
        },
      });
    out.push({
      id: `share.delete.${g.groupName}`,
      titleKey: 'share:palette.deleteGroup',
      titleParams: { group: g.groupName },
      section: SECTION,
      keywords: ['delete', 'group', g.groupName],
      destructive: true,
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
  if (deviceId && groupsHolding(deviceId).length)
    out.push({
      id: 'share.uninvite',
      titleKey: 'share:palette.uninvite',
      section: SECTION,
      keywords: ['share', 'shell', 'stop', 'invite'],
      when: () => frontShell() !== null,
      run: () => {
        const clientId = frontShell();
        if (clientId) void uninviteShell(session.applyInfo?.applyId ?? '', clientId);
      },
    });
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

/** The share commands for the current share lists (exported for the ranking test). */
export function shareCommands(): PaletteCommand[] {
  return [...fixed, ...dynamic()];
}

let installed = false;

export function installShareCommands(): void {
  if (installed) return;
  installed = true;
  const sync = () => registerCommands('share', shareCommands());
  sync();
  subscribe(share, sync);
  subscribe(session, sync);
  subscribe(leases, sync);
  watchShareNotices();
  void loadAllShare();
}
