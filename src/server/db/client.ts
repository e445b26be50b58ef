// Storage: PGlite (PostgreSQL compiled to WASM) in a folder of the data directory by default, or a
// PostgreSQL server when DATABASE_URL is set. One Drizzle instance over either, one set of SQL
// migrations (src/server/db/migrations/NNNN_<feature>.sql) applied in order at start.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import { PgliteStatements, withStatementCache } from './pglite-statements.ts';

export type Db = PgDatabase<PgQueryResultHKT>;

/**
 * A statement built once per database and prepared there (PostgreSQL parses it once per connection):
 * for the queries every call makes. Keyed by the Db, since tests open many. On PGlite every query
 * text is prepared once anyway, by the statement cache (pglite-statements.ts).
 */
export function preparedPer<T>(build: (db: Db) => T): (db: Db) => T {
  const built = new WeakMap<Db, T>();
  return (db) => {
    let q = built.get(db);
    if (q === undefined) {
      q = build(db);
      built.set(db, q);
    }
    return q;
  };
}

export interface Storage {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** Run SQL text that may hold several statements and no parameters (migrations, test resets). */
  exec(sqlText: string): Promise<void>;
  /** A parameterised query on the raw driver, for the few places Drizzle's builder does not reach. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
  /** Run `fn` on one connection (session-level locks need it); PGlite has only one. */
  session<T>(fn: (s: Pick<Storage, 'exec' | 'query'>) => Promise<T>): Promise<T>;
}

export interface StorageOptions {
  databaseUrl?: string;
  /** Folder of the PGlite database, or `memory://` for a throwaway one. */
  pgliteDir: string;
  /**
   * A new PGlite database starts from this dump of a data directory (PGlite's dumpDataDir) instead of
   * running initdb: about half a second instead of three to six. The tests seed theirs with an empty,
   * migrated database; an existing folder ignores it.
   */
  pgliteSeed?: Blob;
}

export async function openStorage(opts: StorageOptions): Promise<Storage> {
  if (opts.databaseUrl) {
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 10 });
    // An idle connection the server ends (restart, failover, an administrator's terminate) emits
    // 'error' on the pool; unhandled it would crash the process. The pool replaces it on next use.
    pool.on('error', (err) => {
      process.stderr.write(`bianbu: a database connection was lost: ${err.message}\n`);
    });
    await pool.query('select 1');
    return {
      db: drizzlePg(pool) as unknown as Db,
      kind: 'postgres',
      exec: async (text) => {
        await pool.query(text);
      },
      query: async <T>(text: string, params: unknown[] = []) => (await pool.query(text, params)).rows as T[],
      close: () => pool.end(),
      session: async (fn) => {
        const conn = await pool.connect();
        try {
          return await fn({
            exec: async (text) => {
              await conn.query(text);
            },
            query: async <T>(text: string, params: unknown[] = []) =>
              (await conn.query(text, params)).rows as T[],
          });
        } finally {
          conn.release();
        }
      },
    };
  }
  if (opts.pgliteDir !== 'memory://') fs.mkdirSync(opts.pgliteDir, { recursive: true, mode: 0o700 });
  const fresh = opts.pgliteDir === 'memory://' || !fs.existsSync(path.join(opts.pgliteDir, 'PG_VERSION'));
  const seed = opts.pgliteSeed && fresh ? { loadDataDir: opts.pgliteSeed } : {};
  const client =
    opts.pgliteDir === 'memory://' ? new PGlite(seed) : new PGlite({ dataDir: opts.pgliteDir, ...seed });
  await client.waitReady;
  const cached = withStatementCache(client, new PgliteStatements(client));
  const storage: Storage = {
    db: drizzlePglite(cached) as unknown as Db,
    kind: 'pglite',
    exec: async (text) => {
      await client.exec(text);
    },
    query: async <T>(text: string, params: unknown[] = []) => (await cached.query<T>(text, params)).rows,
    close: () => client.close(),
    session: (fn) => fn(storage),
  };
  return storage;
}

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * Applies every migration not yet applied, in file-name order, each in its own transaction. On
 * PostgreSQL an advisory lock makes concurrent starts of several instances take turns.
 */
export function migrate(storage: Storage): Promise<string[]> {
  return storage.session((s) => migrateOn(s, storage.kind));
}

async function migrateOn(storage: Pick<Storage, 'exec' | 'query'>, kind: Storage['kind']): Promise<string[]> {
  const files = fs
    .readdirSync(migrationsDir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort();
  const applied: string[] = [];
  if (kind === 'postgres') await storage.exec('select pg_advisory_lock(727274)');
  try {
    await storage.exec(
      'create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())',
    );
    const done = new Set(
      (await storage.query<{ name: string }>('select name from schema_migrations')).map((r) => r.name),
    );
    for (const file of files) {
      if (done.has(file)) continue;
      const text = fs.readFileSync(path.join(migrationsDir, file), 'utf8');
      await storage.exec(
        `begin;\n${text}\n;insert into schema_migrations (name) values ('${file.replace(/'/g, "''")}');\ncommit;`,
      );
      applied.push(file);
    }
  } catch (err) {
    await storage.exec('rollback').catch(() => {});
    throw err;
  } finally {
    if (kind === 'postgres') await storage.exec('select pg_advisory_unlock(727274)');
  }
  return applied;
}
