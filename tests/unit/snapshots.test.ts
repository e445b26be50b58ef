// Snapshot names and snapshot steps of sequence files (src/shared/snapshots.ts, sequence-file.ts).
import { describe, expect, it } from 'vitest';
import { parseSequence, stepsOf, withParams } from '#shared/sequence-file.ts';
import { snapshotName } from '#shared/snapshots.ts';

describe('snapshot names', () => {
  it.each([
    ['before-upgrade', true],
    ['v1.2_rc', true],
    ['A', true],
    ['x'.repeat(64), true],
    ['x'.repeat(65), false],
    ['', false],
    ['has space', false],
    ['semi;colon', false],
    ['../etc', false],
    ['..', false],
    ['名前', false],
    ['_bianbu_pre_restore', false],
    ['_bianbu_x', false],
    ['_mine', true],
  ])('%s is %s', (name, ok) => {
    expect(snapshotName.safeParse(name).success).toBe(ok);
  });

  it('trims what is typed around a name', () => {
    expect(snapshotName.parse('  keep  ')).toBe('keep');
  });
});

describe('snapshot steps of a sequence file', () => {
  it('reads save, restore and rm, labels them and puts parameters into the name', () => {
    const r = parseSequence(
      [
        'params: { tag: { default: base } }',
        'steps:',
        '  - snapshot: { save: "${tag}-1" }',
        '  - exec: rm /root/f',
        '  - snapshot: { restore: "${tag}-1" }',
        '  - snapshot: { rm: "${tag}-1" }',
      ].join('\n'),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const steps = stepsOf(r.doc).map((s) => withParams(s, { tag: 'base' }));
    expect(steps.map((s) => s.label)).toEqual([
      'snapshot save base-1',
      'exec rm /root/f',
      'snapshot restore base-1',
      'snapshot rm base-1',
    ]);
    expect(steps[2]).toMatchObject({ kind: 'snapshot', action: 'restore', name: 'base-1' });
  });

  it('refuses a snapshot step with two actions or an unknown one, naming the line', () => {
    const two = parseSequence('steps:\n  - exec: true\n  - snapshot: { save: a, rm: b }\n');
    expect(two.ok).toBe(false);
    if (!two.ok) expect(two.problem.line).toBe(3);
    expect(parseSequence('steps:\n  - snapshot: { copy: a }\n').ok).toBe(false);
    expect(parseSequence('steps:\n  - snapshot: a\n').ok).toBe(false);
  });

  it('refuses a parameter the file does not declare', () => {
    const r = parseSequence('steps:\n  - snapshot: { save: "${nope}" }\n');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem.message).toMatch(/unknown parameter/);
  });
});
