// PGlite's statement cache (src/server/db/pglite-statements.ts): a query text is prepared once and
// then only bound and executed; the answers, errors and locking are those of PGlite's own query().
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PgliteStatements, withStatementCache } from '#server/db/pglite-statements.ts';

let client: PGlite;
let cache: PgliteStatements;

/** Our named statements, as the backend holds them. */
async function prepared(): Promise<string[]> {
  const r = await client.query<{ statement: string }>(
    "select statement from pg_prepared_statements where name like 'bianbu_s%' order by prepare_time",
  );
  return r.rows.map((x) => x.statement);
}

beforeEach(async () => {
  client = new PGlite();
  await client.waitReady;
  await client.exec(`create table t (id serial primary key, name text unique, at timestamptz, n int, j jsonb, tags text[]);
    insert into t (name, at, n, j, tags) values ('a', '2026-01-02T03:04:05Z', 1, '{"x":1}', '{p,q}'), ('b', null, 2, null, null)`);
  cache = new PgliteStatements(client, { max: 3 });
});
afterEach(async () => {
  await client.close();
});

describe('the PGlite statement cache', () => {
  it('answers as query() does: rows in both modes, fields, returning and affected rows, with null, date, json and array parameters', async () => {
    const select =
      'select id, name, at, n, j, tags from t where n >= $1 and (name = any($2) or $3::text is null) order by id';
    const args = [1, ['a', 'b'], null];
    for (const options of [undefined, { rowMode: 'array' as const }]) {
      const mine = await cache.query(select, args, options);
      const theirs = await client.query(select, args, options);
      expect(mine.rows).toEqual(theirs.rows);
      expect(mine.fields).toEqual(theirs.fields);
      expect(mine.rows).toHaveLength(2);
    }
    const at = new Date('2026-05-06T07:08:09.010Z');
    const ins = await cache.query<{ id: number; at: Date; j: unknown; tags: string[] }>(
      'insert into t (name, at, n, j, tags) values ($1, $2, $3, $4, $5) returning id, at, j, tags',
      ['c', at, 3, JSON.stringify({ y: [1, 2] }), ['r', 's']],
    );
    expect(ins.rows[0]).toMatchObject({ at, j: { y: [1, 2] }, tags: ['r', 's'] });
    expect(ins.affectedRows).toBe(1);
    const upd = await cache.query('update t set n = n + $1 where n < $2', [10, 3]);
    expect(upd.affectedRows).toBe(2);
    expect(upd.rows).toEqual([]);
    expect((await client.query<{ s: number }>('select sum(n)::int as s from t')).rows[0].s).toBe(11 + 12 + 3);
  });

  it('prepares a text once however often it runs, and keeps at most `max`, closing the least recently used', async () => {
    for (let i = 0; i < 5; i++) await cache.query('select name from t where id = $1', [1]);
    expect(await prepared()).toEqual(['select name from t where id = $1']);
    await cache.query('select 1 as a');
    await cache.query('select 2 as b');
    await cache.query('select name from t where id = $1', [2]); // now the most recently used
    await cache.query('select 3 as c'); // a fourth: `select 1 as a` goes
    expect(cache.size).toBe(3);
    expect((await prepared()).sort()).toEqual([
      'select 2 as b',
      'select 3 as c',
      'select name from t where id = $1',
    ]);
    expect((await cache.query<{ a: number }>('select 1 as a')).rows).toEqual([{ a: 1 }]);
  });

  it('throws the database error with its code and statement, keeps nothing broken, and stays usable', async () => {
    const dup = await cache.query('insert into t (name) values ($1)', ['a']).catch((e: unknown) => e);
    expect(dup).toMatchObject({ code: '23505', query: 'insert into t (name) values ($1)', params: ['a'] });
    const bad = await cache.query('selec nonsense').catch((e: unknown) => e);
    expect(bad).toMatchObject({ code: '42601' });
    expect(await prepared()).toEqual(['insert into t (name) values ($1)']);
    const wrongType = await cache
      .query('select name from t where id = $1', ['not a number'])
      .catch((e: unknown) => e);
    expect(wrongType).toMatchObject({ code: '22P02' });
    expect((await cache.query<{ name: string }>('select name from t where id = $1', [2])).rows).toEqual([
      { name: 'b' },
    ]);
  });

  it('runs again, prepared afresh, a statement whose table changed shape', async () => {
    expect(
      Object.keys((await cache.query('select * from t where id = $1', [1])).rows[0] as object),
    ).not.toContain('z');
    await client.exec('alter table t add column z int default 7');
    const row = (await cache.query<{ z: number }>('select * from t where id = $1', [1])).rows[0];
    expect(row.z).toBe(7);
    expect(await prepared()).toEqual(['select * from t where id = $1']);
  });

  it('waits for a transaction in progress, as query() does, and serves Drizzle through the proxy', async () => {
    const db = drizzle(withStatementCache(client, cache));
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const tx = db.transaction(async (t) => {
      await t.execute(sql`insert into t (name, n) values ('in-tx', 100)`);
      await held;
      await t.execute(sql`update t set n = 101 where name = 'in-tx'`);
    });
    // Issued while the transaction holds the connection: it must see the transaction's end, not its middle.
    const during = cache.query<{ n: number }>('select n from t where name = $1', ['in-tx']);
    await new Promise((r) => setTimeout(r, 50));
    release();
    await tx;
    expect((await during).rows).toEqual([{ n: 101 }]);
    const viaDrizzle = await db.execute<{ name: string }>(sql`select name from t where n = ${101}`);
    expect(viaDrizzle.rows).toEqual([{ name: 'in-tx' }]);
    expect(await prepared()).toContain('select name from t where n = $1');
  });
});
