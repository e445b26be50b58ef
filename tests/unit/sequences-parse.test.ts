import { describe, expect, it } from 'vitest';
import { parseSequence, type SequenceDoc, sequenceYaml, stepsOf, withParams } from '#shared/sequence-file.ts';

const good = `description: nightly
on-failure: continue
params:
  image: { default: bianbu-developer }
steps:
  - flash: \${image}
  - wait: 5
  - exec: uname -a
  - exec: { command: "test -f /etc/os-release", timeout: 30, expect: 0 }
    on-failure: stop
  - reset: {}
  - renew: 48h
    name: keep it
`;

function problem(source: string) {
  const r = parseSequence(source);
  if (r.ok) throw new Error('parsed, expected a problem');
  return r.problem;
}

describe('sequence files', () => {
  it('reads every step kind in both short and long forms, with defaults', () => {
    const r = parseSequence(good);
    expect(r.ok).toBe(true);
    const steps = stepsOf((r as { doc: SequenceDoc }).doc);
    expect(steps.map((s) => s.kind)).toEqual(['flash', 'wait', 'exec', 'exec', 'reset', 'renew']);
    expect(steps[0]).toMatchObject({ kind: 'flash', image: '${image}', onFailure: 'continue' });
    expect(steps[1]).toMatchObject({ kind: 'wait', seconds: 5 });
    expect(steps[2]).toMatchObject({ kind: 'exec', command: 'uname -a', timeoutS: 300, expect: 0 });
    expect(steps[3]).toMatchObject({ timeoutS: 30, onFailure: 'stop' });
    expect(steps[5]).toMatchObject({ kind: 'renew', duration: '48h', label: 'keep it' });
    expect(withParams(steps[0], { image: 'nightly' })).toMatchObject({
      image: 'nightly',
      label: 'flash nightly',
    });
  });

  it('reads JSON too, and what it writes reads back the same', () => {
    const r = parseSequence('{"steps": [{"exec": "true"}, {"wait": {"seconds": 2}}]}');
    expect(r.ok).toBe(true);
    const doc = (r as { doc: SequenceDoc }).doc;
    const again = parseSequence(sequenceYaml(doc));
    expect(again).toEqual({ ok: true, doc });
  });

  it('points at the line of an unknown step', () => {
    const p = problem('steps:\n  - exec: ls\n  - frobnicate: 3\n');
    expect(p.line).toBe(3);
    expect(p.path).toBe('steps.1');
    expect(p.message).toMatch(/frobnicate/);
  });

  it('points at the line of a wrong type inside a step', () => {
    const p = problem('steps:\n  - exec: ls\n  - wait:\n      seconds: soon\n');
    expect(p.line).toBe(4);
    expect(p.path).toBe('steps.1.wait.seconds');
  });

  it('refuses a duration that is not offered, a parameter never declared, no steps, and bad YAML', () => {
    expect(problem('steps:\n  - renew: 3d\n').line).toBe(2);
    const p = problem('steps:\n  - exec: ls\n  - flash: ${nightly}\n');
    expect(p).toMatchObject({ line: 3, path: 'steps.1' });
    expect(p.message).toMatch(/nightly/);
    expect(problem('steps: []\n').path).toBe('steps');
    const y = problem('steps:\n  - exec: ls\n   - bad indent: [\n');
    expect(y.line).toBeGreaterThanOrEqual(2);
    expect(problem('steps:\n  - exec: a\n    exec: b\n').line).toBe(3);
  });
});
