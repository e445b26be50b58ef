import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { applyGcPolicy, GC_FLAGS, HEAP_GROWING_PERCENT } from '#server/system/gc-policy.ts';

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
    for (const f of GC_FLAGS) {
      const name = f.slice(0, f.indexOf('='));
      expect(known, `${name} is not a flag of this Node's V8`).toContain(`  ${name} (`);
    }
  });
});
