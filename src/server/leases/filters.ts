// filterReq → SQL over the boards table. The same semantics as filter-device: a key is an attribute
// name (or `model` / `name` for those columns); a value matches exactly (strings case-insensitively,
// numbers and booleans by their text), a list matches any of its values, {min, max} is a numeric range.
import { type SQL, sql } from 'drizzle-orm';
import type { z } from 'zod';
import type { attributeFilters } from '#shared/boards.ts';

export type AttributeFilters = z.output<typeof attributeFilters>;

/** A condition on the boards row aliased `b`; `true` for no filters. */
export function boardFilterSql(filters: AttributeFilters): SQL {
  const parts: SQL[] = [];
  for (const [key, f] of Object.entries(filters)) {
    const isColumn = key === 'model' || key === 'name';
    const text = key === 'model' ? sql`b.model` : key === 'name' ? sql`b.name` : sql`(b.attributes ->> ${key})`;
    if (Array.isArray(f)) {
      const values = f.map((v) => sql`${String(v).toLowerCase()}`);
      parts.push(sql`lower(${text}) in (${sql.join(values, sql`, `)})`);
    } else if (typeof f === 'object' && f !== null) {
      if (isColumn) {
        parts.push(sql`false`);
        continue;
      }
      const num = sql`(case when jsonb_typeof(b.attributes -> ${key}) = 'number' then (b.attributes ->> ${key})::numeric end)`;
      if (f.min !== undefined) parts.push(sql`${num} >= ${f.min}`);
      if (f.max !== undefined) parts.push(sql`${num} <= ${f.max}`);
    } else {
      parts.push(sql`lower(${text}) = ${String(f).toLowerCase()}`);
    }
  }
  return parts.length ? sql.join(parts, sql` and `) : sql`true`;
}
