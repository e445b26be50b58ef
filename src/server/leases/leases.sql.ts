// The SQL pieces the lease storage is made of: row shapes and their selects, the one-way board state
// transition, and the conditions a free board meets. leases.repo.ts (LeaseRepo) composes them.
import { eq, type SQL, sql } from 'drizzle-orm';
import { type Db, preparedPer } from '#server/db/client.ts';
import { boards } from '#server/db/schema/boards.ts';
import { applies, leases } from '#server/db/schema/leases.ts';
import type { BoardChange } from './collaborators.ts';
export type Executor = Pick<Db, 'execute'>;

export async function rows<T>(db: Executor, q: SQL): Promise<T[]> {
  const res = await db.execute(q);
  return (res as unknown as { rows: T[] }).rows;
}

export const at = (d: Date) => sql`${d.toISOString()}::timestamptz`;

export function toIso(v: Date | string | null | undefined): string | null {
  if (v === null || v === undefined) return null;
  return (v instanceof Date ? v : new Date(v)).toISOString();
}

export interface LeaseRow {
  id: string;
  user_id: string;
  board_id: string;
  server_name: string;
  duration_key: string;
  state: 'live' | 'released' | 'expired';
  started_at: Date | string;
  ends_at: Date | string;
  ended_at: Date | string | null;
  renewals: number;
  warned_24h_at: Date | string | null;
  warned_1h_at: Date | string | null;
  board_name: string;
  model: string;
  attributes: Record<string, string | number | boolean>;
  board_state: string;
  driver: 'local' | 'ssh' | 'qemu';
  apply_id: string | null;
}

export const leaseSelect = sql`
  select l.id, l.user_id, l.board_id, l.server_name, l.duration_key, l.state, l.started_at, l.ends_at,
         l.ended_at, l.renewals, l.warned_24h_at, l.warned_1h_at,
         b.name as board_name, b.model, b.attributes, b.state as board_state, b.driver,
         (select a.id from applies a
           where a.lease_id = l.id and a.user_id = l.user_id and a.state = 'open' limit 1) as apply_id
    from leases l join boards b on b.id = l.board_id`;

/** A lease ended with the board it held, as the scheduler and unlock hand them to cleanup. */
export interface EndedLease {
  id: string;
  user_id: string;
  board_id: string;
  server_name: string;
  ends_at: Date | string;
  closedApplyIds: string[];
}

export interface ApplyRow {
  id: string;
  user_id: string;
  board_id: string;
  lease_id: string;
  state: 'open' | 'closed';
  opened_at: Date | string;
  closed_at: Date | string | null;
  close_reason: string | null;
  server_name: string;
  board_name: string;
  lease_state: 'live' | 'released' | 'expired';
  ends_at: Date | string;
}

export const applySelect = sql`
  select a.id, a.user_id, a.board_id, a.lease_id, a.state, a.opened_at, a.closed_at, a.close_reason,
         l.server_name, b.name as board_name, l.state as lease_state, l.ends_at
    from applies a join leases l on l.id = a.lease_id join boards b on b.id = a.board_id`;

/** applySelect for one apply, by id, prepared: every call on a board resolves its apply. */
export const applyById = preparedPer((db) =>
  db
    .select({
      id: applies.id,
      user_id: applies.userId,
      board_id: applies.boardId,
      lease_id: applies.leaseId,
      state: applies.state,
      opened_at: applies.openedAt,
      closed_at: applies.closedAt,
      close_reason: applies.closeReason,
      server_name: leases.serverName,
      board_name: boards.name,
      lease_state: leases.state,
      ends_at: leases.endsAt,
    })
    .from(applies)
    .innerJoin(leases, eq(leases.id, applies.leaseId))
    .innerJoin(boards, eq(boards.id, applies.boardId))
    .where(eq(applies.id, sql.placeholder('id')))
    .prepare('bianbu_apply_by_id'),
);

export type RequestOutcome =
  | { kind: 'leased'; lease: LeaseRow }
  | { kind: 'name_taken' }
  | { kind: 'none_free'; lockedElsewhere: boolean };

export class NameTaken extends Error {}

export function pgCode(err: unknown): { code?: string; constraint?: string } {
  const e = err as { code?: string; constraint?: string; cause?: { code?: string; constraint?: string } };
  return { code: e?.code ?? e?.cause?.code, constraint: e?.constraint ?? e?.cause?.constraint };
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const { code, constraint: c } = pgCode(err);
  if (code !== '23505') return false;
  // PGlite does not always fill in the constraint name; the message names it then.
  if (!constraint) return true;
  const text = `${c ?? ''} ${(err as Error)?.message ?? ''} ${(err as { cause?: Error })?.cause?.message ?? ''}`;
  return text.includes(constraint);
}

/** Boards change state only from an expected state; each change leaves a board_events row. */
export async function transitionBoard(
  tx: Executor,
  changes: BoardChange[],
  boardId: string,
  from: readonly string[],
  to: string,
  reason: string,
  now: Date,
  extra: SQL = sql`true`,
): Promise<string | null> {
  const fromList = sql.join(
    from.map((s) => sql`${s}`),
    sql`, `,
  );
  const changed = await rows<{ from_state: string }>(
    tx,
    sql`with old as (select id, state from boards where id = ${boardId} for update)
        update boards b set state = ${to}, state_reason = ${reason}, state_changed_at = ${at(now)},
               updated_at = ${at(now)}
          from old
         where b.id = old.id and old.state in (${fromList}) and ${extra}
        returning old.state as from_state`,
  );
  if (!changed.length) return null;
  await tx.execute(
    sql`insert into board_events (board_id, at, kind, from_state, to_state, reason)
        values (${boardId}, ${at(now)}, 'state', ${changed[0].from_state}, ${to}, ${reason})`,
  );
  changes.push({ boardId, from: changed[0].from_state, to, reason, at: now.toISOString() });
  return changed[0].from_state;
}

export const noLiveLease = sql`not exists (select 1 from leases x where x.board_id = b.id and x.state = 'live')`;
/** A board whose last lease ended but whose restore has not finished is not handed out, whatever its state says. */
export const noPendingCleanup = sql`not exists (select 1 from leases y
  where y.board_id = b.id and y.state <> 'live' and y.cleaned_at is null)`;

/**
 * Runs inside the transaction that returned a board to the pool (the waiting line grants it there, so
 * nobody sees it free first); answers what to do once that transaction committed.
 */
export type BoardFreedHook = (
  tx: Executor,
  boardId: string,
  now: Date,
  changes: BoardChange[],
) => Promise<(() => Promise<void> | void) | null>;
