// Storage of the waiting line (table lease_queue, migration 0007_queue.sql). An entry is granted at
// most once and a board to at most one entry, whichever instance acts:
//   - a board freed after its restore is offered, inside the transaction that makes it idle, to the
//     oldest waiting entry whose filter it matches; the entry is claimed with a conditional UPDATE
//     (state = 'waiting'), in a savepoint so a failed grant never undoes the board's return to the pool;
//   - a sweep (scheduler tick, before a direct request, after a join) walks the line in order, claims
//     each entry and a matching idle board with FOR UPDATE SKIP LOCKED, and leases one to the other.
// Times come from the caller (the service's clock).
import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '#server/db/client.ts';
import { LEASE_DURATIONS } from '#shared/constants.ts';
import type { BoardChange } from './collaborators.ts';
import { type AttributeFilters, boardFilterSql } from './filters.ts';
import {
  at,
  type Executor,
  isUniqueViolation,
  type LeaseRow,
  leaseSelect,
  noLiveLease,
  noPendingCleanup,
  rows,
  transitionBoard,
} from './leases.repo.ts';

export interface QueueRow {
  id: string;
  seq: string | number;
  user_id: string;
  filter: AttributeFilters;
  filter_key: string;
  server_name: string;
  duration_key: string;
  state: 'waiting' | 'granted' | 'cancelled' | 'expired';
  joined_at: Date | string;
  expires_at: Date | string;
  ended_at: Date | string | null;
  lease_id: string | null;
  board_id: string | null;
}

/** A board leased to a waiting entry, for the notifications sent once it committed. */
export interface Grant {
  entry: QueueRow;
  lease: LeaseRow;
}

const queueColumns = sql`id, seq, user_id, filter, filter_key, server_name, duration_key, state, joined_at,
  expires_at, ended_at, lease_id, board_id`;

/**
 * The filter as "the same filter" is judged for order and uniqueness: keys sorted, strings lower-cased
 * (they match case-insensitively), lists sorted and without duplicates.
 */
export function filterKey(filters: AttributeFilters): string {
  const norm = (v: unknown): unknown => {
    if (typeof v === 'string') return v.toLowerCase();
    if (Array.isArray(v)) {
      const items = v.map((x) => JSON.stringify(norm(x)));
      return [...new Set(items)].sort().map((x) => JSON.parse(x));
    }
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, norm((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  const keyed = Object.fromEntries(
    Object.keys(filters)
      .sort()
      .map((k) => [k, norm(filters[k])]),
  );
  return JSON.stringify(keyed);
}

export type JoinOutcome =
  | { kind: 'joined'; entry: QueueRow }
  | { kind: 'already_waiting'; entryId: string }
  | { kind: 'too_many' }
  | { kind: 'name_taken' };

/** A board that is free for anyone: idle, in service, held by no live lease, restored. */
/** Sweeps of the line take turns across instances under this advisory lock (the migrations use 727274). */
const QUEUE_SWEEP_LOCK = 727275;

const freeBoard = sql`b.state = 'idle' and b.retired_at is null and ${noLiveLease} and ${noPendingCleanup}`;

export class QueueRepo {
  constructor(
    private readonly db: Db,
    private readonly onBoardChanges: (changes: BoardChange[]) => void = () => {},
    /** A grant that failed inside another transaction is dropped there (the board stays free): said here. */
    private readonly onGrantError: (err: unknown, entryId: string, boardId: string) => void = () => {},
  ) {}

  private async inTx<T>(fn: (tx: Executor, changes: BoardChange[]) => Promise<T>): Promise<T> {
    const changes: BoardChange[] = [];
    const result = await this.db.transaction((tx) => fn(tx, changes));
    if (changes.length) this.onBoardChanges(changes);
    return result;
  }

  async join(input: {
    userId: string;
    filters: AttributeFilters;
    serverName: string;
    durationKey: string;
    now: Date;
    expiresAt: Date;
    maxWaiting: number;
  }): Promise<JoinOutcome> {
    const { userId, now } = input;
    const key = filterKey(input.filters);
    const id = crypto.randomUUID();
    try {
      return await this.db.transaction(async (tx): Promise<JoinOutcome> => {
        const waiting = await rows<{ id: string; filter_key: string; server_name: string }>(
          tx,
          sql`select id, filter_key, server_name from lease_queue
               where user_id = ${userId} and state = 'waiting' and expires_at > ${at(now)}
               for update`,
        );
        const same = waiting.find((w) => w.filter_key === key);
        if (same) return { kind: 'already_waiting', entryId: same.id };
        if (waiting.length >= input.maxWaiting) return { kind: 'too_many' };
        if (waiting.some((w) => w.server_name === input.serverName)) return { kind: 'name_taken' };
        const clash = await rows(
          tx,
          sql`select 1 from leases where user_id = ${userId} and server_name = ${input.serverName}
                and state = 'live' limit 1`,
        );
        if (clash.length) return { kind: 'name_taken' };
        // An entry that waited past its expiry and was not swept yet must not block a new one.
        await tx.execute(
          sql`update lease_queue set state = 'expired', ended_at = expires_at
               where user_id = ${userId} and filter_key = ${key} and state = 'waiting' and expires_at <= ${at(now)}`,
        );
        const [entry] = await rows<QueueRow>(
          tx,
          sql`insert into lease_queue (id, user_id, filter, filter_key, server_name, duration_key, state, joined_at, expires_at)
              values (${id}, ${userId}, ${JSON.stringify(input.filters)}::jsonb, ${key}, ${input.serverName},
                      ${input.durationKey}, 'waiting', ${at(now)}, ${at(input.expiresAt)})
              returning ${queueColumns}`,
        );
        return { kind: 'joined', entry };
      });
    } catch (err) {
      // Two joins of one user with one filter at once: the unique index lets one through.
      if (isUniqueViolation(err, 'lease_queue_waiting_uq')) {
        const [same] = await rows<{ id: string }>(
          this.db,
          sql`select id from lease_queue where user_id = ${userId} and filter_key = ${key} and state = 'waiting'`,
        );
        return { kind: 'already_waiting', entryId: same?.id ?? '' };
      }
      throw err;
    }
  }

  async get(entryId: string): Promise<QueueRow | null> {
    const [r] = await rows<QueueRow>(
      this.db,
      sql`select ${queueColumns} from lease_queue where id = ${entryId}`,
    );
    return r ?? null;
  }

  /** The user's own entry, or null (also for someone else's). */
  async getOwn(userId: string, entryId: string): Promise<QueueRow | null> {
    const [r] = await rows<QueueRow>(
      this.db,
      sql`select ${queueColumns} from lease_queue where id = ${entryId} and user_id = ${userId}`,
    );
    return r ?? null;
  }

  async cancel(userId: string, entryId: string, now: Date): Promise<QueueRow | null> {
    const [r] = await rows<QueueRow>(
      this.db,
      sql`update lease_queue set state = 'cancelled', ended_at = ${at(now)}
           where id = ${entryId} and user_id = ${userId} and state = 'waiting'
          returning ${queueColumns}`,
    );
    return r ?? null;
  }

  listWaiting(userId: string, now: Date): Promise<QueueRow[]> {
    return rows(
      this.db,
      sql`select ${queueColumns} from lease_queue
           where user_id = ${userId} and state = 'waiting' and expires_at > ${at(now)}
           order by joined_at, seq`,
    );
  }

  listRecent(userId: string, now: Date, limit = 10): Promise<QueueRow[]> {
    return rows(
      this.db,
      sql`select ${queueColumns} from lease_queue
           where user_id = ${userId} and (state <> 'waiting' or expires_at <= ${at(now)})
           order by coalesce(ended_at, expires_at) desc, seq desc limit ${limit}`,
    );
  }

  /** Positions (1-based, per filter) of the waiting entries with these filter keys. */
  async positions(keys: string[], now: Date): Promise<Map<string, { entry: QueueRow; position: number }>> {
    const out = new Map<string, { entry: QueueRow; position: number }>();
    if (!keys.length) return out;
    const list = sql.join(
      keys.map((k) => sql`${k}`),
      sql`, `,
    );
    const found = await rows<QueueRow & { position: number }>(
      this.db,
      sql`select ${queueColumns},
                 (row_number() over (partition by filter_key order by joined_at, seq))::int as position
            from lease_queue
           where state = 'waiting' and expires_at > ${at(now)} and filter_key in (${list})`,
    );
    for (const r of found) out.set(r.id, { entry: r, position: r.position });
    return out;
  }

  /**
   * The estimate of the header of src/shared/queue.ts: the position-th soonest end among live leases
   * on matching boards in service (boards being restored free now); null when there are fewer.
   */
  async estimate(filters: AttributeFilters, position: number, now: Date): Promise<Date | null> {
    const [r] = await rows<{ t: Date | string }>(
      this.db,
      sql`select t from (
            select ${at(now)} as t from boards b
             where b.retired_at is null and ${boardFilterSql(filters)} and b.state not in ('maintenance', 'offline')
               and ${noLiveLease} and (b.state = 'resetting' or not ${noPendingCleanup})
            union all
            select l.ends_at as t from boards b join leases l on l.board_id = b.id and l.state = 'live'
             where b.retired_at is null and ${boardFilterSql(filters)} and b.state not in ('maintenance', 'offline')
          ) ends order by t offset ${position - 1} limit 1`,
    );
    return r ? new Date(r.t) : null;
  }

  /** Waiting entries past their expiry become `expired`, each once. */
  expireDue(now: Date, limit = 500): Promise<QueueRow[]> {
    return rows(
      this.db,
      sql`update lease_queue set state = 'expired', ended_at = ${at(now)}
           where id in (select id from lease_queue where state = 'waiting' and expires_at <= ${at(now)}
                         order by expires_at limit ${limit} for update skip locked)
             and state = 'waiting'
          returning ${queueColumns}`,
    );
  }

  async nextExpiry(): Promise<Date | null> {
    const [r] = await rows<{ due: Date | string | null }>(
      this.db,
      sql`select min(expires_at) as due from lease_queue where state = 'waiting'`,
    );
    return r?.due ? new Date(r.due) : null;
  }

  /**
   * Inside the transaction that finished the board's restore (its row locked): when the board is free,
   * leases it to the oldest waiting entry whose filter it matches. Null when it is not free or no entry
   * matches (the board stays in the pool).
   */
  async grantFreedBoard(
    tx: Executor,
    boardId: string,
    now: Date,
    changes: BoardChange[],
  ): Promise<Grant | null> {
    const line = await rows<QueueRow>(
      tx,
      sql`select ${queueColumns} from lease_queue where state = 'waiting' and expires_at > ${at(now)}
           order by joined_at, seq limit 500`,
    );
    if (!line.length) return null;
    const columns = sql.join(
      line.map((e, i) => sql`coalesce((${boardFilterSql(e.filter)}), false) as ${sql.raw(`m${i}`)}`),
      sql`, `,
    );
    const [match] = await rows<Record<string, boolean>>(
      tx,
      sql`select ${columns} from boards b where b.id = ${boardId} and ${freeBoard}`,
    );
    if (!match) return null;
    for (let i = 0; i < line.length; i++) {
      if (!match[`m${i}`]) continue;
      // A savepoint per attempt: whatever fails here leaves the board idle for the next sweep rather
      // than undoing its return to the pool.
      await tx.execute(sql`savepoint queue_grant`);
      try {
        const [claimed] = await rows<QueueRow>(
          tx,
          sql`update lease_queue set state = 'granted', ended_at = ${at(now)}
               where id = ${line[i].id} and state = 'waiting' and expires_at > ${at(now)}
              returning ${queueColumns}`,
        );
        const local: BoardChange[] = [];
        const lease = claimed ? await this.leaseTo(tx, claimed, boardId, now, local) : null;
        if (!lease) {
          await tx.execute(sql`rollback to savepoint queue_grant`);
          continue;
        }
        await tx.execute(sql`release savepoint queue_grant`);
        changes.push(...local);
        return { entry: { ...claimed, lease_id: lease.id, board_id: boardId }, lease };
      } catch (err) {
        await tx.execute(sql`rollback to savepoint queue_grant`);
        this.onGrantError(err, line[i].id, boardId);
        return null;
      }
    }
    return null;
  }

  /** Whether a sweep can grant anything: someone waits and some board is free. */
  async sweepWorthwhile(now: Date): Promise<boolean> {
    const [r] = await rows<{ ok: boolean }>(
      this.db,
      sql`select exists (select 1 from lease_queue where state = 'waiting' and expires_at > ${at(now)})
             and exists (select 1 from boards b where ${freeBoard}) as ok`,
    );
    return Boolean(r?.ok);
  }

  /**
   * Serves the line in order with the boards free now, in one transaction. Sweeps take turns across
   * instances (a transaction-level advisory lock), so a later entry never gets a board while an
   * earlier one that it fits is passed over by a concurrent sweep; entries and boards are still
   * claimed with FOR UPDATE SKIP LOCKED, because the grant at the end of a restore (which holds its
   * board and waits for its entry) runs beside sweeps. Each grant is in a savepoint: one that fails is
   * left for the next sweep without undoing the others.
   */
  async sweep(now: Date, limit = 500): Promise<Grant[]> {
    return this.inTx(async (tx, changes) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${QUEUE_SWEEP_LOCK})`);
      const line = await rows<QueueRow>(
        tx,
        sql`select ${queueColumns} from lease_queue where state = 'waiting' and expires_at > ${at(now)}
             order by joined_at, seq limit ${limit}`,
      );
      const grants: Grant[] = [];
      for (const candidate of line) {
        await tx.execute(sql`savepoint queue_sweep`);
        try {
          const local: BoardChange[] = [];
          const g = await this.grantEntry(tx, candidate.id, now, local);
          await tx.execute(sql`release savepoint queue_sweep`);
          if (!g) continue;
          changes.push(...local);
          grants.push(g);
          const [more] = await rows<{ ok: boolean }>(
            tx,
            sql`select exists (select 1 from boards b where ${freeBoard}) as ok`,
          );
          if (!more?.ok) break;
        } catch (err) {
          await tx.execute(sql`rollback to savepoint queue_sweep`);
          this.onGrantError(err, candidate.id, '');
        }
      }
      return grants;
    });
  }

  /**
   * One step of a sweep: claims the entry (skipped when another transaction holds it) and a free
   * matching board (skipping locked ones), and leases the board to the entry. Null when either is
   * missing.
   */
  private async grantEntry(
    tx: Executor,
    entryId: string,
    now: Date,
    changes: BoardChange[],
  ): Promise<Grant | null> {
    const [entry] = await rows<QueueRow>(
      tx,
      sql`select ${queueColumns} from lease_queue
           where id = ${entryId} and state = 'waiting' and expires_at > ${at(now)}
           for update skip locked`,
    );
    if (!entry) return null;
    const [board] = await rows<{ id: string }>(
      tx,
      sql`select b.id from boards b where ${freeBoard} and ${boardFilterSql(entry.filter)}
           order by b.state_changed_at, b.id limit 1 for update of b skip locked`,
    );
    if (!board) return null;
    await tx.execute(
      sql`update lease_queue set state = 'granted', ended_at = ${at(now)} where id = ${entry.id}`,
    );
    const lease = await this.leaseTo(tx, entry, board.id, now, changes);
    if (!lease) throw new Error('a claimed idle board could not be leased');
    return {
      entry: { ...entry, state: 'granted', ended_at: now, lease_id: lease.id, board_id: board.id },
      lease,
    };
  }

  /**
   * Writes the lease of a granted entry: the board goes idle → leased and the lease starts now for
   * the entry's duration. The entry's name, or (taken meanwhile) the name with a suffix.
   */
  private async leaseTo(
    tx: Executor,
    entry: QueueRow,
    boardId: string,
    now: Date,
    changes: BoardChange[],
  ): Promise<LeaseRow | null> {
    const leaseId = crypto.randomUUID();
    const ms = durationMs(entry.duration_key);
    const endsAt = new Date(now.getTime() + ms);
    const from = await transitionBoard(
      tx,
      changes,
      boardId,
      ['idle'],
      'leased',
      `leased (${leaseId}) from the waiting line`,
      now,
      noLiveLease,
    );
    if (!from) return null;
    const taken = await rows(
      tx,
      sql`select 1 from leases where user_id = ${entry.user_id} and server_name = ${entry.server_name}
            and state = 'live' limit 1`,
    );
    const name = taken.length
      ? `${entry.server_name.slice(0, 59)}-${entry.id.slice(0, 4)}`
      : entry.server_name;
    await tx.execute(
      sql`insert into leases (id, user_id, board_id, server_name, duration_key, filter, state, started_at, ends_at)
          values (${leaseId}, ${entry.user_id}, ${boardId}, ${name}, ${entry.duration_key},
                  ${JSON.stringify(entry.filter)}::jsonb, 'live', ${at(now)}, ${at(endsAt)})`,
    );
    await tx.execute(
      sql`update lease_queue set lease_id = ${leaseId}, board_id = ${boardId} where id = ${entry.id}`,
    );
    const [lease] = await rows<LeaseRow>(tx, sql`${leaseSelect} where l.id = ${leaseId}`);
    return lease;
  }
}

function durationMs(key: string): number {
  const d = LEASE_DURATIONS.find((x) => x.key === key);
  if (!d) throw new Error(`unknown lease duration ${key}`);
  return d.ms;
}
