#!/usr/bin/env node
// The README's test command: typecheck, lint, unit, integration on PGlite, integration again on
// PostgreSQL when DATABASE_URL is set, then the browser suite against the built console.
import { spawnSync } from 'node:child_process';

const steps = [
  ['typecheck', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], {}],
  ['lint', 'node', ['scripts/lint.mjs'], {}],
  // The CLI suites run the `bianbu` binary as a subprocess; bundled, each run starts in half the time.
  ['cli bundle', 'node', ['scripts/build-cli.mjs'], {}],
  ['unit', 'npx', ['vitest', 'run', '--project', 'unit'], {}],
  ['integration (PGlite)', 'npx', ['vitest', 'run', '--project', 'integration'], { DATABASE_URL: '' }],
];
// Suites that never open the service's storage (drivers, sandboxes, the SFTP pipe) or pin PGlite on
// purpose (a crashed service's data directory) gain nothing from a second pass on PostgreSQL.
const storageFree = [
  'boards-driver',
  'isolation-local-board',
  'sftp-stdio',
  'files-board-disk',
  'flash-crash',
  'storage-pglite',
];
if (process.env.DATABASE_URL) {
  steps.push([
    'integration (PostgreSQL)',
    'npx',
    [
      'vitest',
      'run',
      '--project',
      'integration',
      ...storageFree.flatMap((f) => ['--exclude', `tests/integration/${f}.test.ts`]),
    ],
    { DATABASE_URL: process.env.DATABASE_URL },
  ]);
}
steps.push(['build', 'npx', ['vite', 'build', '--logLevel', 'warn'], {}]);
// What a first visit downloads (scripts/bundle-report.mjs), in each of the console's languages: the
// landing page, sign-in and /mainboard must each stay within issue 16's 200 KB of gzipped JavaScript
// (README, First load). It fails when any of them grows past it.
steps.push([
  'first-load budget',
  'node',
  ['scripts/bundle-report.mjs', '--lang', 'zh,en,ja', '--budget-kb', '200'],
  {},
]);
steps.push(['e2e', 'npx', ['vitest', 'run', '--project', 'e2e'], { DATABASE_URL: '' }]);

const only = process.argv.slice(2);
let failed = 0;
let passed = 0;
for (const [name, cmd, args, env] of steps) {
  if (only.length && !only.some((o) => name.startsWith(o))) continue;
  const started = Date.now();
  process.stdout.write(`\n=== ${name}\n`);
  const childEnv = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === '') delete childEnv[k];
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: childEnv });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status === 0) {
    passed++;
    process.stdout.write(`=== ${name}: ok (${secs}s)\n`);
  } else {
    failed++;
    process.stdout.write(`=== ${name}: FAILED (${secs}s)\n`);
  }
}
process.stdout.write(`\nsteps: ${passed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
