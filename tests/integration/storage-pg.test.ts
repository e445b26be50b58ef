// PostgreSQL storage survives the server ending its connections (restart, failover, an
// administrator's terminate): the pool replaces them and the process does not crash.
import crypto from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '#server/db/client.ts';

const base = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/test';
const name = `bianbu_t_${crypto.randomBytes(6).toString('hex')}`;

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

describe('storage on a PostgreSQL server', () => {
  let storage: Storage;
  beforeAll(async () => {
    await admin((c) => c.query(`create database ${name}`));
    const url = new URL(base);
    url.pathname = `/${name}`;
    storage = await openStorage({ databaseUrl: url.toString(), pgliteDir: '' });
  });
  afterAll(async () => {
    await storage?.close();
    await admin((c) => c.query(`drop database if exists ${name} with (force)`));
  });

  it('keeps answering after the server terminates its idle connections', async () => {
    await Promise.all([1, 2, 3].map((n) => storage.query('select $1::int as n', [n])));
    const killed = await admin((c) =>
      c.query(
        'select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity where datname = $1) t',
        [name],
      ),
    );
    expect(killed.rows[0].n).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 200));
    const [row] = await storage.query<{ n: number }>('select 42::int as n');
    expect(row.n).toBe(42);
  });
});
