// The board catalogue of spec section 7, answered from storage: counts, keyword search and attribute
// filters with paging. Only boards in service (not retired) are listed.
import type { z } from 'zod';
import { BOARD_STATES, type BoardDto, type BoardState, type attributeFilters } from '#shared/boards.ts';
import type { Storage } from '#server/db/client.ts';
import { type BoardRow, toBoardDto } from './lab.ts';

export type AttributeFilters = z.output<typeof attributeFilters>;

/** A keyword as a LIKE pattern that matches it literally anywhere (wildcards escaped). */
export function likePattern(keyword: string): string {
  return `%${keyword.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

class Where {
  readonly parts: string[] = ['retired_at is null'];
  readonly params: unknown[] = [];
  p(v: unknown): string {
    this.params.push(v);
    return `$${this.params.length}`;
  }
  sql(): string {
    return this.parts.join(' and ');
  }
}

function keywordCondition(w: Where, keyword: string): void {
  const k = w.p(likePattern(keyword));
  w.parts.push(
    `(name ilike ${k} escape '\\' or model ilike ${k} escape '\\' or id ilike ${k} escape '\\'
      or exists (select 1 from jsonb_each_text(attributes) a where a.value ilike ${k} escape '\\'))`,
  );
}

/** Filter semantics: exact (strings case-insensitive), any of a list, or a numeric {min, max} range. */
function filterConditions(w: Where, filters: AttributeFilters): void {
  for (const [key, f] of Object.entries(filters)) {
    const column = key === 'model' || key === 'name';
    // Every parameter pushed must be used: PostgreSQL cannot type an unused one.
    const text = () => (column ? key : `(attributes ->> ${w.p(key)}::text)`);
    if (Array.isArray(f)) {
      w.parts.push(`lower(${text()}) = any(${w.p(f.map((v) => String(v).toLowerCase()))}::text[])`);
    } else if (typeof f === 'object' && f !== null) {
      if (column) {
        w.parts.push('false');
        continue;
      }
      const k = `${w.p(key)}::text`;
      const num = `(case when jsonb_typeof(attributes -> ${k}) = 'number' then (attributes ->> ${k})::numeric end)`;
      if (f.min !== undefined) w.parts.push(`${num} >= ${w.p(f.min)}::numeric`);
      if (f.max !== undefined) w.parts.push(`${num} <= ${w.p(f.max)}::numeric`);
    } else {
      w.parts.push(`lower(${text()}) = ${w.p(String(f).toLowerCase())}::text`);
    }
  }
}

export async function countByState(db: Storage): Promise<{ total: number; states: Record<BoardState, number> }> {
  const rows = await db.query<{ state: BoardState; n: number }>(
    'select state, count(*)::int as n from boards where retired_at is null group by state',
  );
  const states = Object.fromEntries(BOARD_STATES.map((s) => [s, 0])) as Record<BoardState, number>;
  let total = 0;
  for (const r of rows) {
    states[r.state] = r.n;
    total += r.n;
  }
  return { total, states };
}

export async function searchBoards(
  db: Storage,
  q: { keyword?: string; filters?: AttributeFilters; state?: BoardState; page?: number; pageSize?: number },
): Promise<{ total: number; items: BoardDto[] }> {
  const w = new Where();
  if (q.keyword) keywordCondition(w, q.keyword);
  if (q.filters) filterConditions(w, q.filters);
  if (q.state) w.parts.push(`state = ${w.p(q.state)}`);
  const pageSize = q.pageSize ?? 20;
  const offset = ((q.page ?? 1) - 1) * pageSize;
  const [{ n }] = await db.query<{ n: number }>(`select count(*)::int as n from boards where ${w.sql()}`, w.params);
  const rows = await db.query<BoardRow>(
    `select * from boards where ${w.sql()} order by name, id limit ${w.p(pageSize)}::int offset ${w.p(offset)}::int`,
    w.params,
  );
  return { total: n, items: rows.map(toBoardDto) };
}
