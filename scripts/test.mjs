#!/usr/bin/env node
// The README's test command: typecheck, lint, unit, integration on PGlite, integration again on
// PostgreSQL when DATABASE_URL is set, then the browser suite against the built console.
//
// Two lanes run side by side once the console and the bundles are built. The riscv64 boards' lane
// (QEMU under TCG: emulation for about twenty minutes, one file at a time) runs its integration files
// at a lower CPU priority, so they take what the main lane leaves: the browser suite used about half
// of this 2-core machine, a riscv64 file about 70 %. One after the other the whole run took an hour.
// The riscv64 lane's output is kept in a file and printed once, when it ends, after the main lane's.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const vitest = (...args) => ['npx', ['vitest', 'run', ...args]];

/** Built first, one after the other: every later step uses them. */
const before = [
  ['typecheck', 'npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], {}],
  ['lint', 'node', ['scripts/lint.mjs'], {}],
  // The CLI suites run the `bianbu` binary as a subprocess, bundled (each run starts in half the time);
  // the suites that start the service as a process start its bundle, as `npm start` does.
  ['bundles', 'node', ['scripts/bundle.mjs'], {}],
  ['build', 'npx', ['vite', 'build', '--logLevel', 'warn'], {}],
  // What a first visit downloads (scripts/bundle-report.mjs), in each of the console's languages: the
  // landing page, sign-in and /mainboard must each stay within issue 16's 200 KB of gzipped JavaScript
  // (README, First load). It fails when any of them grows past it.
  [
    'first-load budget',
    'node',
    ['scripts/bundle-report.mjs', '--lang', 'zh,en,ja', '--budget-kb', '200'],
    {},
  ],
];

const RISCV_E2E = 'tests/e2e/riscv-board.test.ts';
const main = [
  ['unit', ...vitest('--project', 'unit'), {}],
  ['integration (PGlite)', ...vitest('--project', 'integration'), { DATABASE_URL: '' }],
];
// riscv64 boards under QEMU, one file at a time (vitest.config.ts): they never open PostgreSQL. The
// integration files run niced (QEMU is throughput, its waits are minutes); the browser's file is not.
const NICE = new Set(['integration riscv64']);
const riscv = [
  ['integration riscv64', ...vitest('--project', 'integration-riscv'), { DATABASE_URL: '' }],
  ['e2e riscv64', ...vitest('--project', 'e2e', RISCV_E2E), { DATABASE_URL: '' }],
];

// The suites whose subject is what the service stores (leases, the queue, sharing, identities,
// images, sequences, hosts, sessions) run again on PostgreSQL. The others assert a sandbox's, a
// driver's or a byte path's behaviour through the same storage calls, and run on PGlite only.
const storageBound = [
  'board-hosts',
  'cli-seq',
  'contract',
  'flash',
  'flash-images',
  'flash-images-race',
  'flash-instances',
  'foundation',
  'hardening-ids',
  'hardening-realtime-sessions',
  'hardening-realtime-sessions-redis',
  'hardening-throttle',
  'identity',
  'identity-admin',
  'identity-external',
  'identity-oidc',
  'keymap',
  'leases',
  'leases-lab',
  'leases-race',
  'leases-scheduler',
  'plugins',
  'queue',
  'queue-race',
  'realtime',
  'realtime-redis',
  'sequences',
  'share',
  'share-orgs',
  'storage-pg',
];
if (process.env.DATABASE_URL) {
  main.push([
    'integration (PostgreSQL)',
    ...vitest('--project', 'integration', ...storageBound.map((f) => `tests/integration/${f}.test.ts`)),
    { DATABASE_URL: process.env.DATABASE_URL },
  ]);
  // The board farm across network namespaces: two instances on one PostgreSQL and Redis (issue 37).
  main.push([
    'integration cluster (PostgreSQL)',
    ...vitest('--project', 'integration-cluster'),
    { DATABASE_URL: process.env.DATABASE_URL },
  ]);
}
main.push(['e2e', ...vitest('--project', 'e2e'), { DATABASE_URL: '', BIANBU_TEST_EXCLUDE: RISCV_E2E }]);

const only = process.argv.slice(2);
const chosen = (list) => list.filter(([name]) => !only.length || only.some((o) => name.startsWith(o)));
// Each vitest step also writes a JSON report; a failed step's tests are named again at the very end,
// so the last lines of a long log (all a CI summary may keep) say what failed and where.
const reports = mkdtempSync(join(tmpdir(), 'bianbu-test-'));
const failures = [];
let failed = 0;
let passed = 0;

/** Runs one step, its output to `out` (the terminal or a file); answers whether it passed. */
function run([name, cmd, args, env], out) {
  const started = Date.now();
  out.write(`\n=== ${name}\n`);
  const childEnv = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === '') delete childEnv[k];
  const report = join(reports, `${name.replace(/[^a-z0-9]+/gi, '-')}.json`);
  const isVitest = args[0] === 'vitest';
  const fullArgs = isVitest
    ? [...args, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`]
    : args;
  const [file, argv] = NICE.has(name) ? ['nice', ['-n', '10', cmd, ...fullArgs]] : [cmd, fullArgs];
  const toTerminal = out === process.stdout;
  const child = spawn(file, argv, {
    stdio: toTerminal ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    env: childEnv,
  });
  if (!toTerminal) {
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
  }
  return new Promise((resolve) => {
    child.on('close', (code) => {
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      if (code === 0) {
        passed++;
        out.write(`=== ${name}: ok (${secs}s)\n`);
      } else {
        failed++;
        out.write(`=== ${name}: FAILED (${secs}s)\n`);
        failures.push({ name, lines: isVitest ? failedTests(report) : [] });
      }
      resolve(code === 0);
    });
  });
}

async function lane(steps, out) {
  for (const step of steps) await run(step, out);
}

await lane(chosen(before), process.stdout);
const riscvSteps = chosen(riscv);
const riscvLog = join(reports, 'riscv64.log');
const riscvOut = createWriteStream(riscvLog);
if (riscvSteps.length)
  process.stdout.write(`\n(the riscv64 lane runs beside the others; its output follows theirs)\n`);
await Promise.all([lane(chosen(main), process.stdout), lane(riscvSteps, riscvOut)]);
await new Promise((r) => riscvOut.end(r));
if (riscvSteps.length) process.stdout.write(`\n--- the riscv64 lane ---\n${readFileSync(riscvLog, 'utf8')}`);

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
      .map((l) => `    ${l.slice(0, 900)}`);
  for (const result of json.testResults ?? []) {
    const path = relative(process.cwd(), result.name ?? '');
    const tests = (result.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of tests) out.push(`${path} > ${t.fullName}`, ...brief(t.failureMessages?.[0]));
    if (!tests.length && result.status === 'failed') out.push(path, ...brief(result.message));
  }
  return out.length ? out : ['(the report names no failed test)'];
}
