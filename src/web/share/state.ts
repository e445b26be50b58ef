// Teams in the console (src/shared/share.ts): the groups the user owns, the groups they belong to,
// boards shared with them, and shells shared into their groups. Share notifications from the realtime
// channel (share.*) become toasts and reload these lists, so a member's lists follow the owner's
// changes without a reload. Presence of a joined shell lives on its LiveShell (terminal/live-shell.ts).
import { proxy } from 'valtio';
import type { ResponseOf } from '#shared/http.ts';
import { Destinations, userNotification } from '#shared/realtime.ts';
import { type ShareGrant, ShareNotice, shareCalls } from '#shared/share.ts';
import { call } from '#web/api/http.ts';
import { idle, keyOf, messageOf, type Req, track } from '#web/boards/store.ts';
import { t } from '#web/i18n/i18n.ts';
import { realtime } from '#web/realtime/client.ts';
import { notify } from '#web/state/notices.ts';

const byName = <N extends (typeof shareCalls)[number]['name']>(name: N) =>
  shareCalls.find((c) => c.name === name) as Extract<(typeof shareCalls)[number], { name: N }>;

export const ShareCalls = {
  fetchShareInfo: byName('fetchShareInfo'),
  fetchGroupInfo: byName('fetchGroupInfo'),
  fetchShareDevice: byName('fetchShareDevice'),
  addShareGroup: byName('addShareGroup'),
  rmShareGroup: byName('rmShareGroup'),
  addShareUser: byName('addShareUser'),
  rmShareUser: byName('rmShareUser'),
  setGroupDevices: byName('setGroupDevices'),
  setGroupGrants: byName('setGroupGrants'),
  fetchJoinableShells: byName('fetchJoinableShells'),
  shellInvite: byName('shellInvite'),
  shellUninvite: byName('shellUninvite'),
  shellGrantInput: byName('shellGrantInput'),
  shellRevokeGuest: byName('shellRevokeGuest'),
} as const;

export type OwnedList = ResponseOf<typeof ShareCalls.fetchShareInfo>;
export type MemberList = ResponseOf<typeof ShareCalls.fetchGroupInfo>;
export type SharedList = ResponseOf<typeof ShareCalls.fetchShareDevice>;
export type JoinableList = ResponseOf<typeof ShareCalls.fetchJoinableShells>;

export const share = proxy({
  owned: idle<OwnedList>() as Req<OwnedList>,
  memberOf: idle<MemberList>() as Req<MemberList>,
  shared: idle<SharedList>() as Req<SharedList>,
  joinable: idle<JoinableList>() as Req<JoinableList>,
  /** The joined shell shown in the join dialog, if any. */
  joined: null as null | { clientId: string; hostName: string; serverName: string },
});

export const loadOwned = () =>
  track(
    () => share.owned,
    (r) => {
      share.owned = r;
    },
    () => call(ShareCalls.fetchShareInfo, {}, { silent: true }),
  );
export const loadMemberOf = () =>
  track(
    () => share.memberOf,
    (r) => {
      share.memberOf = r;
    },
    () => call(ShareCalls.fetchGroupInfo, {}, { silent: true }),
  );
export const loadShared = () =>
  track(
    () => share.shared,
    (r) => {
      share.shared = r;
    },
    () => call(ShareCalls.fetchShareDevice, {}, { silent: true }),
  );
export const loadJoinable = () =>
  track(
    () => share.joinable,
    (r) => {
      share.joinable = r;
    },
    () => call(ShareCalls.fetchJoinableShells, {}, { silent: true }),
  );

export function loadAllShare(): Promise<unknown> {
  return Promise.all([loadOwned(), loadMemberOf(), loadShared(), loadJoinable()]);
}

/** The worded error of a failed share call: its stable key through errors/share, else the server's text. */
export function shareErrorText(err: unknown): string {
  const key = keyOf(err);
  if (key) {
    const worded = t(`share:errors.${key}`, { defaultValue: '' });
    if (worded) return worded;
    return t(`errors:${key}`, { defaultValue: messageOf(err) });
  }
  return messageOf(err);
}

/** Runs a share action: a success toast, or the worded error; reloads the lists either way. */
async function act<T>(run: () => Promise<T>, success: string | null): Promise<T | null> {
  try {
    const out = await run();
    if (success) notify('success', success);
    return out;
  } catch (err) {
    notify('error', shareErrorText(err));
    return null;
  } finally {
    void loadAllShare();
  }
}

export const createGroup = (groupName: string) =>
  act(
    () => call(ShareCalls.addShareGroup, { groupName }, { silent: true }),
    t('share:done.created', { name: groupName.trim() }),
  );
export const deleteGroup = (groupName: string) =>
  act(
    () => call(ShareCalls.rmShareGroup, { groupName }, { silent: true }),
    t('share:done.deleted', { name: groupName }),
  );

/** Adds by user id, or by phone when the text looks like a phone number. Throws the error for the form. */
export async function addMember(groupName: string, who: string): Promise<void> {
  const v = who.trim();
  const isPhone = /^\+?[0-9][0-9 -]{5,}$/.test(v);
  try {
    const u = await call(
      ShareCalls.addShareUser,
      isPhone ? { phone: v, userId: '', groupName } : { userId: v, groupName },
      { silent: true },
    );
    notify('success', t('share:done.added', { user: u.username, name: groupName }));
  } finally {
    void loadAllShare();
  }
}

export const removeMember = (groupName: string, userId: string, username: string) =>
  act(
    () => call(ShareCalls.rmShareUser, { groupName, userId }, { silent: true }),
    t('share:done.removed', { user: username, name: groupName }),
  );
export const setDevices = (groupName: string, devices: string[]) =>
  act(
    () => call(ShareCalls.setGroupDevices, { groupName, devices }, { silent: true }),
    t('share:done.devices', { name: groupName }),
  );
export const setGrants = (groupName: string, grants: ShareGrant[]) =>
  act(
    () => call(ShareCalls.setGroupGrants, { groupName, grants }, { silent: true }),
    t('share:done.grants', { name: groupName }),
  );

export const inviteShell = (applyId: string, clientId: string, groupName: string) =>
  act(
    () => call(ShareCalls.shellInvite, { applyId, clientId, groupName }, { silent: true }),
    t('share:done.invited', { name: groupName }),
  );
export const uninviteShell = (applyId: string, clientId: string) =>
  act(
    () => call(ShareCalls.shellUninvite, { applyId, clientId }, { silent: true }),
    t('share:done.uninvited'),
  );
export const grantInput = (applyId: string, clientId: string, userId: string, input: boolean) =>
  act(() => call(ShareCalls.shellGrantInput, { applyId, clientId, userId, input }, { silent: true }), null);
export const revokeGuest = (applyId: string, clientId: string, userId: string) =>
  act(() => call(ShareCalls.shellRevokeGuest, { applyId, clientId, userId }, { silent: true }), null);

/** The toast of a share notification, or null for kinds that only refresh lists. */
export function shareNoticeText(kind: string, data: Record<string, unknown>): string | null {
  const p = {
    group: String(data.groupName ?? ''),
    owner: String(data.ownerName ?? ''),
    host: String(data.hostName ?? ''),
    name: String(data.serverName ?? data.deviceId ?? ''),
  };
  switch (kind) {
    case ShareNotice.added:
      return t('share:notice.added', p);
    case ShareNotice.removed:
      return t('share:notice.removed', p);
    case ShareNotice.boardAdded:
      return t('share:notice.boardAdded', p);
    case ShareNotice.boardRemoved:
      return t('share:notice.boardRemoved', p);
    case ShareNotice.boardEnded:
      return t('share:notice.boardEnded', p);
    case ShareNotice.shellInvited:
      return t('share:notice.shellInvited', p);
    case ShareNotice.inputChanged:
      return t(data.input ? 'share:notice.inputGranted' : 'share:notice.inputRevoked', p);
    default:
      return null;
  }
}

let watching: { unsubscribe(): void } | null = null;

/** Once per tab: share notifications become toasts and refresh the lists. */
export function watchShareNotices(): void {
  if (watching) return;
  watching = realtime.subscribe(Destinations.userNotifications, (m) => {
    let body: unknown = null;
    try {
      body = JSON.parse(m.body);
    } catch {
      return;
    }
    const parsed = userNotification.safeParse(body);
    if (!parsed.success || !parsed.data.kind.startsWith('share.')) return;
    const text = shareNoticeText(parsed.data.kind, parsed.data.data);
    if (text) notify(parsed.data.level === 'warning' ? 'error' : 'info', text, 8000);
    void loadAllShare();
  });
}
