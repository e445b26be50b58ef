import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import {
  applyGcPolicy,
  GC_FLAGS,
  HEAP_GROWING_PERCENT,
  SERVICE_NODE_FLAGS,
} from '#server/system/gc-policy.ts';

// What the policy buys is measured, not asserted here: ../shared/bench and tests/bench report the
// service's CPU per GiB with it (README, "Measured figures"). These tests keep it in force.
describe("the service's garbage-collection policy", () => {
  it('lets the old generation grow to twice what is live before the next full collection', () => {
    const set: string[] = [];
    applyGcPolicy((f) => set.push(f));
    expect(set).toEqual(['--heap-growing-percent=100']);
    expect(HEAP_GROWING_PERCENT).toBe(100);
  });

  it('names only flags this Node’s V8 knows (V8 ignores an unknown one without a word)', () => {
    const known = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8', maxBuffer: 8 << 20 });
    for (const f of [...GC_FLAGS, ...SERVICE_NODE_FLAGS]) {
      const name = f.replace(/=.*/, '').replace(/^--no-/, '--');
      expect(known, `${name} is not a flag of this Node's V8`).toContain(`  ${name} (`);
    }
  });

  it('starts the service without the memory reducer, wherever it is started from here', () => {
    expect(SERVICE_NODE_FLAGS).toEqual(['--no-memory-reducer']);
    const scripts = JSON.parse(fs.readFileSync('package.json', 'utf8')).scripts as Record<string, string>;
    for (const name of ['start', 'serve']) {
      const node = /node ([^&|;]*)(src\/server\/main\.ts|dist\/server\/main\.mjs)/.exec(scripts[name])?.[1];
      expect(node, `npm run ${name} starts the service`).toBeDefined();
      for (const f of SERVICE_NODE_FLAGS) expect((node ?? '').split(' '), `npm run ${name}`).toContain(f);
    }
    const helper = fs.readFileSync('tests/e2e/helpers/service.ts', 'utf8');
    expect(helper).toContain('[...SERVICE_NODE_FLAGS, SERVER_BUNDLE]');
    // `npm run dev` (a .mjs script, which cannot import the list) spells the flags out.
    const dev = /spawn\('node', \[([^\]]*)'src\/server\/main\.ts'\]/.exec(
      fs.readFileSync('scripts/dev.mjs', 'utf8'),
    );
    for (const f of SERVICE_NODE_FLAGS) expect(dev?.[1] ?? '', 'npm run dev').toContain(`'${f}'`);
  });
});
