// An empty PGlite database with every migration applied, made once per machine and set of migrations,
// that the tests' services start from instead of running initdb each: a fresh PGlite took 2.5–6 s to
// open on a loaded 2-core machine, one loaded from this dump 0.5 s, and the suites open a hundred.
// A whole service started from it answers /api/health in 3.7 s instead of 7.9 (idle machine, medians;
// tests/bench/service-start.bench.ts).
//
// The dump lives in the temporary directory under a name hashed from PGlite's version and the
// migrations' names and texts, so a changed migration makes a new one. Written to a temporary name
// and renamed, so concurrent workers never read half a file.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { migrate, type Storage } from '#server/db/client.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const MIGRATIONS = path.join(ROOT, 'src/server/db/migrations');

function seedName(): string {
  const h = crypto.createHash('sha256');
  const pkg = JSON.parse(
    fs.readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8'),
  ) as { version: string };
  h.update(pkg.version);
  for (const f of fs.readdirSync(MIGRATIONS).sort())
    h.update(f).update(fs.readFileSync(path.join(MIGRATIONS, f)));
  return `bianbu-pglite-seed-${h.digest('hex').slice(0, 16)}`;
}

async function makeDump(file: string): Promise<Buffer> {
  const client = new PGlite();
  await client.waitReady;
  const storage = {
    kind: 'pglite',
    exec: async (text: string) => {
      await client.exec(text);
    },
    query: async (text: string, params: unknown[] = []) => (await client.query(text, params)).rows,
    session: (fn: (s: unknown) => unknown) => fn(storage),
  } as unknown as Storage;
  await migrate(storage);
  const bytes = Buffer.from(await (await client.dumpDataDir('none')).arrayBuffer());
  await client.close();
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, file);
  return bytes;
}

let dump: Promise<Blob> | null = null;

/** The dump of an empty, migrated database (openStorage's pgliteSeed). */
export function pgliteSeed(): Promise<Blob> {
  dump ??= (async () => {
    const file = path.join(os.tmpdir(), `${seedName()}.tar`);
    const bytes = fs.existsSync(file) ? fs.readFileSync(file) : await makeDump(file);
    return new Blob([new Uint8Array(bytes)]);
  })();
  return dump;
}

/**
 * A PGlite data directory made from the seed, once per machine, for services started as processes:
 * copied to `dest` (their data directory's `pglite`), it opens without initdb or migrations.
 */
export async function seedPgliteDir(dest: string): Promise<void> {
  const dir = path.join(os.tmpdir(), `${seedName()}.d`);
  if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) {
    const tmp = fs.mkdtempSync(`${dir}.tmp-`);
    const client = new PGlite({ dataDir: tmp, loadDataDir: await pgliteSeed() });
    await client.waitReady;
    await client.close();
    try {
      fs.renameSync(tmp, dir);
    } catch {
      // Another worker made it first.
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  fs.cpSync(dir, dest, { recursive: true });
}
