// How long the service takes from `node` to its first 200 on /api/health (sandbox boards only, riscv64
// boards off), four ways, interleaved over ROUNDS rounds: from the sources through tsx or from the
// esbuild bundle (npm start), and on a new data directory (PGlite runs initdb and every migration)
// or one seeded with an empty migrated database (what the tests' services start from). Medians (range).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from '../e2e/helpers/service.ts';
import { seedPgliteDir } from '../integration/helpers/pglite-seed.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const bundle = path.join(ROOT, 'dist/server/main.mjs');
const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts/bundle.mjs')], {
  stdio: 'inherit',
});
if (build.status !== 0) throw new Error('the bundle did not build');

async function startOnce(entry: string[], seeded: boolean): Promise<number> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-bench-start-'));
  if (seeded) await seedPgliteDir(path.join(dataDir, 'pglite'));
  const port = await freePort();
  const started = performance.now();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    BIANBU_DATA_DIR: dataDir,
    BIANBU_PUBLIC_URL: `http://127.0.0.1:${port}`,
    BIANBU_RISCV_BOARDS: '0',
    BIANBU_CODE_SERVER_INSTALL: 'off',
  };
  // PGlite and the in-process bus, whatever this shell has set.
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const child = spawn(process.execPath, ['--no-memory-reducer', ...entry], {
    cwd: ROOT,
    stdio: 'ignore',
    env,
  });
  let exited = false;
  const gone = new Promise((r) =>
    child.once('exit', () => {
      exited = true;
      r(null);
    }),
  );
  try {
    for (const deadline = Date.now() + 120_000; ; ) {
      const ok = await fetch(`http://127.0.0.1:${port}/api/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return performance.now() - started;
      if (exited) throw new Error(`the service exited before answering (${entry.join(' ')})`);
      if (Date.now() > deadline) throw new Error('no /api/health within 120 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    child.kill('SIGTERM');
    await gone;
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const ways: [string, string[], boolean][] = [
  ['sources (tsx), new data dir', ['--import', 'tsx', 'src/server/main.ts'], false],
  ['sources (tsx), seeded', ['--import', 'tsx', 'src/server/main.ts'], true],
  ['bundle, new data dir', [bundle], false],
  ['bundle, seeded', [bundle], true],
];
const times = new Map<string, number[]>(ways.map(([n]) => [n, []]));
// One start that warms tsx's transform cache and the seed, not counted.
await startOnce(ways[1][1], true);
for (let round = 0; round < ROUNDS; round++)
  for (const [name, entry, seeded] of ways) times.get(name)!.push(await startOnce(entry, seeded));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`service start to /api/health, ${ROUNDS} rounds, load ${os.loadavg()[0].toFixed(2)}, ms:`);
console.log('| start | median ms | range |');
console.log('| --- | --- | --- |');
for (const [name, xs] of times)
  console.log(
    `| ${name} | ${median(xs).toFixed(0)} | ${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)} |`,
  );
