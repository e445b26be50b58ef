// Storage of sequences and their runs (migration 0009_sequences.sql). Who may see what:
//   - a sequence: its owner, and the members of the share group it is shared with;
//   - a run: whoever ran it, the sequence's owner, and the members of the group the sequence was
//     shared with when it ran (kept on the run, so unsharing later does not rewrite history).
import crypto from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '#server/db/client.ts';
import { at, rows } from '#server/leases/leases.repo.ts';
import type { RunBoardDto, RunState } from '#shared/sequences.ts';

export interface SequenceRow {
  id: string;
  owner_id: string;
  owner_name: string;
  name: string;
  source: string;
  group_id: string | null;
  group_name: string | null;
  updated_at: Date | string;
}

export interface RunRow {
  id: string;
  sequence_id: string;
  sequence_name: string;
  group_id: string | null;
  user_id: string;
  user_name: string;
  state: RunState;
  params: Record<string, string>;
  boards: RunBoardDto[];
  started_at: Date | string;
  ended_at: Date | string | null;
}

const seqSelect = sql`select s.id, s.owner_id, u.username as owner_name, s.name, s.source, s.group_id,
    g.name as group_name, s.updated_at
  from sequences s join users u on u.id = s.owner_id left join share_groups g on g.id = s.group_id`;

const runSelect = sql`select r.id, r.sequence_id, r.sequence_name, r.group_id, r.user_id, u.username as user_name,
    r.state, r.params, r.boards, r.started_at, r.ended_at
  from sequence_runs r join users u on u.id = r.user_id`;

/** The groups whose members see a user's shared things: those they belong to. */
const memberOf = (userId: string) => sql`(select group_id from share_members where user_id = ${userId})`;

export class SequenceRepo {
  constructor(private readonly db: Db) {}

  async visible(userId: string): Promise<SequenceRow[]> {
    return rows<SequenceRow>(
      this.db,
      sql`${seqSelect} where s.owner_id = ${userId} or s.group_id in ${memberOf(userId)}
          order by lower(s.name), s.owner_id`,
    );
  }

  async one(userId: string, id: string): Promise<SequenceRow | null> {
    const [r] = await rows<SequenceRow>(
      this.db,
      sql`${seqSelect} where s.id = ${id} and (s.owner_id = ${userId} or s.group_id in ${memberOf(userId)})`,
    );
    return r ?? null;
  }

  async count(ownerId: string): Promise<number> {
    const [r] = await rows<{ n: number }>(
      this.db,
      sql`select count(*)::int as n from sequences where owner_id = ${ownerId}`,
    );
    return r.n;
  }

  /** Creates or replaces the owner's sequence of that name; answers its id. */
  async save(
    ownerId: string,
    name: string,
    source: string,
    groupId: string | null,
    now: Date,
  ): Promise<string> {
    const [r] = await rows<{ id: string }>(
      this.db,
      sql`insert into sequences (id, owner_id, name, source, group_id, created_at, updated_at)
          values (${crypto.randomUUID()}, ${ownerId}, ${name}, ${source}, ${groupId}, ${at(now)}, ${at(now)})
          on conflict (owner_id, name) do update
            set source = excluded.source, group_id = excluded.group_id, updated_at = excluded.updated_at
          returning id`,
    );
    return r.id;
  }

  async remove(ownerId: string, id: string): Promise<boolean> {
    const r = await rows<{ id: string }>(
      this.db,
      sql`delete from sequences where id = ${id} and owner_id = ${ownerId} returning id`,
    );
    return r.length > 0;
  }

  async groupId(ownerId: string, name: string): Promise<string | null> {
    const [g] = await rows<{ id: string }>(
      this.db,
      sql`select id from share_groups where owner_id = ${ownerId} and name = ${name}`,
    );
    return g?.id ?? null;
  }

  // ---- runs

  async insertRun(r: {
    id: string;
    sequenceId: string;
    sequenceName: string;
    groupId: string | null;
    userId: string;
    params: Record<string, string>;
    boards: RunBoardDto[];
    now: Date;
  }): Promise<void> {
    await this.db.execute(
      sql`insert into sequence_runs (id, sequence_id, sequence_name, group_id, user_id, state, params, boards, started_at)
          values (${r.id}, ${r.sequenceId}, ${r.sequenceName}, ${r.groupId}, ${r.userId}, 'running',
                  ${JSON.stringify(r.params)}::jsonb, ${JSON.stringify(r.boards)}::jsonb, ${at(r.now)})`,
    );
  }

  async writeRun(id: string, state: RunState, boards: RunBoardDto[], endedAt: Date | null): Promise<void> {
    await this.db.execute(
      sql`update sequence_runs set state = ${state}, boards = ${JSON.stringify(boards)}::jsonb,
            ended_at = ${endedAt ? at(endedAt) : null}
          where id = ${id}`,
    );
  }

  private runScope(userId: string) {
    return sql`(r.user_id = ${userId} or r.group_id in ${memberOf(userId)}
               or exists (select 1 from sequences s where s.id = r.sequence_id and s.owner_id = ${userId}))`;
  }

  async run(userId: string, id: string): Promise<RunRow | null> {
    const [r] = await rows<RunRow>(
      this.db,
      sql`${runSelect} where r.id = ${id} and ${this.runScope(userId)}`,
    );
    return r ?? null;
  }

  async runs(userId: string, sequenceId: string | undefined, limit: number): Promise<RunRow[]> {
    return rows<RunRow>(
      this.db,
      sql`${runSelect} where ${this.runScope(userId)} ${sequenceId ? sql`and r.sequence_id = ${sequenceId}` : sql``}
          order by r.started_at desc, r.id limit ${limit}`,
    );
  }

  /** Runs left 'running' by a service that stopped without ending them. */
  async orphans(): Promise<RunRow[]> {
    return rows<RunRow>(this.db, sql`${runSelect} where r.state = 'running'`);
  }
}
