// Builds the real app for a test: PGlite in memory by default (started from a migrated seed,
// pglite-seed.ts); with DATABASE_URL set, a fresh PostgreSQL database per app (created here, dropped
// on close), so suites never see each other's rows.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { type BuildOptions, buildApp } from '#server/app.ts';
import type { Clock } from '#server/clock.ts';
import { testConfig } from '#server/config.ts';
import { openStorage, type Storage } from '#server/db/client.ts';
import { pgliteSeed } from './pglite-seed.ts';

export interface TestAppOptions {
  env?: Parameters<typeof testConfig>[0];
  clock?: Clock;
  features?: BuildOptions['features'];
  /** Share this storage (several instances on one database). */
  storage?: Storage;
}

export interface TestApp {
  app: FastifyInstance;
  dataDir: string;
  storage: Storage;
  close(): Promise<void>;
}

export const usingPostgres = () => Boolean(process.env.DATABASE_URL);

export async function freshStorage(): Promise<{ storage: Storage; url?: string; drop(): Promise<void> }> {
  const base = process.env.DATABASE_URL;
  if (!base) {
    const storage = await openStorage({ pgliteDir: 'memory://', pgliteSeed: await pgliteSeed() });
    return { storage, drop: async () => {} };
  }
  const name = `bianbu_t_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const storage = await openStorage({ databaseUrl: url.toString(), pgliteDir: '' });
  return {
    storage,
    url: url.toString(),
    drop: async () => {
      const a = new pg.Client({ connectionString: base });
      await a.connect();
      await a.query(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

/** Data directories of apps not closed yet: a test that never closes its app leaves none behind. */
const openDataDirs = new Set<string>();
process.once('exit', () => {
  for (const d of openDataDirs) fs.rmSync(d, { recursive: true, force: true });
});

export async function makeTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-test-'));
  openDataDirs.add(dataDir);
  const fresh = opts.storage ? null : await freshStorage();
  const storage = opts.storage ?? fresh!.storage;
  const config = testConfig({ BIANBU_DATA_DIR: dataDir, ...(opts.env ?? {}) });
  const app = await buildApp({ config, storage, clock: opts.clock, features: opts.features, logger: false });
  await app.ready();
  return {
    app,
    dataDir,
    storage,
    close: async () => {
      try {
        await app.close();
        if (fresh) {
          await storage.close();
          await fresh.drop();
        }
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
        openDataDirs.delete(dataDir);
      }
    },
  };
}
