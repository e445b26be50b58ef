// Storage of leases and applies. Every change that must happen at most once (a board handed out, a
// lease ended, a warning sent) is one conditional UPDATE ... RETURNING, so that concurrent requests
// and several service instances on one PostgreSQL agree without any lock held across calls. Times
// come from the caller (the service's clock), never from now() in SQL.
import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '#server/db/client.ts';
import type { BoardChange } from './collaborators.ts';
import { type AttributeFilters, boardFilterSql } from './filters.ts';
import {
  type ApplyRow,
  applyById,
  applySelect,
  at,
  type BoardFreedHook,
  type EndedLease,
  type Executor,
  isUniqueViolation,
  type LeaseRow,
  leaseSelect,
  NameTaken,
  noLiveLease,
  noPendingCleanup,
  type RequestOutcome,
  rows,
  transitionBoard,
} from './leases.sql.ts';

export {
  type ApplyRow,
  at,
  type BoardFreedHook,
  type EndedLease,
  type Executor,
  isUniqueViolation,
  leaseSelect,
  type LeaseRow,
  noLiveLease,
  noPendingCleanup,
  type RequestOutcome,
  rows,
  toIso,
  transitionBoard,
} from './leases.sql.ts';

export class LeaseRepo {
  /** Set by the waiting line (queue.service.ts). */
  onBoardFreed: BoardFreedHook | null = null;

  constructor(
    private readonly db: Db,
    /** Called with the board state changes of a transaction once it has committed. */
    private readonly onBoardChanges: (changes: BoardChange[]) => void = () => {},
  ) {}

  /** Runs `fn` in a transaction; the board changes it records are announced after the commit. */
  private async inTx<T>(fn: (tx: Executor, changes: BoardChange[]) => Promise<T>): Promise<T> {
    const changes: BoardChange[] = [];
    const result = await this.db.transaction((tx) => fn(tx, changes));
    if (changes.length) this.onBoardChanges(changes);
    return result;
  }

  listLive(userId: string, now: Date): Promise<LeaseRow[]> {
    return rows(
      this.db,
      sql`${leaseSelect} where l.user_id = ${userId} and l.state = 'live' and l.ends_at > ${at(now)}
          order by l.ends_at, l.id`,
    );
  }

  async getLive(userId: string, boardId: string, now: Date): Promise<LeaseRow | null> {
    const [r] = await rows<LeaseRow>(
      this.db,
      sql`${leaseSelect} where l.user_id = ${userId} and l.board_id = ${boardId} and l.state = 'live'
          and l.ends_at > ${at(now)} limit 1`,
    );
    return r ?? null;
  }

  async getById(leaseId: string): Promise<LeaseRow | null> {
    const [r] = await rows<LeaseRow>(this.db, sql`${leaseSelect} where l.id = ${leaseId}`);
    return r ?? null;
  }

  /**
   * Takes one free matching board and writes the lease, in one transaction. The board is claimed by
   * flipping it from idle to leased under FOR UPDATE SKIP LOCKED, so two requests for the last board
   * cannot both win, and a request never waits behind another request's board.
   */
  async requestLease(input: {
    userId: string;
    serverName: string;
    filters: AttributeFilters;
    durationKey: string;
    endsAt: Date;
    now: Date;
  }): Promise<RequestOutcome> {
    const { userId, serverName, filters, now } = input;
    const leaseId = crypto.randomUUID();
    try {
      return await this.inTx(async (tx, changes): Promise<RequestOutcome> => {
        const clash = await rows(
          tx,
          sql`select 1 from leases where user_id = ${userId} and server_name = ${serverName} and state = 'live' limit 1`,
        );
        if (clash.length) return { kind: 'name_taken' };
        const reason = `leased (${leaseId})`;
        const picked = await rows<{ id: string }>(
          tx,
          sql`with pick as (
                select b.id from boards b
                 where b.state = 'idle' and b.retired_at is null and ${boardFilterSql(filters)} and ${noLiveLease}
                   and ${noPendingCleanup}
                 order by b.state_changed_at, b.id
                 limit 1
                 for update of b skip locked)
              update boards b set state = 'leased', state_reason = ${reason}, state_changed_at = ${at(now)},
                     updated_at = ${at(now)}
                from pick where b.id = pick.id and b.state = 'idle'
              returning b.id`,
        );
        if (!picked.length) {
          const [free] = await rows<{ n: number }>(
            tx,
            sql`select count(*)::int as n from boards b
                 where b.state = 'idle' and b.retired_at is null and ${boardFilterSql(filters)} and ${noLiveLease}
                   and ${noPendingCleanup}`,
          );
          return { kind: 'none_free', lockedElsewhere: free.n > 0 };
        }
        const boardId = picked[0].id;
        await tx.execute(
          sql`insert into board_events (board_id, at, kind, from_state, to_state, reason)
              values (${boardId}, ${at(now)}, 'state', 'idle', 'leased', ${reason})`,
        );
        changes.push({ boardId, from: 'idle', to: 'leased', reason, at: now.toISOString() });
        try {
          await tx.execute(
            sql`insert into leases (id, user_id, board_id, server_name, duration_key, filter, state, started_at, ends_at)
                values (${leaseId}, ${userId}, ${boardId}, ${serverName}, ${input.durationKey},
                        ${JSON.stringify(filters)}::jsonb, 'live', ${at(now)}, ${at(input.endsAt)})`,
          );
        } catch (err) {
          if (isUniqueViolation(err, 'leases_live_name_uq')) throw new NameTaken();
          throw err;
        }
        const [lease] = await rows<LeaseRow>(tx, sql`${leaseSelect} where l.id = ${leaseId}`);
        return { kind: 'leased', lease };
      });
    } catch (err) {
      if (err instanceof NameTaken) return { kind: 'name_taken' };
      throw err;
    }
  }

  /**
   * Why no board was free: how many boards in service match, and when the first live lease on one of
   * them (not in maintenance or offline) ends. A matching board being restored counts as free now.
   */
  async nextFree(
    filters: AttributeFilters,
  ): Promise<{ matching: number; nextEnd: Date | null; cleaning: number }> {
    const [r] = await rows<{ matching: number; next_end: Date | string | null; cleaning: number }>(
      this.db,
      sql`select count(*)::int as matching,
                 min(l.ends_at) filter (where b.state not in ('maintenance', 'offline')) as next_end,
                 (count(*) filter (where l.id is null and b.state not in ('maintenance', 'offline')
                                     and (b.state = 'resetting' or not ${noPendingCleanup})))::int as cleaning
            from boards b left join leases l on l.board_id = b.id and l.state = 'live'
           where b.retired_at is null and ${boardFilterSql(filters)}`,
    );
    return { matching: r.matching, nextEnd: r.next_end ? new Date(r.next_end) : null, cleaning: r.cleaning };
  }

  /** Moves the end later; warnings already sent are re-armed when the new end is far enough away. */
  async renew(leaseId: string, newEnd: Date, now: Date): Promise<boolean> {
    const r = await rows(
      this.db,
      sql`update leases set ends_at = ${at(newEnd)}, renewals = renewals + 1,
                 warned_24h_at = case when ${at(newEnd)} - interval '24 hours' > ${at(now)} then null else warned_24h_at end,
                 warned_1h_at = case when ${at(newEnd)} - interval '1 hour' > ${at(now)} then null else warned_1h_at end
           where id = ${leaseId} and state = 'live' and ends_at > ${at(now)} and ends_at < ${at(newEnd)}
          returning id`,
    );
    return r.length > 0;
  }

  /** 'renamed', 'missing' (no such live lease), or 'taken' (the new name is in use). */
  async rename(
    userId: string,
    boardId: string,
    oldName: string,
    newName: string,
    now: Date,
  ): Promise<'renamed' | 'missing' | 'taken'> {
    try {
      const r = await rows(
        this.db,
        sql`update leases set server_name = ${newName}
             where user_id = ${userId} and board_id = ${boardId} and server_name = ${oldName}
               and state = 'live' and ends_at > ${at(now)}
            returning id`,
      );
      return r.length ? 'renamed' : 'missing';
    } catch (err) {
      if (isUniqueViolation(err, 'leases_live_name_uq')) return 'taken';
      throw err;
    }
  }

  /**
   * Ends the holder's lease, closes its applies and puts the board into `resetting` so no one gets it
   * before it is clean — all or nothing. Null when the caller holds no such live lease.
   */
  async release(userId: string, boardId: string, serverName: string, now: Date): Promise<EndedLease | null> {
    return this.inTx(async (tx, changes) => {
      const [lease] = await rows<Omit<EndedLease, 'closedApplyIds'>>(
        tx,
        sql`update leases set state = 'released', ended_at = ${at(now)}, cleanup_claimed_at = ${at(now)}
             where user_id = ${userId} and board_id = ${boardId} and server_name = ${serverName} and state = 'live'
            returning id, user_id, board_id, server_name, ends_at`,
      );
      if (!lease) return null;
      const closed = await this.closeAppliesOf(tx, [lease.id], 'released', now);
      await transitionBoard(
        tx,
        changes,
        boardId,
        ['leased', 'flashing', 'resetting'],
        'resetting',
        'lease released',
        now,
      );
      return { ...lease, closedApplyIds: closed.filter((c) => c.lease_id === lease.id).map((c) => c.id) };
    });
  }

  private closeAppliesOf(tx: Executor, leaseIds: string[], reason: string, now: Date) {
    if (!leaseIds.length) return Promise.resolve([] as { id: string; lease_id: string }[]);
    const ids = sql.join(
      leaseIds.map((id) => sql`${id}`),
      sql`, `,
    );
    return rows<{ id: string; lease_id: string }>(
      tx,
      sql`update applies set state = 'closed', closed_at = ${at(now)}, close_reason = ${reason}
           where lease_id in (${ids}) and state = 'open'
          returning id, lease_id`,
    );
  }

  /** Claims leases past their end (at most `limit`), ends them, closes their applies, marks boards resetting. */
  async expireDue(now: Date, limit = 200): Promise<EndedLease[]> {
    return this.inTx(async (tx, changes) => {
      const ended = await rows<Omit<EndedLease, 'closedApplyIds'>>(
        tx,
        sql`update leases set state = 'expired', ended_at = ${at(now)}, cleanup_claimed_at = ${at(now)}
             where id in (select id from leases where state = 'live' and ends_at <= ${at(now)}
                           order by ends_at limit ${limit} for update skip locked)
               and state = 'live'
            returning id, user_id, board_id, server_name, ends_at`,
      );
      if (!ended.length) return [];
      const closed = await this.closeAppliesOf(
        tx,
        ended.map((l) => l.id),
        'expired',
        now,
      );
      for (const l of ended) {
        await transitionBoard(
          tx,
          changes,
          l.board_id,
          ['leased', 'flashing', 'resetting'],
          'resetting',
          'lease expired',
          now,
        );
      }
      return ended.map((l) => ({
        ...l,
        closedApplyIds: closed.filter((c) => c.lease_id === l.id).map((c) => c.id),
      }));
    });
  }

  /** Claims the live leases whose `window` warning is due and not yet sent; each is claimed once. */
  warnDue(now: Date, window: '24h' | '1h') {
    const span = window === '1h' ? sql`interval '1 hour'` : sql`interval '24 hours'`;
    // A lease first seen inside the last hour gets only the 1 h warning: the 24 h one is marked sent too.
    const set =
      window === '1h'
        ? sql`warned_1h_at = ${at(now)}, warned_24h_at = coalesce(warned_24h_at, ${at(now)})`
        : sql`warned_24h_at = ${at(now)}`;
    const column = window === '1h' ? sql`warned_1h_at` : sql`warned_24h_at`;
    return rows<{
      id: string;
      user_id: string;
      board_id: string;
      server_name: string;
      ends_at: Date | string;
    }>(
      this.db,
      sql`update leases set ${set}
           where state = 'live' and ${column} is null and ends_at > ${at(now)} and ends_at <= ${at(now)} + ${span}
          returning id, user_id, board_id, server_name, ends_at`,
    );
  }

  /** The next instant the scheduler has something to do (an end or a warning), or null. */
  async nextDue(): Promise<Date | null> {
    const [r] = await rows<{ due: Date | string | null }>(
      this.db,
      sql`select least(
            (select min(ends_at) from leases where state = 'live'),
            (select min(ends_at) - interval '1 hour' from leases where state = 'live' and warned_1h_at is null),
            (select min(ends_at) - interval '24 hours' from leases where state = 'live' and warned_24h_at is null)
          ) as due`,
    );
    return r?.due ? new Date(r.due) : null;
  }

  /**
   * Claims ended leases whose board was not returned to the pool (the instance cleaning it stopped):
   * a claim older than `staleMs` is taken over.
   */
  claimStaleCleanups(now: Date, staleMs: number, limit = 20) {
    const before = new Date(now.getTime() - staleMs);
    return rows<{ id: string; board_id: string }>(
      this.db,
      sql`update leases set cleanup_claimed_at = ${at(now)}
           where id in (select id from leases
                         where state <> 'live' and cleaned_at is null
                           and (cleanup_claimed_at is null or cleanup_claimed_at < ${at(before)})
                         order by ended_at limit ${limit} for update skip locked)
          returning id, board_id`,
    );
  }

  /** Before a retried cleanup: the board goes (back) to resetting unless someone holds it or it is offline. */
  async prepareRetriedCleanup(
    leaseId: string,
    boardId: string,
    now: Date,
  ): Promise<'ready' | 'skip' | 'abandon'> {
    return this.inTx(async (tx, changes) => {
      const [b] = await rows<{ state: string; live: boolean }>(
        tx,
        sql`select b.state, exists (select 1 from leases x where x.board_id = b.id and x.state = 'live') as live
              from boards b where b.id = ${boardId}`,
      );
      if (!b || b.live) {
        await tx.execute(
          sql`update leases set cleaned_at = ${at(now)}, cleanup_error = 'board held again before cleanup'
               where id = ${leaseId}`,
        );
        return 'abandon';
      }
      if (b.state === 'offline') return 'skip';
      await transitionBoard(
        tx,
        changes,
        boardId,
        ['idle', 'leased', 'flashing', 'resetting'],
        'resetting',
        'lease ended',
        now,
        noLiveLease,
      );
      return 'ready';
    });
  }

  /** The board is clean: back to idle (unless an operator took it meanwhile), and the cleanup is done. */
  async finishCleanup(leaseId: string, boardId: string, now: Date): Promise<void> {
    const after = await this.inTx(async (tx, changes) => {
      await transitionBoard(
        tx,
        changes,
        boardId,
        ['resetting'],
        'idle',
        'restored to default after lease',
        now,
        noLiveLease,
      );
      await tx.execute(
        sql`update leases set cleaned_at = ${at(now)}, cleanup_error = null where id = ${leaseId}`,
      );
      // Whoever made it idle (here, or the lab when its restore ended), the board is free from this
      // commit on: the hook looks at its state itself (its row is locked above).
      return this.onBoardFreed ? this.onBoardFreed(tx, boardId, now, changes) : null;
    });
    await after?.();
  }

  /** Restoring failed: the board goes to maintenance for an operator rather than back to the pool dirty. */
  async failCleanup(leaseId: string, boardId: string, message: string, now: Date): Promise<void> {
    await this.inTx(async (tx, changes) => {
      // offline too: the lab marks a board offline when its restore fails, and would hand it out again
      // as soon as it answers a probe.
      await transitionBoard(
        tx,
        changes,
        boardId,
        ['resetting', 'idle', 'leased', 'offline'],
        'maintenance',
        `restore after lease failed: ${message}`.slice(0, 500),
        now,
        noLiveLease,
      );
      await tx.execute(
        sql`update leases set cleaned_at = ${at(now)}, cleanup_error = ${message.slice(0, 500)} where id = ${leaseId}`,
      );
    });
  }

  /** Board state changes around a power reset: leased → resetting, and back. */
  /**
   * A held board starts a power reset: from `leased`, and from `offline` while its lease is live — a
   * board that stopped answering because its holder overloaded it (a fork bomb) is exactly what a
   * reset is for, and the reset is the host's act that needs nothing of the board.
   */
  beginPowerReset(boardId: string, now: Date): Promise<string | null> {
    return this.inTx((tx, changes) =>
      transitionBoard(
        tx,
        changes,
        boardId,
        ['leased', 'offline'],
        'resetting',
        'power reset',
        now,
        sql`exists (select 1 from leases x where x.board_id = b.id and x.state = 'live')`,
      ),
    );
  }

  endPowerReset(boardId: string, ok: boolean, now: Date): Promise<string | null> {
    return this.inTx((tx, changes) =>
      transitionBoard(
        tx,
        changes,
        boardId,
        ['resetting'],
        'leased',
        ok ? 'power reset done' : 'power reset failed',
        now,
        sql`exists (select 1 from leases x where x.board_id = b.id and x.state = 'live')`,
      ),
    );
  }

  /** A held board starts flashing: only from `leased` (not while resetting, offline, in maintenance). */
  beginFlash(boardId: string, now: Date): Promise<string | null> {
    return this.inTx((tx, changes) =>
      transitionBoard(
        tx,
        changes,
        boardId,
        ['leased'],
        'flashing',
        'flashing',
        now,
        sql`exists (select 1 from leases x where x.board_id = b.id and x.state = 'live')`,
      ),
    );
  }

  /** The flash ended (the board booted its new image, or its old one): back to its holder. */
  endFlash(boardId: string, ok: boolean, now: Date): Promise<string | null> {
    return this.inTx((tx, changes) =>
      transitionBoard(
        tx,
        changes,
        boardId,
        ['flashing'],
        'leased',
        ok ? 'flash done' : 'flash failed',
        now,
        sql`exists (select 1 from leases x where x.board_id = b.id and x.state = 'live')`,
      ),
    );
  }

  /**
   * A board held by a live lease shows as leased. Anything that reset board states without knowing
   * about leases (a lab restarting marks boards it found busy idle) is corrected here.
   */
  async reconcileHeldBoards(now: Date): Promise<number> {
    return this.inTx(async (tx, changes) => {
      const held = await rows<{ id: string }>(
        tx,
        sql`select b.id from boards b where b.state = 'idle' and b.retired_at is null
              and exists (select 1 from leases x where x.board_id = b.id and x.state = 'live')`,
      );
      for (const b of held) {
        await transitionBoard(tx, changes, b.id, ['idle'], 'leased', 'held by a live lease', now);
      }
      return changes.length;
    });
  }

  async boardState(boardId: string): Promise<string | null> {
    const [r] = await rows<{ state: string }>(this.db, sql`select state from boards where id = ${boardId}`);
    return r?.state ?? null;
  }

  // ---- applies

  /** The caller's open apply on their live lease of the board: the existing one, or a new one. */
  async openApply(userId: string, boardId: string, now: Date): Promise<ApplyRow | null> {
    return this.db.transaction(async (tx) => {
      const [lease] = await rows<{ id: string }>(
        tx,
        sql`select id from leases where user_id = ${userId} and board_id = ${boardId} and state = 'live'
               and ends_at > ${at(now)} for share`,
      );
      if (!lease) return null;
      await tx.execute(
        sql`insert into applies (id, user_id, board_id, lease_id, state, opened_at)
            values (${crypto.randomUUID()}, ${userId}, ${boardId}, ${lease.id}, 'open', ${at(now)})
            on conflict (user_id, lease_id) where state = 'open' do nothing`,
      );
      const [apply] = await rows<ApplyRow>(
        tx,
        sql`${applySelect} where a.user_id = ${userId} and a.lease_id = ${lease.id} and a.state = 'open'`,
      );
      return apply ?? null;
    });
  }

  /**
   * An apply of a user who does not hold the board on someone else's live lease (a share member; the
   * sharing feature checked they may): the existing open one, or a new one.
   */
  async openApplyOn(userId: string, leaseId: string, now: Date): Promise<ApplyRow | null> {
    return this.db.transaction(async (tx) => {
      const [lease] = await rows<{ id: string; board_id: string }>(
        tx,
        sql`select id, board_id from leases where id = ${leaseId} and state = 'live' and ends_at > ${at(now)} for share`,
      );
      if (!lease) return null;
      await tx.execute(
        sql`insert into applies (id, user_id, board_id, lease_id, state, opened_at)
            values (${crypto.randomUUID()}, ${userId}, ${lease.board_id}, ${lease.id}, 'open', ${at(now)})
            on conflict (user_id, lease_id) where state = 'open' do nothing`,
      );
      const [apply] = await rows<ApplyRow>(
        tx,
        sql`${applySelect} where a.user_id = ${userId} and a.lease_id = ${lease.id} and a.state = 'open'`,
      );
      return apply ?? null;
    });
  }

  async getApply(applyId: string): Promise<ApplyRow | null> {
    const [r] = await applyById(this.db).execute({ id: applyId });
    return (r as ApplyRow | undefined) ?? null;
  }

  async closeApply(applyId: string, userId: string, now: Date): Promise<boolean> {
    const r = await rows(
      this.db,
      sql`update applies set state = 'closed', closed_at = ${at(now)}, close_reason = 'unapplied'
           where id = ${applyId} and user_id = ${userId} and state = 'open' returning id`,
    );
    return r.length > 0;
  }

  /** Open applies of the user whose lease is live (what the console may resume). */
  liveApplies(userId: string, now: Date) {
    return rows<{ id: string; board_id: string; server_name: string; ends_at: Date | string }>(
      this.db,
      sql`select a.id, a.board_id, l.server_name, l.ends_at from applies a join leases l on l.id = a.lease_id
           where a.user_id = ${userId} and a.state = 'open' and l.state = 'live' and l.ends_at > ${at(now)}
           order by a.opened_at desc`,
    );
  }

  /** The live lease through which the user may use the board: their own, or one they have an open apply on. */
  async accessOf(
    userId: string,
    boardId: string,
    now: Date,
  ): Promise<{ leaseId: string; serverName: string; holder: boolean } | null> {
    const [r] = await rows<{ id: string; server_name: string; user_id: string }>(
      this.db,
      sql`select l.id, l.server_name, l.user_id from leases l
           where l.board_id = ${boardId} and l.state = 'live' and l.ends_at > ${at(now)}
             and (l.user_id = ${userId}
                  or exists (select 1 from applies a where a.lease_id = l.id and a.user_id = ${userId} and a.state = 'open'))
           limit 1`,
    );
    return r ? { leaseId: r.id, serverName: r.server_name, holder: r.user_id === userId } : null;
  }

  // ---- history

  async applyHistory(
    userId: string,
    page: number,
    pageSize: number,
  ): Promise<{ total: number; items: ApplyRow[] }> {
    const [count] = await rows<{ n: number }>(
      this.db,
      sql`select count(*)::int as n from applies where user_id = ${userId}`,
    );
    const items = await rows<ApplyRow>(
      this.db,
      sql`${applySelect} where a.user_id = ${userId} order by a.opened_at desc, a.id
          limit ${pageSize} offset ${(page - 1) * pageSize}`,
    );
    return { total: count.n, items };
  }

  recentApplies(userId: string, limit: number): Promise<ApplyRow[]> {
    return rows(
      this.db,
      sql`${applySelect} where a.user_id = ${userId} order by a.opened_at desc, a.id limit ${limit}`,
    );
  }

  async workHistory(userId: string, boardId: string) {
    const leaseRows = await rows<{
      id: string;
      server_name: string;
      state: 'live' | 'released' | 'expired';
      started_at: Date | string;
      ends_at: Date | string;
      ended_at: Date | string | null;
    }>(
      this.db,
      sql`select id, server_name, state, started_at, ends_at, ended_at from leases
           where user_id = ${userId} and board_id = ${boardId} order by started_at desc limit 100`,
    );
    const applyRows = await rows<ApplyRow>(
      this.db,
      sql`${applySelect} where a.user_id = ${userId} and a.board_id = ${boardId} order by a.opened_at desc limit 100`,
    );
    return { leases: leaseRows, applies: applyRows };
  }

  /** Metrics samples straight from storage, for when the board lab is not in this process. */
}
