// Share groups and what they grant. Lifecycle of a member's access: the owner adds them to a group and
// puts boards they hold into it → the member's applyDevice on such a board opens an apply of their own
// on the owner's lease (LeaseService.sharedLease) → shells, files, load and the board topic follow that
// apply like the owner's → removing the member or the board, deleting the group, or the owner's lease
// ending closes the member's applies (`share.revoked`, or the lease's own reason), which closes their
// shells, cuts their board subscriptions and their transfers in flight on every instance (the apply
// close path, rt.ctl closeApply), and removes them from joined shells (rt.ctl kickGuest).
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AuthUser } from '#server/auth/user-context.ts';
import { AppError, badRequest, conflict, notFound } from '#server/errors.ts';
import type { ResolvedApply } from '#server/http/handlers.ts';
import { type BoardChange, closeShells, notifyUser } from '#server/leases/collaborators.ts';
import { toIso } from '#server/leases/leases.repo.ts';
import type { ShellManager } from '#server/shells/manager.ts';
import { ResultCode } from '#shared/codes.ts';
import { hasPermission } from '#shared/permissions.ts';
import { ShellCloseReason } from '#shared/realtime.ts';
import {
  type JoinableShell,
  type MemberGroup,
  type OwnedGroup,
  SHARE_ANY_ORG_PERM,
  SHARE_LIMITS,
  ShareCloseReason,
  type SharedBoard,
  type SharedDevice,
  ShareErrorKey,
  type ShareGrant,
  ShareNotice,
  type ShareUser,
} from '#shared/share.ts';
import { type DeviceRow, type GroupRow, type MemberRow, ShareRepo } from './share.repo.ts';

const groupNotFound = () => notFound('You have no group by that name', ShareErrorKey.groupNotFound);
const shellNotFound = () => notFound('No such shell of yours', ShareErrorKey.shellNotFound);

function maskPhone(phone: string | null): string | null {
  if (!phone) return null;
  return phone.length <= 4 ? '****' : `${'*'.repeat(Math.min(phone.length - 4, 7))}${phone.slice(-4)}`;
}

export class ShareService {
  readonly repo: ShareRepo;

  constructor(private readonly app: FastifyInstance) {
    this.repo = new ShareRepo(app.storage.db);
  }

  /** The realtime shells, when that feature runs (lifecycle-only test apps have none, or a stand-in). */
  private shells(): Partial<ShellManager> | undefined {
    return (this.app as { shells?: Partial<ShellManager> }).shells;
  }

  private now(): Date {
    return this.app.clock.now();
  }

  private async ownGroup(owner: AuthUser, name: string): Promise<GroupRow> {
    const g = await this.repo.group(owner.id, name);
    if (!g) throw groupNotFound();
    return g;
  }

  private notify(
    userIds: Iterable<string>,
    kind: string,
    data: Record<string, unknown>,
    level: 'info' | 'warning' = 'info',
  ) {
    const at = this.now().toISOString();
    return Promise.all(
      [...new Set(userIds)].map((u) =>
        notifyUser(this.app, u, { id: crypto.randomUUID(), kind, at, level, data }),
      ),
    );
  }

  // ---- views

  private board(
    d: DeviceRow,
    active: { lease_id: string; user_id: string; username: string }[],
    now: Date,
  ): SharedBoard {
    const endsAt = new Date(d.ends_at);
    return {
      deviceId: d.board_id,
      serverName: d.server_name,
      boardName: d.board_name,
      model: d.model,
      boardState: d.board_state,
      endsAt: endsAt.toISOString(),
      remainingMs: Math.max(0, endsAt.getTime() - now.getTime()),
      activeUsers: active
        .filter((a) => a.lease_id === d.lease_id)
        .map((a) => ({ userId: a.user_id, username: a.username })),
    };
  }

  private user(m: MemberRow): ShareUser {
    return {
      userId: m.user_id,
      username: m.username,
      displayName: m.display_name,
      phone: maskPhone(m.phone),
      addedAt: toIso(m.added_at)!,
    };
  }

  private async owned(groups: GroupRow[], now: Date): Promise<OwnedGroup[]> {
    const ids = groups.map((g) => g.id);
    const [members, devices] = await Promise.all([this.repo.members(ids), this.repo.devices(ids, now)]);
    const active = await this.repo.activeUsers([...new Set(devices.map((d) => d.lease_id))]);
    return groups.map((g) => ({
      groupName: g.name,
      createdAt: toIso(g.created_at)!,
      grants: g.grants ?? [],
      users: members.filter((m) => m.group_id === g.id).map((m) => this.user(m)),
      devices: devices.filter((d) => d.group_id === g.id).map((d) => this.board(d, active, now)),
    }));
  }

  private async ownedOne(ownerId: string, name: string): Promise<OwnedGroup> {
    const g = await this.repo.group(ownerId, name);
    if (!g) throw groupNotFound();
    return (await this.owned([g], this.now()))[0];
  }

  async fetchShareInfo(user: AuthUser) {
    const now = this.now();
    return { now: now.toISOString(), groups: await this.owned(await this.repo.ownedGroups(user.id), now) };
  }

  async fetchGroupInfo(user: AuthUser) {
    const now = this.now();
    const groups = await this.repo.memberGroups(user.id);
    const ids = groups.map((g) => g.id);
    const [members, devices] = await Promise.all([this.repo.members(ids), this.repo.devices(ids, now)]);
    const active = await this.repo.activeUsers([...new Set(devices.map((d) => d.lease_id))]);
    const out: MemberGroup[] = groups.map((g) => ({
      groupName: g.name,
      ownerId: g.owner_id,
      ownerName: g.owner_name,
      grants: g.grants ?? [],
      users: members
        .filter((m) => m.group_id === g.id)
        .map((m) => ({ userId: m.user_id, username: m.username })),
      devices: devices.filter((d) => d.group_id === g.id).map((d) => this.board(d, active, now)),
    }));
    return { now: now.toISOString(), groups: out };
  }

  async fetchShareDevice(user: AuthUser) {
    const now = this.now();
    const rows = await this.repo.sharedDevices(user.id, now);
    const active = await this.repo.activeUsers(rows.map((r) => r.lease_id));
    const items: SharedDevice[] = rows.map((r) => ({
      ...this.board(r, active, now),
      ownerId: r.owner_id,
      ownerName: r.owner_name,
      groups: r.groups,
      grants: r.grants ?? [],
      attributes: r.attributes ?? {},
      applyId: r.apply_id,
    }));
    return { now: now.toISOString(), items };
  }

  // ---- groups

  async addGroup(user: AuthUser, name: string): Promise<OwnedGroup> {
    if ((await this.repo.countGroups(user.id)) >= SHARE_LIMITS.groupsPerOwner) {
      throw conflict(`At most ${SHARE_LIMITS.groupsPerOwner} groups per owner`, ShareErrorKey.tooMany);
    }
    const g = await this.repo.createGroup(user.id, name, this.now());
    if (g === 'exists') {
      throw new AppError(
        409,
        ResultCode.Conflict,
        ShareErrorKey.groupExists,
        `You already have a group named "${name}"`,
        [{ path: 'groupName', message: 'already used' }],
      );
    }
    return (await this.owned([g], this.now()))[0];
  }

  async rmGroup(user: AuthUser, name: string) {
    const g = await this.ownGroup(user, name);
    const shells = await this.repo.shellsOfGroup(g.id);
    const { userIds, boardIds } = await this.repo.deleteGroup(g.id, this.now());
    for (const s of shells) this.shells()?.kickGuests?.(s.shell_id, ShareCloseReason.uninvited);
    const revoked = await this.revoke(userIds, boardIds);
    await this.notify(
      userIds,
      ShareNotice.removed,
      { groupName: g.name, ownerName: user.username },
      'warning',
    );
    return { groupName: g.name, revokedApplies: revoked };
  }

  async addUser(
    user: AuthUser,
    input: { userId?: string | null; phone?: string | null; groupName: string },
  ): Promise<ShareUser> {
    const g = await this.ownGroup(user, input.groupName);
    // Sharing across organisations: a role with SHARE_ANY_ORG_PERM reaches every user; without it, the
    // people of the owner's organisations (all of them, not only the current one).
    const target = await this.repo.findUser(user.id, hasPermission(SHARE_ANY_ORG_PERM, user.perms), {
      userId: input.userId || null,
      phone: input.phone || null,
    });
    if (!target) {
      const field = input.userId ? 'userId' : 'phone';
      throw new AppError(
        404,
        ResultCode.NotFound,
        ShareErrorKey.userNotFound,
        input.userId
          ? 'No user of your organisations has this id'
          : 'No user of your organisations has this phone number',
        [{ path: field, message: 'no such user in your organisations' }],
      );
    }
    if (target.id === user.id) {
      throw badRequest('You own this group; add your teammates', ShareErrorKey.self, [
        { path: input.userId ? 'userId' : 'phone', message: 'is you' },
      ]);
    }
    if ((await this.repo.countMembers(g.id)) >= SHARE_LIMITS.membersPerGroup) {
      throw conflict(`At most ${SHARE_LIMITS.membersPerGroup} members per group`, ShareErrorKey.tooMany);
    }
    if (!(await this.repo.addMember(g.id, target.id, this.now()))) {
      throw new AppError(
        409,
        ResultCode.Conflict,
        ShareErrorKey.userExists,
        `${target.username} is already in this group`,
        [{ path: input.userId ? 'userId' : 'phone', message: 'already a member' }],
      );
    }
    const [m] = (await this.repo.members([g.id])).filter((x) => x.user_id === target.id);
    await this.notify([target.id], ShareNotice.added, { groupName: g.name, ownerName: user.username });
    return this.user(m);
  }

  async rmUser(user: AuthUser, input: { userId: string; groupName: string }) {
    const g = await this.ownGroup(user, input.groupName);
    if (!(await this.repo.removeMember(g.id, input.userId))) {
      throw notFound('No such member in this group', ShareErrorKey.notMember);
    }
    const boards = (await this.repo.devices([g.id], this.now())).map((d) => d.board_id);
    // Joined shells of this group: the removed member leaves them even when another group keeps the board.
    for (const s of await this.repo.shellsOfGroup(g.id))
      this.shells()?.kickGuests?.(s.shell_id, ShareCloseReason.revoked, input.userId);
    const revoked = await this.revoke([input.userId], boards);
    await this.notify(
      [input.userId],
      ShareNotice.removed,
      { groupName: g.name, ownerName: user.username },
      'warning',
    );
    return { groupName: g.name, userId: input.userId, revokedApplies: revoked };
  }

  async userInfo(user: AuthUser, name: string) {
    const g = await this.ownGroup(user, name);
    return { groupName: g.name, users: (await this.repo.members([g.id])).map((m) => this.user(m)) };
  }

  async setDevices(user: AuthUser, input: { groupName: string; devices: string[] }): Promise<OwnedGroup> {
    const g = await this.ownGroup(user, input.groupName);
    const now = this.now();
    const wanted = [...new Set(input.devices)];
    const held = await this.repo.heldLeases(user.id, wanted, now);
    const missing = wanted.filter((d) => !held.has(d));
    if (missing.length) {
      // The same answer for a board someone else holds and one that does not exist.
      throw new AppError(
        400,
        ResultCode.BadRequest,
        ShareErrorKey.deviceNotHeld,
        'You can share only boards you hold',
        missing.map((d) => ({ path: `devices.${wanted.indexOf(d)}`, message: 'not a board you hold' })),
        undefined,
        { devices: missing },
      );
    }
    const { added, removed } = await this.repo.setDevices(
      g.id,
      wanted.map((d) => ({ boardId: d, leaseId: held.get(d)! })),
      now,
    );
    const members = (await this.repo.members([g.id])).map((m) => m.user_id);
    if (removed.length) {
      const shells = await this.repo.shellsOfGroup(g.id, removed);
      for (const s of shells) this.shells()?.kickGuests?.(s.shell_id, ShareCloseReason.revoked);
      await this.repo.dropShells(shells.map((s) => s.shell_id));
      await this.revoke(members, removed);
      await this.notify(
        members,
        ShareNotice.boardRemoved,
        { groupName: g.name, ownerName: user.username, devices: removed },
        'warning',
      );
    }
    if (added.length) {
      await this.notify(members, ShareNotice.boardAdded, {
        groupName: g.name,
        ownerName: user.username,
        devices: added,
      });
    }
    return this.ownedOne(user.id, g.name);
  }

  async setGrants(user: AuthUser, input: { groupName: string; grants: ShareGrant[] }): Promise<OwnedGroup> {
    const g = await this.ownGroup(user, input.groupName);
    await this.repo.setGrants(g.id, input.grants);
    const members = (await this.repo.members([g.id])).map((m) => m.user_id);
    await this.notify(members, ShareNotice.changed, {
      groupName: g.name,
      ownerName: user.username,
      grants: input.grants,
    });
    return this.ownedOne(user.id, g.name);
  }

  // ---- revocation

  /**
   * Ends the access of these users to these boards where the access rule no longer grants it: their
   * applies close (`share.revoked`) and with them, on every instance, their shells, board
   * subscriptions and transfers; they leave every joined shell on those boards. Answers how many
   * applies closed.
   */
  async revoke(userIds: readonly string[], boardIds: readonly string[]): Promise<number> {
    if (!userIds.length || !boardIds.length) return 0;
    const now = this.now();
    const closed = await this.repo.closeRevokedApplies(userIds, boardIds, ShareCloseReason.revoked, now);
    await closeShells(this.app, { applyIds: closed.map((c) => c.id) }, ShellCloseReason.shareRevoked);
    for (const u of userIds) {
      for (const b of boardIds) {
        if (await this.repo.sharedLease(u, b, now)) continue;
        this.shells()?.kickGuestFromBoard?.(u, b, ShareCloseReason.revoked);
      }
    }
    return closed.length;
  }

  /**
   * A board's lease ended (the lease feature closed every apply on it and its shells): the board
   * leaves its groups, and their members' and owners' lists are told.
   */
  async onBoardChange(c: BoardChange): Promise<void> {
    if (c.to !== 'resetting' && c.to !== 'idle') return;
    const ended = await this.repo.endedDevices(c.boardId, this.now());
    const groups = [...new Set(ended.map((e) => e.group_id))];
    if (!groups.length) return;
    const members = await this.repo.members(groups);
    const byGroup = new Map(ended.map((e) => [e.group_id, e]));
    for (const m of members) {
      const e = byGroup.get(m.group_id)!;
      await this.notify(
        [m.user_id],
        ShareNotice.boardEnded,
        { deviceId: c.boardId, serverName: e.server_name },
        'warning',
      );
    }
  }

  // ---- joined shells

  /** The caller's shell on the board of their apply (the host's), or "not found". */
  private async hostShell(user: AuthUser, apply: ResolvedApply, clientId: string) {
    const meta = await this.shells()?.describe?.(clientId);
    if (!meta || meta.ended || meta.userId !== user.id || meta.applyId !== apply.applyId)
      throw shellNotFound();
    return meta;
  }

  async joinable(user: AuthUser): Promise<{ items: JoinableShell[] }> {
    const rows = await this.repo.joinableShells(user.id, this.now());
    return {
      items: rows.map((r) => ({
        clientId: r.shell_id,
        deviceId: r.board_id,
        serverName: r.server_name,
        groupName: r.group_name,
        hostId: r.host_id,
        hostName: r.host_name,
        shellType: r.shell_type === 'serial' ? 'serial' : 'login',
        invitedAt: toIso(r.invited_at)!,
        mine: r.host_id === user.id,
      })),
    };
  }

  async invite(
    user: AuthUser,
    apply: ResolvedApply,
    input: { clientId: string; groupName: string },
  ): Promise<JoinableShell> {
    const meta = await this.hostShell(user, apply, input.clientId);
    const now = this.now();
    // The group is one the host owns or belongs to, and it holds this board's live lease.
    const groups = [
      ...(await this.repo.ownedGroups(user.id)).map((g) => ({ ...g, owner_name: user.username })),
      ...(await this.repo.memberGroups(user.id)),
    ].filter((g) => g.name === input.groupName);
    const devices = await this.repo.devices(
      groups.map((g) => g.id),
      now,
    );
    const hit = devices.find((d) => d.board_id === meta.deviceId && d.lease_id === apply.leaseId);
    if (!hit) {
      if (!groups.length) throw groupNotFound();
      throw notFound('This group does not hold the shell’s board', ShareErrorKey.groupLacksBoard);
    }
    const group = groups.find((g) => g.id === hit.group_id)!;
    const { previousGroup } = await this.repo.inviteShell({
      shellId: input.clientId,
      groupId: group.id,
      boardId: meta.deviceId,
      leaseId: apply.leaseId,
      hostId: user.id,
      hostApplyId: apply.applyId,
      shellType: meta.shellType,
      now,
    });
    if (previousGroup) this.shells()?.kickGuests?.(input.clientId, ShareCloseReason.uninvited);
    const audience = [group.owner_id, ...(await this.repo.members([group.id])).map((m) => m.user_id)].filter(
      (u) => u !== user.id,
    );
    await this.notify(audience, ShareNotice.shellInvited, {
      clientId: input.clientId,
      deviceId: meta.deviceId,
      serverName: hit.server_name,
      groupName: group.name,
      hostName: user.username,
    });
    return {
      clientId: input.clientId,
      deviceId: meta.deviceId,
      serverName: hit.server_name,
      groupName: group.name,
      hostId: user.id,
      hostName: user.username,
      shellType: meta.shellType,
      invitedAt: now.toISOString(),
      mine: true,
    };
  }

  private async hostSharedShell(user: AuthUser, apply: ResolvedApply, clientId: string) {
    const s = await this.repo.sharedShell(clientId);
    if (!s || s.host_id !== user.id || s.host_apply_id !== apply.applyId) throw shellNotFound();
    return s;
  }

  async uninvite(user: AuthUser, apply: ResolvedApply, clientId: string): Promise<null> {
    const s = await this.hostSharedShell(user, apply, clientId);
    await this.repo.uninviteShell(clientId);
    this.shells()?.kickGuests?.(clientId, ShareCloseReason.uninvited);
    const members = (await this.repo.members([s.group_id]))
      .map((m) => m.user_id)
      .filter((u) => u !== user.id);
    await this.notify(members, ShareNotice.shellUninvited, { clientId, deviceId: s.board_id });
    return null;
  }

  async grantInput(
    user: AuthUser,
    apply: ResolvedApply,
    input: { clientId: string; userId: string; input: boolean },
  ) {
    await this.hostSharedShell(user, apply, input.clientId);
    this.shells()?.grantInput?.(input.clientId, input.userId, input.input);
    await this.notify([input.userId], ShareNotice.inputChanged, {
      clientId: input.clientId,
      input: input.input,
      hostName: user.username,
    });
    return null;
  }

  async revokeGuest(user: AuthUser, apply: ResolvedApply, input: { clientId: string; userId: string }) {
    await this.hostSharedShell(user, apply, input.clientId);
    this.shells()?.kickGuests?.(input.clientId, ShareCloseReason.guestRemoved, input.userId);
    return null;
  }

  mayJoin(userId: string, shellId: string): Promise<boolean> {
    return this.repo.mayJoin(userId, shellId, this.now());
  }
}
