// Starts the real service as a child process (`node --no-memory-reducer dist/server/main.mjs`, as
// `npm start` does) on a free port with a fresh data directory, waits for /api/health, and stops it
// again. The console it serves is the built one in dist/web; both are built here first when missing
// or older than their sources.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_NODE_FLAGS } from '#server/system/gc-policy.ts';
import { seedPgliteDir } from '../../integration/helpers/pglite-seed.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const WEB_DIR = process.env.BIANBU_WEB_DIR
  ? path.resolve(process.env.BIANBU_WEB_DIR)
  : path.join(ROOT, 'dist/web');

export interface Service {
  url: string;
  port: number;
  dataDir: string;
  /** Everything the service printed so far (for failure messages). */
  output: () => string;
  stop: () => Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function newestMtime(target: string): number {
  const st = fs.statSync(target, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = 0;
  for (const entry of fs.readdirSync(target))
    newest = Math.max(newest, newestMtime(path.join(target, entry)));
  return newest;
}

/** `npm run test:e2e` builds first; a bare `vitest run --project e2e` gets a build here when needed. */
export function ensureConsoleBuilt(): void {
  if (process.env.BIANBU_WEB_DIR) return;
  const built = fs.statSync(path.join(WEB_DIR, 'index.html'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const sources = Math.max(
    ...['src/web', 'src/shared', 'locales', 'index.html', 'vite.config.ts', 'tailwind.config.ts'].map((p) =>
      newestMtime(path.join(ROOT, p)),
    ),
  );
  if (built >= sources) return;
  const res = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'],
    // vitest sets NODE_ENV=test, which would make this a development build of React (the first-load
    // test then measured 125 KB for the entry chunk instead of 72): build as the README does.
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NODE_ENV: 'production' } },
  );
  if (res.status !== 0) throw new Error(`vite build failed:\n${res.stdout}\n${res.stderr}`);
}

export const SERVER_BUNDLE = path.join(ROOT, 'dist/server/main.mjs');

/** The service's bundle (scripts/bundle.mjs), rebuilt when older than its sources (half a second). */
export function ensureServerBuilt(): void {
  const built = fs.statSync(SERVER_BUNDLE, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const sources = Math.max(...['src/server', 'src/shared'].map((p) => newestMtime(path.join(ROOT, p))));
  if (built >= sources) return;
  const res = spawnSync(process.execPath, [path.join(ROOT, 'scripts/bundle.mjs')], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (res.status !== 0) throw new Error(`the service's bundle failed:\n${res.stdout}\n${res.stderr}`);
}

export async function startService(env: Record<string, string> = {}): Promise<Service> {
  ensureConsoleBuilt();
  ensureServerBuilt();
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-e2e-'));
  // Its database starts empty and migrated, copied from a seed instead of made by initdb (seconds).
  await seedPgliteDir(path.join(dataDir, 'pglite'));
  const url = `http://127.0.0.1:${port}`;
  let out = '';
  // Each run gets its own PGlite database and in-process bus: the suite never touches a shared
  // PostgreSQL or Redis the integration tests may be using.
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    BIANBU_DATA_DIR: dataDir,
    BIANBU_PUBLIC_URL: url,
    BIANBU_WEB_DIR: WEB_DIR,
    LOG_LEVEL: 'warn',
    // A suite's service never installs code-server on the host (.ci/run does, before the tests).
    BIANBU_CODE_SERVER_INSTALL: 'off',
    ...env,
  };
  if (!('DATABASE_URL' in env)) delete childEnv.DATABASE_URL;
  if (!('REDIS_URL' in env)) delete childEnv.REDIS_URL;
  const child: ChildProcess = spawn(process.execPath, [...SERVICE_NODE_FLAGS, SERVER_BUNDLE], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  let exited: number | null = null;
  child.on('exit', (code) => {
    exited = code ?? -1;
  });

  // Most of a suite's set-up budget (hookTimeout, 180 s): beside a load the service once took over 90 s
  // to start (most of it loading its modules through tsx, before the bundle), and nine suites failed on
  // a slow, good start.
  const deadline = Date.now() + 150_000;
  for (;;) {
    if (exited !== null) throw new Error(`the service exited with ${exited} before it was ready:\n${out}`);
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the service did not answer /api/health within 150 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }

  return {
    url,
    port,
    dataDir,
    output: () => out,
    stop: async () => {
      if (exited === null) {
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await gone;
        clearTimeout(timer);
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
