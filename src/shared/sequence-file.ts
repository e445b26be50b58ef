// Sequence files (src/shared/sequences.ts says what a sequence is): the schema of the YAML/JSON text,
// reading it with the line and column of a problem, the steps as the runner uses them, parameters put
// in, and writing one back as YAML. Apart from the calls so the console loads YAML only when it needs it.
import YAML, { isNode, LineCounter } from 'yaml';
import { z } from 'zod';
import { EXEC_DEFAULT_TIMEOUT_S, paramName, SEQUENCE_MAX_STEPS, STEP_KINDS } from './sequences.ts';

const onFailure = z.enum(['stop', 'continue']);
const text = (max: number) => z.string().min(1).max(max);
const seconds = (max: number) => z.number().int().min(1).max(max);

const common = { name: z.string().max(80).optional(), 'on-failure': onFailure.optional() };
const step = z.union([
  z
    .object({
      ...common,
      flash: z.union([text(200), z.object({ image: text(200) }).strict()]),
    })
    .strict(),
  z
    .object({
      ...common,
      exec: z.union([
        text(4000),
        z
          .object({
            command: text(4000),
            timeout: seconds(3600).optional(),
            expect: z.number().int().min(0).max(255).optional(),
          })
          .strict(),
      ]),
    })
    .strict(),
  z.object({ ...common, reset: z.union([z.null(), z.literal(true), z.object({}).strict()]) }).strict(),
  z
    .object({
      ...common,
      renew: z.union([
        z.enum(['48h', '7d', '1m']),
        z.object({ duration: z.enum(['48h', '7d', '1m']) }).strict(),
      ]),
    })
    .strict(),
  z
    .object({ ...common, wait: z.union([seconds(3600), z.object({ seconds: seconds(3600) }).strict()]) })
    .strict(),
  // A snapshot of the board's whole disk (docs/riscv-snapshots.md): `snapshot: {save: NAME}`, or
  // restore / rm. The name may hold parameters; it is checked (src/shared/snapshots.ts) once put in.
  z
    .object({
      ...common,
      snapshot: z.union([
        z.object({ save: text(200) }).strict(),
        z.object({ restore: text(200) }).strict(),
        z.object({ rm: text(200) }).strict(),
      ]),
    })
    .strict(),
]);

export const sequenceDoc = z
  .object({
    name: z.string().max(64).optional(),
    description: z.string().max(500).optional(),
    'on-failure': onFailure.optional(),
    params: z
      .record(
        paramName,
        z
          .object({
            default: z.union([z.string(), z.number()]).optional(),
            description: z.string().max(200).optional(),
          })
          .strict()
          .nullable(),
      )
      .optional(),
    steps: z.array(step).min(1).max(SEQUENCE_MAX_STEPS),
  })
  .strict();
export type SequenceDoc = z.infer<typeof sequenceDoc>;
type RawStep = z.infer<typeof step>;

/** A step as the runner uses it: one shape per kind, parameters not yet put in. */
export type SequenceStep = { label: string; onFailure: 'stop' | 'continue' } & (
  | { kind: 'flash'; image: string }
  | { kind: 'exec'; command: string; timeoutS: number; expect: number }
  | { kind: 'reset' }
  | { kind: 'renew'; duration: '48h' | '7d' | '1m' }
  | { kind: 'wait'; seconds: number }
  | { kind: 'snapshot'; action: SnapshotStepAction; name: string }
);
export type SnapshotStepAction = 'save' | 'restore' | 'rm';

function labelOf(s: SequenceStep): string {
  switch (s.kind) {
    case 'flash':
      return `flash ${s.image}`;
    case 'exec':
      return `exec ${s.command}`;
    case 'reset':
      return 'reset';
    case 'renew':
      return `renew ${s.duration}`;
    case 'wait':
      return `wait ${s.seconds}s`;
    case 'snapshot':
      return `snapshot ${s.action} ${s.name}`;
  }
}

export function stepsOf(doc: SequenceDoc): SequenceStep[] {
  const fallback = doc['on-failure'] ?? 'stop';
  return doc.steps.map((raw: RawStep) => {
    const base = { label: '', onFailure: raw['on-failure'] ?? fallback };
    let s: SequenceStep;
    if ('flash' in raw)
      s = { ...base, kind: 'flash', image: typeof raw.flash === 'string' ? raw.flash : raw.flash.image };
    else if ('exec' in raw) {
      const e = typeof raw.exec === 'string' ? { command: raw.exec } : raw.exec;
      s = {
        ...base,
        kind: 'exec',
        command: e.command,
        timeoutS: ('timeout' in e ? e.timeout : undefined) ?? EXEC_DEFAULT_TIMEOUT_S,
        expect: ('expect' in e ? e.expect : undefined) ?? 0,
      };
    } else if ('reset' in raw) s = { ...base, kind: 'reset' };
    else if ('renew' in raw)
      s = {
        ...base,
        kind: 'renew',
        duration: typeof raw.renew === 'string' ? raw.renew : raw.renew.duration,
      };
    else if ('snapshot' in raw) {
      const sn = raw.snapshot;
      s =
        'save' in sn
          ? { ...base, kind: 'snapshot', action: 'save', name: sn.save }
          : 'restore' in sn
            ? { ...base, kind: 'snapshot', action: 'restore', name: sn.restore }
            : { ...base, kind: 'snapshot', action: 'rm', name: sn.rm };
    } else s = { ...base, kind: 'wait', seconds: typeof raw.wait === 'number' ? raw.wait : raw.wait.seconds };
    s.label = raw.name?.trim() || labelOf(s);
    return s;
  });
}

export interface SequenceProblem {
  line: number;
  column: number;
  /** Where in the document, e.g. "steps.2.exec". */
  path: string;
  message: string;
}

/** Parses a sequence file (YAML, or JSON, which YAML reads too), pointing at the line of a problem. */
export function parseSequence(
  source: string,
): { ok: true; doc: SequenceDoc } | { ok: false; problem: SequenceProblem } {
  const counter = new LineCounter();
  const parsed = YAML.parseDocument(source, { lineCounter: counter, prettyErrors: false, uniqueKeys: true });
  const where = (offset: number) => counter.linePos(offset);
  if (parsed.errors.length) {
    const e = parsed.errors[0];
    const { line, col } = where(e.pos[0]);
    return { ok: false, problem: { line, column: col, path: '', message: e.message.split('\n')[0] } };
  }
  const data: unknown = parsed.toJS();
  const rawSteps = (data as { steps?: unknown } | null)?.steps;
  // A step names one action; a union's own message for a step with none would be of little help.
  if (Array.isArray(rawSteps)) {
    for (const [i, raw] of rawSteps.entries()) {
      if (!raw || typeof raw !== 'object' || Array.isArray(raw)) continue;
      const keys = Object.keys(raw);
      const actions = keys.filter((k) => (STEP_KINDS as readonly string[]).includes(k));
      if (actions.length === 1) continue;
      const node = parsed.getIn(['steps', i], true);
      const { line, col } = where(isNode(node) && node.range ? node.range[0] : 0);
      const others = keys.filter((k) => !actions.includes(k) && k !== 'name' && k !== 'on-failure');
      const message =
        actions.length > 1
          ? `one action per step, this one has ${actions.join(' and ')}`
          : `a step needs one of ${STEP_KINDS.join(', ')}${others.length ? `; unknown ${others.map((k) => `"${k}"`).join(', ')}` : ''}`;
      return { ok: false, problem: { line, column: col, path: `steps.${i}`, message } };
    }
  }
  const checked = sequenceDoc.safeParse(data);
  if (checked.success) {
    const params = checked.data.params ?? {};
    for (const [i, s] of stepsOf(checked.data).entries()) {
      for (const name of paramsIn(s)) {
        if (!(name in params)) {
          const node = parsed.getIn(['steps', i], true);
          const { line, col } = where(isNode(node) && node.range ? node.range[0] : 0);
          return {
            ok: false,
            problem: {
              line,
              column: col,
              path: `steps.${i}`,
              message: `unknown parameter \${${name}} (declare it under params)`,
            },
          };
        }
      }
    }
    return { ok: true, doc: checked.data };
  }
  // The deepest issue names the most precise place (a union reports one issue per branch).
  const issue = deepestIssue(checked.error.issues);
  const path = issue.path.map(String);
  // The closest node of the path that exists gives the line.
  let node: unknown = null;
  for (let n = path.length; n >= 0 && !node; n--) {
    const found =
      n === 0 ? parsed.contents : parsed.getIn(issue.path.slice(0, n) as (string | number)[], true);
    if (isNode(found) && found.range) node = found;
  }
  const offset = isNode(node) && node.range ? node.range[0] : 0;
  const { line, col } = where(offset);
  return { ok: false, problem: { line, column: col, path: path.join('.'), message: messageOf(issue) } };
}

type Issue = z.core.$ZodIssue;
function deepestIssue(issues: readonly Issue[]): Issue {
  let best = issues[0];
  let depth = -1;
  const visit = (list: readonly Issue[], prefix: PropertyKey[]) => {
    for (const i of list) {
      const full = { ...i, path: [...prefix, ...i.path] } as Issue;
      if (i.code === 'invalid_union' && 'errors' in i) {
        // Prefer the branch that got furthest: the one whose action key the step used.
        for (const branch of i.errors) visit(branch, full.path);
        continue;
      }
      const score = full.path.length + (i.code === 'unrecognized_keys' ? -0.5 : 0);
      if (score > depth) {
        depth = score;
        best = full;
      }
    }
  };
  visit(issues, []);
  return best;
}

function messageOf(issue: Issue): string {
  if (issue.code === 'unrecognized_keys' && 'keys' in issue) {
    const keys = issue.keys as string[];
    return `unknown key ${keys.map((k) => `"${k}"`).join(', ')}`;
  }
  return issue.message;
}

const PARAM_REF = /\$\{([A-Za-z_][A-Za-z0-9_-]{0,31})\}/g;

function textsOf(s: SequenceStep): string[] {
  if (s.kind === 'snapshot') return [s.name, s.label];
  return s.kind === 'flash' ? [s.image, s.label] : s.kind === 'exec' ? [s.command, s.label] : [s.label];
}

export function paramsIn(s: SequenceStep): string[] {
  return textsOf(s).flatMap((t) => [...t.matchAll(PARAM_REF)].map((m) => m[1]));
}

/** The step with the run's parameter values put in. */
export function withParams(s: SequenceStep, values: Record<string, string>): SequenceStep {
  const put = (t: string) => t.replace(PARAM_REF, (_m, name: string) => values[name] ?? '');
  if (s.kind === 'flash') return { ...s, image: put(s.image), label: put(s.label) };
  if (s.kind === 'exec') return { ...s, command: put(s.command), label: put(s.label) };
  if (s.kind === 'snapshot') return { ...s, name: put(s.name), label: put(s.label) };
  return { ...s, label: put(s.label) };
}

/** A recorded or composed sequence as YAML text (what `saveSequence` stores and export prints). */
export function sequenceYaml(doc: SequenceDoc): string {
  return YAML.stringify(doc, { lineWidth: 0 });
}
