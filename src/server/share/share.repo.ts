// Storage of share groups, their members, the owner's leases they hold and the shells shared into
// them. The access rule of the whole feature is `sharedAccess` below: every question "may this user
// use this board through a share" is answered by it, in SQL, against live leases only.
import crypto from 'node:crypto';
import { type SQL, sql } from 'drizzle-orm';
import type { Db } from '#server/db/client.ts';
import { at, isUniqueViolation, rows } from '#server/leases/leases.repo.ts';
import type { ShareGrant } from '#shared/share.ts';

export interface GroupRow {
  id: string;
  owner_id: string;
  name: string;
  grants: ShareGrant[];
  created_at: Date | string;
}

export interface MemberRow {
  user_id: string;
  username: string;
  display_name: string;
  phone: string | null;
  added_at: Date | string;
}

export interface DeviceRow {
  group_id: string;
  lease_id: string;
  board_id: string;
  server_name: string;
  board_name: string;
  model: string;
  attributes: Record<string, string | number | boolean>;
  board_state: string;
  ends_at: Date | string;
  owner_id: string;
}

/** `user` may use lease `l` through a group of its holder that holds it and has them as a member. */
const sharedAccess = (user: SQL, grant?: ShareGrant) => sql`exists (
  select 1 from share_devices sd join share_groups g on g.id = sd.group_id
    join share_members m on m.group_id = g.id
   where sd.lease_id = l.id and g.owner_id = l.user_id and m.user_id = ${user}
     ${grant ? sql`and g.grants @> ${JSON.stringify([grant])}::jsonb` : sql``})`;

const liveLease = (now: Date) => sql`l.state = 'live' and l.ends_at > ${at(now)}`;

const list = (ids: readonly string[]) =>
  sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );

export class ShareRepo {
  constructor(private readonly db: Db) {}

  // ---- groups

  async group(ownerId: string, name: string): Promise<GroupRow | null> {
    const [g] = await rows<GroupRow>(
      this.db,
      sql`select id, owner_id, name, grants, created_at from share_groups where owner_id = ${ownerId} and name = ${name}`,
    );
    return g ?? null;
  }

  ownedGroups(ownerId: string): Promise<GroupRow[]> {
    return rows(
      this.db,
      sql`select id, owner_id, name, grants, created_at from share_groups where owner_id = ${ownerId}
           order by created_at, name`,
    );
  }

  memberGroups(userId: string) {
    return rows<GroupRow & { owner_name: string }>(
      this.db,
      sql`select g.id, g.owner_id, g.name, g.grants, g.created_at, u.username as owner_name
            from share_groups g join share_members m on m.group_id = g.id join users u on u.id = g.owner_id
           where m.user_id = ${userId} order by u.username, g.name`,
    );
  }

  async countGroups(ownerId: string): Promise<number> {
    const [r] = await rows<{ n: number }>(
      this.db,
      sql`select count(*)::int as n from share_groups where owner_id = ${ownerId}`,
    );
    return r.n;
  }

  async createGroup(ownerId: string, name: string, now: Date): Promise<GroupRow | 'exists'> {
    try {
      const [g] = await rows<GroupRow>(
        this.db,
        sql`insert into share_groups (id, owner_id, name, grants, created_at)
            values (${crypto.randomUUID()}, ${ownerId}, ${name}, '[]'::jsonb, ${at(now)})
            returning id, owner_id, name, grants, created_at`,
      );
      return g;
    } catch (err) {
      if (isUniqueViolation(err)) return 'exists';
      throw err;
    }
  }

  /** Deletes the group (members, devices, shared shells go with it); answers who and what it had. */
  async deleteGroup(groupId: string, now: Date): Promise<{ userIds: string[]; boardIds: string[] }> {
    return this.db.transaction(async (tx) => {
      const members = await rows<{ user_id: string }>(
        tx,
        sql`select user_id from share_members where group_id = ${groupId}`,
      );
      const boards = await rows<{ board_id: string }>(
        tx,
        sql`select sd.board_id from share_devices sd join leases l on l.id = sd.lease_id
             where sd.group_id = ${groupId} and ${liveLease(now)}`,
      );
      await tx.execute(sql`delete from share_groups where id = ${groupId}`);
      return { userIds: members.map((m) => m.user_id), boardIds: boards.map((b) => b.board_id) };
    });
  }

  async setGrants(groupId: string, grants: ShareGrant[]): Promise<void> {
    await this.db.execute(
      sql`update share_groups set grants = ${JSON.stringify([...new Set(grants)].sort())}::jsonb where id = ${groupId}`,
    );
  }

  // ---- members

  members(groupIds: readonly string[]) {
    if (!groupIds.length) return Promise.resolve([] as (MemberRow & { group_id: string })[]);
    return rows<MemberRow & { group_id: string }>(
      this.db,
      sql`select m.group_id, m.user_id, u.username, u.display_name, u.phone, m.added_at
            from share_members m join users u on u.id = m.user_id
           where m.group_id in (${list(groupIds)}) order by m.added_at, u.username`,
    );
  }

  /**
   * An active user by id or phone who shares an organisation with `ownerId` (any of the owner's, not only
   * the current one), or any active user when `anyOrg`; null for anyone else (nothing revealed).
   */
  async findUser(ownerId: string, anyOrg: boolean, by: { userId?: string | null; phone?: string | null }) {
    const where = by.userId ? sql`u.id = ${by.userId}` : sql`u.phone = ${by.phone ?? ''}`;
    const reach = anyOrg
      ? sql`true`
      : sql`exists (select 1 from memberships ms join memberships mine on mine.org_id = ms.org_id
                     where ms.user_id = u.id and mine.user_id = ${ownerId})`;
    const [u] = await rows<{ id: string; username: string }>(
      this.db,
      sql`select u.id, u.username from users u where ${where} and u.is_active and ${reach} limit 1`,
    );
    return u ?? null;
  }

  async countMembers(groupId: string): Promise<number> {
    const [r] = await rows<{ n: number }>(
      this.db,
      sql`select count(*)::int as n from share_members where group_id = ${groupId}`,
    );
    return r.n;
  }

  async addMember(groupId: string, userId: string, now: Date): Promise<boolean> {
    const r = await rows(
      this.db,
      sql`insert into share_members (group_id, user_id, added_at) values (${groupId}, ${userId}, ${at(now)})
          on conflict do nothing returning user_id`,
    );
    return r.length > 0;
  }

  async removeMember(groupId: string, userId: string): Promise<boolean> {
    const r = await rows(
      this.db,
      sql`delete from share_members where group_id = ${groupId} and user_id = ${userId} returning user_id`,
    );
    return r.length > 0;
  }

  // ---- devices

  /** The boards of the groups, through their owner's live lease only. */
  devices(groupIds: readonly string[], now: Date): Promise<DeviceRow[]> {
    if (!groupIds.length) return Promise.resolve([]);
    return rows(
      this.db,
      sql`select sd.group_id, sd.lease_id, sd.board_id, l.server_name, b.name as board_name, b.model, b.attributes,
                 b.state as board_state, l.ends_at, l.user_id as owner_id
            from share_devices sd join share_groups g on g.id = sd.group_id
            join leases l on l.id = sd.lease_id and l.user_id = g.owner_id join boards b on b.id = sd.board_id
           where sd.group_id in (${list(groupIds)}) and ${liveLease(now)}
           order by l.server_name, sd.board_id`,
    );
  }

  /** The owner's live leases on these boards (board id → lease id). */
  async heldLeases(ownerId: string, boardIds: readonly string[], now: Date): Promise<Map<string, string>> {
    if (!boardIds.length) return new Map();
    const r = await rows<{ id: string; board_id: string }>(
      this.db,
      sql`select l.id, l.board_id from leases l
           where l.user_id = ${ownerId} and l.board_id in (${list(boardIds)}) and ${liveLease(now)}`,
    );
    return new Map(r.map((x) => [x.board_id, x.id]));
  }

  /** Makes the group hold exactly these leases; answers the boards that left it. */
  async setDevices(
    groupId: string,
    leases: { leaseId: string; boardId: string }[],
    now: Date,
  ): Promise<{ added: string[]; removed: string[] }> {
    return this.db.transaction(async (tx) => {
      const keep = leases.map((l) => l.leaseId);
      const removed = await rows<{ board_id: string; lease_id: string }>(
        tx,
        sql`delete from share_devices where group_id = ${groupId}
              ${keep.length ? sql`and lease_id not in (${list(keep)})` : sql``}
            returning board_id, lease_id`,
      );
      const added: string[] = [];
      for (const l of leases) {
        const r = await rows(
          tx,
          sql`insert into share_devices (group_id, lease_id, board_id, added_at)
              values (${groupId}, ${l.leaseId}, ${l.boardId}, ${at(now)}) on conflict do nothing returning board_id`,
        );
        if (r.length) added.push(l.boardId);
      }
      // Leases that ended leave quietly; only live ones were shared "now".
      const live = await this.liveLeaseIds(
        tx,
        removed.map((r) => r.lease_id),
        now,
      );
      return { added, removed: removed.filter((r) => live.has(r.lease_id)).map((r) => r.board_id) };
    });
  }

  private async liveLeaseIds(tx: Pick<Db, 'execute'>, ids: string[], now: Date): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const r = await rows<{ id: string }>(
      tx,
      sql`select l.id from leases l where l.id in (${list(ids)}) and ${liveLease(now)}`,
    );
    return new Set(r.map((x) => x.id));
  }

  /** Users with an open apply on these leases now. */
  activeUsers(leaseIds: readonly string[]) {
    if (!leaseIds.length)
      return Promise.resolve([] as { lease_id: string; user_id: string; username: string }[]);
    return rows<{ lease_id: string; user_id: string; username: string }>(
      this.db,
      sql`select distinct a.lease_id, a.user_id, u.username from applies a join users u on u.id = a.user_id
           where a.lease_id in (${list(leaseIds)}) and a.state = 'open' order by u.username`,
    );
  }

  // ---- access

  /** The live lease of someone else through which the user may use the board, or null. */
  async sharedLease(userId: string, boardId: string, now: Date, grant?: ShareGrant): Promise<string | null> {
    const [r] = await rows<{ id: string }>(
      this.db,
      sql`select l.id from leases l where l.board_id = ${boardId} and ${liveLease(now)} and l.user_id <> ${userId}
            and ${sharedAccess(sql`${userId}`, grant)} limit 1`,
    );
    return r?.id ?? null;
  }

  /** Boards shared with the user: one row per lease, with its groups, grants and the user's open apply. */
  sharedDevices(userId: string, now: Date) {
    return rows<
      DeviceRow & { owner_name: string; groups: string[]; grants: ShareGrant[]; apply_id: string | null }
    >(
      this.db,
      sql`select l.id as lease_id, l.board_id, l.server_name, b.name as board_name, b.model, b.attributes,
                 b.state as board_state, l.ends_at, l.user_id as owner_id, u.username as owner_name,
                 array_agg(distinct g.name order by g.name) as groups,
                 coalesce((select jsonb_agg(distinct x) from share_groups g2 join share_members m2 on m2.group_id = g2.id
                             join share_devices sd2 on sd2.group_id = g2.id,
                             jsonb_array_elements_text(g2.grants) x
                            where sd2.lease_id = l.id and m2.user_id = ${userId} and g2.owner_id = l.user_id),
                          '[]'::jsonb) as grants,
                 (select a.id from applies a where a.lease_id = l.id and a.user_id = ${userId} and a.state = 'open'
                   limit 1) as apply_id
            from leases l join boards b on b.id = l.board_id join users u on u.id = l.user_id
            join share_devices sd on sd.lease_id = l.id join share_groups g on g.id = sd.group_id and g.owner_id = l.user_id
            join share_members m on m.group_id = g.id and m.user_id = ${userId}
           where ${liveLease(now)} and l.user_id <> ${userId}
           group by l.id, b.id, u.id
           order by l.ends_at, l.id`,
    );
  }

  /**
   * Closes the open applies of these users on these boards that no longer pass the access rule (a
   * member who still reaches the board through another group keeps theirs). Holders are untouched.
   */
  closeRevokedApplies(userIds: readonly string[], boardIds: readonly string[], reason: string, now: Date) {
    if (!userIds.length || !boardIds.length)
      return Promise.resolve([] as { id: string; user_id: string; board_id: string }[]);
    return rows<{ id: string; user_id: string; board_id: string }>(
      this.db,
      sql`update applies a set state = 'closed', closed_at = ${at(now)}, close_reason = ${reason}
            from leases l
           where a.lease_id = l.id and a.state = 'open' and a.user_id in (${list(userIds)})
             and a.board_id in (${list(boardIds)}) and a.user_id <> l.user_id
             and not ${sharedAccess(sql`a.user_id`)}
          returning a.id, a.user_id, a.board_id`,
    );
  }

  /** Group members and owners of the groups holding a lease (who sees a change to it). */
  async audienceOfLease(
    leaseId: string,
  ): Promise<{ group_id: string; name: string; owner_id: string; user_ids: string[] }[]> {
    return rows(
      this.db,
      sql`select g.id as group_id, g.name, g.owner_id,
                 coalesce(array_agg(m.user_id) filter (where m.user_id is not null), '{}') as user_ids
            from share_devices sd join share_groups g on g.id = sd.group_id
            left join share_members m on m.group_id = g.id
           where sd.lease_id = ${leaseId} group by g.id`,
    );
  }

  /** Group rows of ended leases on a board (the owner's lease ended): removed, and answered. */
  endedDevices(boardId: string, now: Date) {
    return rows<{ group_id: string; lease_id: string; server_name: string }>(
      this.db,
      sql`delete from share_devices sd using leases l
           where sd.lease_id = l.id and sd.board_id = ${boardId} and not (${liveLease(now)})
          returning sd.group_id, sd.lease_id, l.server_name`,
    );
  }

  // ---- joined shells

  async inviteShell(s: {
    shellId: string;
    groupId: string;
    boardId: string;
    leaseId: string;
    hostId: string;
    hostApplyId: string;
    shellType: string;
    now: Date;
  }): Promise<{ previousGroup: string | null }> {
    const [prev] = await rows<{ group_id: string }>(
      this.db,
      sql`select group_id from share_shells where shell_id = ${s.shellId}`,
    );
    await this.db.execute(
      sql`insert into share_shells (shell_id, group_id, board_id, lease_id, host_id, host_apply_id, shell_type, invited_at)
          values (${s.shellId}, ${s.groupId}, ${s.boardId}, ${s.leaseId}, ${s.hostId}, ${s.hostApplyId}, ${s.shellType}, ${at(s.now)})
          on conflict (shell_id) do update set group_id = excluded.group_id, invited_at = excluded.invited_at`,
    );
    return { previousGroup: prev && prev.group_id !== s.groupId ? prev.group_id : null };
  }

  async sharedShell(shellId: string) {
    const [r] = await rows<{
      shell_id: string;
      group_id: string;
      host_id: string;
      host_apply_id: string;
      board_id: string;
    }>(
      this.db,
      sql`select shell_id, group_id, host_id, host_apply_id, board_id from share_shells where shell_id = ${shellId}`,
    );
    return r ?? null;
  }

  async uninviteShell(shellId: string): Promise<{ group_id: string } | null> {
    const [r] = await rows<{ group_id: string }>(
      this.db,
      sql`delete from share_shells where shell_id = ${shellId} returning group_id`,
    );
    return r ?? null;
  }

  /** Shells shared into a group (on some boards, or all). */
  shellsOfGroup(groupId: string, boardIds?: readonly string[]) {
    return rows<{ shell_id: string; board_id: string }>(
      this.db,
      sql`select shell_id, board_id from share_shells where group_id = ${groupId}
            ${boardIds ? (boardIds.length ? sql`and board_id in (${list(boardIds)})` : sql`and false`) : sql``}`,
    );
  }

  async dropShells(shellIds: readonly string[]): Promise<void> {
    if (shellIds.length)
      await this.db.execute(sql`delete from share_shells where shell_id in (${list(shellIds)})`);
  }

  /**
   * A guest may join: the shell is shared into a group that holds its lease (live), the user is that
   * group's owner or member but not the host, and has an open apply on the lease (or holds it).
   */
  async mayJoin(userId: string, shellId: string, now: Date): Promise<boolean> {
    const r = await rows(
      this.db,
      sql`select 1 from share_shells ss join share_groups g on g.id = ss.group_id
            join share_devices sd on sd.group_id = g.id and sd.lease_id = ss.lease_id
            join leases l on l.id = ss.lease_id and l.user_id = g.owner_id
           where ss.shell_id = ${shellId} and ss.host_id <> ${userId} and ${liveLease(now)}
             and (g.owner_id = ${userId}
                  or exists (select 1 from share_members m where m.group_id = g.id and m.user_id = ${userId}))
             and (l.user_id = ${userId}
                  or exists (select 1 from applies a where a.lease_id = l.id and a.user_id = ${userId} and a.state = 'open'))
           limit 1`,
    );
    return r.length > 0;
  }

  joinableShells(userId: string, now: Date) {
    return rows<{
      shell_id: string;
      board_id: string;
      server_name: string;
      group_name: string;
      host_id: string;
      host_name: string;
      shell_type: string;
      invited_at: Date | string;
    }>(
      this.db,
      sql`select ss.shell_id, ss.board_id, l.server_name, g.name as group_name, ss.host_id, u.username as host_name,
                 ss.shell_type, ss.invited_at
            from share_shells ss join share_groups g on g.id = ss.group_id
            join share_devices sd on sd.group_id = g.id and sd.lease_id = ss.lease_id
            join leases l on l.id = ss.lease_id join users u on u.id = ss.host_id
           where ${liveLease(now)}
             and (ss.host_id = ${userId} or g.owner_id = ${userId}
                  or exists (select 1 from share_members m where m.group_id = g.id and m.user_id = ${userId}))
           order by ss.invited_at desc`,
    );
  }
}
