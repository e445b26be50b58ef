// Teams: share groups, shared boards and joined shells (spec sections 1, 3, 7; issue 12).
//
// A share group belongs to one owner (the user who created it; names are unique per owner). It holds
// members (users of any organisation the owner belongs to, added by userId or by phone; an owner whose
// role holds `device.share_any_org` may add any active user: sharing across organisations, which an
// administrator grants with a role) and devices: boards the
// owner holds, each recorded with the owner's *lease* on it, so a board leaves every group the moment
// that lease ends (release or expiry) and never comes back with a later lease by itself.
//
// Access rule (the one place: src/server/share/share.repo.ts `sharedLease`): a user may use a board
// they do not hold when they are a member of a group of the board's holder that holds the board's live
// lease. Such a member calls `applyDevice {deviceId}` like the holder and gets an apply of their own on
// the owner's lease; with it every call that needs an apply (shells, serial console, files, uploads,
// downloads, plugins, power reset), the load series and the realtime board topic work as for the owner
// — on that board only, never on the owner's other boards. To anyone else (a removed member, a member of
// another group, a user of another organisation, a guessed group name or device id) these answer
// exactly like a board or group that does not exist: `device.not_held`, `apply.*`,
// `share.group_not_found`, `resource.not_found`.
//
// Grants: renaming and unlocking (ending) a lease, and re-sharing (groups are their owner's), always
// stay with the owner. Per group the owner may grant (`setGroupGrants`):
//   - `flash`: members may start flash jobs on the group's boards (src/server/flash `flashGrant`);
//   - `renew`: members may renew the owner's lease on the group's boards (`renewalDevice` with the
//     owner's serverName, as fetch-share-device answers it), within the same limits as the owner.
//
// Revocation is immediate: removing a member, removing a board from a group (setGroupDevices without
// it), deleting the group, or the owner's lease ending closes the affected member's applies on that
// board (close reason `share.revoked`; a lease end keeps its own `released`/`expired`), which through
// the same path as a lease end closes their shells and serial consoles (`event:closed
// reason:share.revoked`), cuts their realtime board subscriptions, stops their uploads and downloads in
// flight (answered `apply.closed`), and removes them from joined shells. A member who still reaches the
// board through another group of the same owner keeps it.
//
// Notifications (realtime `/user/queue/notifications`, kinds in ShareNotice) reach every affected user
// so the console refreshes its lists without a reload.
//
// Joined shells: the user whose apply opened a shell (its host: the owner or a member) invites one of
// the groups holding that board into it (`shellInvite`). Members of that group (and its owner) who have
// an apply on the board may SUBSCRIBE to /topic/shell/{clientId} like the host: they see its output,
// read-only; the host grants or takes back input per user (`shellGrantInput`). Every viewer receives
// presence events (MESSAGE `event:presence`, JSON body SharePresence) whenever someone joins, leaves
// or gains input. A guest leaves by unsubscribing; the host removes one guest (`shellRevokeGuest`,
// `event:closed reason:share.guest_removed` for that guest only) or stops sharing
// (`shellUninvite`, every guest gets `reason:share.uninvited`). The host's shell itself is unaffected.
import { z } from 'zod';
import { defineCall } from './http.ts';
import { idString } from './ids.ts';

export const SHARE_LIMITS = {
  groupNameMax: 64,
  groupsPerOwner: 50,
  membersPerGroup: 100,
  devicesPerGroup: 50,
} as const;

export const ShareGrant = { flash: 'flash', renew: 'renew' } as const;
export type ShareGrant = (typeof ShareGrant)[keyof typeof ShareGrant];
export const shareGrant = z.enum([ShareGrant.flash, ShareGrant.renew]);

/** Stable error keys (worded by locales/<lng>/share.json under `errors`). */
export const ShareErrorKey = {
  /** No group of the caller by that name (also a guessed name, or someone else's group). */
  groupNotFound: 'share.group_not_found',
  groupExists: 'share.group_exists',
  /** No user of the caller's organisation with that id or phone. */
  userNotFound: 'share.user_not_found',
  /** The owner tried to add themselves. */
  self: 'share.self',
  userExists: 'share.user_exists',
  notMember: 'share.not_member',
  /** A device in set-group-devices is not held by the caller (data.devices lists them). */
  deviceNotHeld: 'share.device_not_held',
  tooMany: 'share.too_many',
  /** The shell is not the caller's, not on this apply, or not shared. */
  shellNotFound: 'share.shell_not_found',
  /** The group does not hold the shell's board. */
  groupLacksBoard: 'share.group_lacks_board',
  /** Neither userId nor phone was given. */
  userMissing: 'share.user_missing',
} as const;

/** Why a member's session on a shared board ended (ShellCloseReason values too). */
export const ShareCloseReason = {
  revoked: 'share.revoked',
  guestRemoved: 'share.guest_removed',
  uninvited: 'share.uninvited',
} as const;

/** Kinds of user notifications of this feature; data carries groupName, ownerName, deviceId, serverName. */
export const ShareNotice = {
  /** You were added to a group. */
  added: 'share.added',
  /** You were removed from a group, or it was deleted. */
  removed: 'share.removed',
  boardAdded: 'share.board_added',
  boardRemoved: 'share.board_removed',
  /** The owner's lease on a shared board ended. */
  boardEnded: 'share.board_ended',
  /** A host invited your group into a shell: data has clientId, deviceId, hostName. */
  shellInvited: 'share.shell_invited',
  shellUninvited: 'share.shell_uninvited',
  /** Your input on a joined shell was granted or taken back: data.input. */
  inputChanged: 'share.input_changed',
  /** The owner changed a group (members, boards, grants): owners' and members' lists refresh. */
  changed: 'share.changed',
} as const;

// Control characters (C0, DEL, C1) and Unicode format characters (bidi overrides, zero-width) make a
// name that reads differently from what it is.
const hidden = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

export const groupName = z
  .string()
  .trim()
  .min(1, 'required')
  .max(SHARE_LIMITS.groupNameMax, `at most ${SHARE_LIMITS.groupNameMax} characters`)
  .refine((s) => !hidden.test(s), 'must not contain control or invisible characters');

const userIdField = idString({ max: 64 });
const deviceIdField = idString({ max: 128 });

export const shareUser = z.object({
  userId: z.string(),
  username: z.string(),
  displayName: z.string(),
  /** Masked except its last four digits; null when the user has none. */
  phone: z.string().nullable(),
  addedAt: z.string(),
});
export type ShareUser = z.infer<typeof shareUser>;

export const activeUser = z.object({ userId: z.string(), username: z.string() });

export const sharedBoard = z.object({
  deviceId: z.string(),
  serverName: z.string(),
  boardName: z.string(),
  model: z.string(),
  boardState: z.string(),
  endsAt: z.string(),
  remainingMs: z.number(),
  /** Users with an open apply on this board now (owner included when they have one). */
  activeUsers: z.array(activeUser),
});
export type SharedBoard = z.infer<typeof sharedBoard>;

export const ownedGroup = z.object({
  groupName: z.string(),
  createdAt: z.string(),
  grants: z.array(shareGrant),
  users: z.array(shareUser),
  devices: z.array(sharedBoard),
});
export type OwnedGroup = z.infer<typeof ownedGroup>;

export const memberGroup = z.object({
  groupName: z.string(),
  ownerId: z.string(),
  ownerName: z.string(),
  grants: z.array(shareGrant),
  /** Fellow members (no phone numbers). */
  users: z.array(activeUser),
  devices: z.array(sharedBoard),
});
export type MemberGroup = z.infer<typeof memberGroup>;

export const sharedDevice = sharedBoard.extend({
  ownerId: z.string(),
  ownerName: z.string(),
  groups: z.array(z.string()),
  grants: z.array(shareGrant),
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  /** The caller's open apply on it, if any (the console resumes it). */
  applyId: z.string().nullable(),
});
export type SharedDevice = z.infer<typeof sharedDevice>;

export const joinableShell = z.object({
  clientId: z.string(),
  deviceId: z.string(),
  serverName: z.string(),
  groupName: z.string(),
  hostId: z.string(),
  hostName: z.string(),
  shellType: z.enum(['login', 'serial']),
  invitedAt: z.string(),
  /** True for the host's own shared shells. */
  mine: z.boolean(),
});
export type JoinableShell = z.infer<typeof joinableShell>;

/** Body of `event:presence` MESSAGEs on /topic/shell/{id}. */
export const sharePresence = z.object({
  shellId: z.string(),
  users: z.array(
    z.object({ userId: z.string(), username: z.string(), host: z.boolean(), input: z.boolean() }),
  ),
});
export type SharePresence = z.infer<typeof sharePresence>;

const groupOnly = z.object({ groupName });
const shellRef = z.object({ applyId: idString({ max: 128 }), clientId: idString({ max: 128 }) });

/** Adds members from every organisation, not only the owner's (see the header). */
export const SHARE_ANY_ORG_PERM = 'device.share_any_org';

const VIEW = ['device.view_share'] as const;
const ADD = ['device.add_share'] as const;
const CHANGE = ['device.change_share'] as const;
const DEL = ['device.del_share'] as const;

export const shareCalls = [
  defineCall({
    name: 'fetchShareInfo',
    method: 'GET',
    path: '/api/device/share/fetch-share-info',
    perms: VIEW,
    response: z.object({ now: z.string(), groups: z.array(ownedGroup) }),
    summary: 'The groups the caller owns: members, boards (with who is on each now) and grants',
  }),
  defineCall({
    name: 'fetchGroupInfo',
    method: 'GET',
    path: '/api/device/share/fetch-group-info',
    perms: VIEW,
    response: z.object({ now: z.string(), groups: z.array(memberGroup) }),
    summary: 'The groups the caller is a member of, with their owner, fellow members and boards',
  }),
  defineCall({
    name: 'fetchShareDevice',
    method: 'GET',
    path: '/api/device/share/fetch-share-device',
    perms: VIEW,
    response: z.object({ now: z.string(), items: z.array(sharedDevice) }),
    summary: 'Boards shared with the caller, with owner, time left and the caller’s open apply',
  }),
  defineCall({
    name: 'addShareGroup',
    method: 'POST',
    path: '/api/device/share/add-share-group',
    perms: ADD,
    request: groupOnly,
    response: ownedGroup,
    summary: 'Create a group',
  }),
  defineCall({
    name: 'rmShareGroup',
    method: 'POST',
    path: '/api/device/share/rm-share-group',
    perms: DEL,
    request: groupOnly,
    response: z.object({ groupName: z.string(), revokedApplies: z.number() }),
    summary: 'Delete a group: its members lose its boards at once',
  }),
  defineCall({
    name: 'addShareUser',
    method: 'POST',
    path: '/api/device/share/add-share-user',
    perms: CHANGE,
    request: z
      .object({
        userId: z.union([userIdField, z.literal('')]).nullish(),
        phone: z
          .string()
          .trim()
          .max(32)
          .regex(/^\+?[0-9 -]*$/, 'digits only')
          .nullish(),
        groupName,
      })
      .refine((v) => Boolean(v.userId || v.phone), {
        message: 'userId or phone is required',
        path: ['userId'],
      }),
    response: shareUser,
    summary: 'Add a user of the caller’s organisation to a group, by userId or phone',
  }),
  defineCall({
    name: 'rmShareUser',
    method: 'POST',
    path: '/api/device/share/rm-share-user',
    perms: CHANGE,
    request: z.object({ userId: userIdField, groupName }),
    response: z.object({ groupName: z.string(), userId: z.string(), revokedApplies: z.number() }),
    summary: 'Remove a member: their applies, shells, transfers and subscriptions on its boards end at once',
  }),
  defineCall({
    name: 'shareUserInfo',
    method: 'POST',
    path: '/api/device/share/share-user-info',
    perms: VIEW,
    readOnly: true,
    request: groupOnly,
    response: z.object({ groupName: z.string(), users: z.array(shareUser) }),
    summary: 'The members of one of the caller’s groups',
  }),
  defineCall({
    name: 'setGroupDevices',
    method: 'POST',
    path: '/api/device/share/set-group-devices',
    perms: CHANGE,
    request: z.object({
      groupName,
      devices: z.array(deviceIdField).max(SHARE_LIMITS.devicesPerGroup),
    }),
    response: ownedGroup,
    summary: 'Set the boards of a group (boards the caller holds); boards left out are revoked at once',
  }),
  defineCall({
    name: 'setGroupGrants',
    method: 'POST',
    path: '/api/device/share/set-group-grants',
    perms: CHANGE,
    request: z.object({ groupName, grants: z.array(shareGrant).max(8) }),
    response: ownedGroup,
    summary: 'Set what members may do beyond using the boards (flash, renew)',
  }),
  defineCall({
    name: 'fetchJoinableShells',
    method: 'GET',
    path: '/api/device/share/fetch-joinable-shells',
    perms: VIEW,
    response: z.object({ items: z.array(joinableShell) }),
    summary: 'Shells shared into the caller’s groups (and the caller’s own shared shells)',
  }),
  defineCall({
    name: 'shellInvite',
    method: 'POST',
    path: '/api/device/share/shell-invite',
    perms: VIEW,
    needsApply: true,
    request: shellRef.extend({ groupName: z.string().trim().min(1).max(SHARE_LIMITS.groupNameMax) }),
    response: joinableShell,
    summary: 'Invite a group holding this board into one of the caller’s shells (read-only until granted)',
  }),
  defineCall({
    name: 'shellUninvite',
    method: 'POST',
    path: '/api/device/share/shell-uninvite',
    perms: VIEW,
    needsApply: true,
    request: shellRef,
    response: z.null(),
    summary: 'Stop sharing a shell: every guest leaves it',
  }),
  defineCall({
    name: 'shellGrantInput',
    method: 'POST',
    path: '/api/device/share/shell-grant-input',
    perms: VIEW,
    needsApply: true,
    request: shellRef.extend({ userId: userIdField, input: z.boolean() }),
    response: z.null(),
    summary: 'Let a guest type in the shell, or take it back',
  }),
  defineCall({
    name: 'shellRevokeGuest',
    method: 'POST',
    path: '/api/device/share/shell-revoke-guest',
    perms: VIEW,
    needsApply: true,
    request: shellRef.extend({ userId: userIdField }),
    response: z.null(),
    summary: 'Remove one guest from a shared shell',
  }),
] as const;
