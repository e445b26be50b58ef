#!/usr/bin/env node
// The README's test command: typecheck, lint, unit, integration on PGlite, integration again on
// PostgreSQL when DATABASE_URL is set, then the browser suite against the built console.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const steps = [
  ['typecheck', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], {}],
  ['lint', 'node', ['scripts/lint.mjs'], {}],
  // The CLI suites run the `bianbu` binary as a subprocess; bundled, each run starts in half the time.
  ['cli bundle', 'node', ['scripts/build-cli.mjs'], {}],
  ['unit', 'npx', ['vitest', 'run', '--project', 'unit'], {}],
  ['integration (PGlite)', 'npx', ['vitest', 'run', '--project', 'integration'], { DATABASE_URL: '' }],
  // riscv64 boards under QEMU, one file at a time (vitest.config.ts): they never open PostgreSQL.
  ['integration riscv64', 'npx', ['vitest', 'run', '--project', 'integration-riscv'], { DATABASE_URL: '' }],
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
  // Killed instances on fresh PGlite data directories; hostile images against a driver.
  'host-recovery',
  'host-safety-images',
  // QEMU boards' raw disk image writer: files and decompressors only.
  'raw-image',
  // A real riscv64 QEMU board booted, reset and flashed: minutes of emulation, once is enough.
  'riscv-boards',
  // A riscv64 board on a network under each policy, attacked from inside: minutes of emulation too.
  'riscv-network',
  // A riscv64 board's own screen through its relay: one boot.
  'riscv-screen',
  // riscv64 disk snapshots: qemu-img on small files, one real board, a service killed mid-restore.
  'riscv-snapshots',
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
// Each vitest step also writes a JSON report; a failed step's tests are named again at the very end,
// so the last lines of a long log (all a CI summary may keep) say what failed and where.
const reports = mkdtempSync(join(tmpdir(), 'bianbu-test-'));
const failures = [];
let failed = 0;
let passed = 0;
for (const [name, cmd, args, env] of steps) {
  if (only.length && !only.some((o) => name.startsWith(o))) continue;
  const started = Date.now();
  process.stdout.write(`\n=== ${name}\n`);
  const childEnv = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === '') delete childEnv[k];
  const report = join(reports, `${name.replace(/[^a-z]+/gi, '-')}.json`);
  const vitest = args[0] === 'vitest';
  const fullArgs = vitest
    ? [...args, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`]
    : args;
  const r = spawnSync(cmd, fullArgs, { stdio: 'inherit', env: childEnv });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status === 0) {
    passed++;
    process.stdout.write(`=== ${name}: ok (${secs}s)\n`);
  } else {
    failed++;
    process.stdout.write(`=== ${name}: FAILED (${secs}s)\n`);
    failures.push({ name, lines: vitest ? failedTests(report) : [] });
  }
}
process.stdout.write(`\nsteps: ${passed} passed, ${failed} failed\n`);
for (const { name, lines } of failures) {
  process.stdout.write(`failed step: ${name}\n`);
  for (const line of lines) process.stdout.write(`  ${line}\n`);
}
rmSync(reports, { recursive: true, force: true });
process.exit(failed ? 1 : 0);

/** The failed tests (and failed files, such as a hook that threw) of a vitest JSON report, a few lines each. */
function failedTests(file) {
  let json;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return ['(no test report: the run stopped before writing one)'];
  }
  const out = [];
  const brief = (text) =>
    String(text ?? '')
      .replace(/\x1b\[[0-9;]*m/g, '')
      .split('\n')
      .filter((l) => l.trim() && !l.includes('node_modules'))
      .slice(0, 4)
      .map((l) => `    ${l.slice(0, 300)}`);
  for (const result of json.testResults ?? []) {
    const path = relative(process.cwd(), result.name ?? '');
    const tests = (result.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of tests) out.push(`${path} > ${t.fullName}`, ...brief(t.failureMessages?.[0]));
    if (!tests.length && result.status === 'failed') out.push(path, ...brief(result.message));
  }
  return out.length ? out : ['(the report names no failed test)'];
}
