// `npm run bench`: runs every benchmark in this folder one after another (each in its own process, so
// one's memory and sandboxes never colour the next) and prints their figures. Benchmarks report;
// they do not pass or fail on timings. `npm run bench -- shell files` runs only those.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const benches = fs
  .readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.startsWith(w)))
  .sort();

let failed = 0;
for (const file of benches) {
  process.stdout.write(`\n### ${file}\n`);
  const started = Date.now();
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', path.join(here, file)], {
    stdio: 'inherit',
    env: process.env,
  });
  process.stdout.write(
    `### ${file}: ${r.status === 0 ? 'done' : `exited ${r.status}`} in ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
  );
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
