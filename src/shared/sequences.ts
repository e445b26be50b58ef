// Sequences (issue 15): a named list of device actions, written as YAML or JSON or recorded in the
// console, saved on the service per user and shareable with one of the owner's share groups, run on
// several boards at once by the service, each run's log kept and visible to the team.
//
// A sequence file:
//
//   description: flash the nightly image, smoke-test it, keep the board
//   on-failure: stop            # stop (default): a failed step skips the board's later steps; continue
//   params:
//     image: { default: bianbu-developer }
//   steps:
//     - flash: ${image}                       # or { image: ... }
//     - wait: 5                               # seconds, or { seconds: 5 }
//     - exec: uname -a                        # or { command, timeout (s, default 300), expect (status, 0) }
//     - reset: {}
//     - renew: 48h                            # or { duration: 48h | 7d | 1m }: the lease ends now + duration
//       name: keep it                         # any step: a name, and its own on-failure
//
// Steps run in order on each target board; boards run side by side (at most SEQUENCE_PARALLEL). A run
// succeeds when every step succeeded on every board. `${name}` in a step's text is the run's value of
// that parameter (its default when the run gives none); a parameter without either refuses the run.
//
// Calls: `fetchSequences` (own and shared with the caller), `saveSequence` (create or replace by name;
// a bad file is refused with `sequence.invalid` and data {line, column, path, message}),
// `deleteSequence`, `runSequence` (answers the run at once; it goes on in the service),
// `fetchSequenceRun`, `fetchSequenceRuns`, `cancelSequenceRun`.
import { z } from 'zod';
import { defineCall } from './http.ts';
import { CONTROL_CHARS, entityId, idString } from './ids.ts';
import { groupName } from './share.ts';

export const SequenceErrorKey = {
  /** The file does not parse or does not describe a sequence; data {line, column, path, message}. */
  invalid: 'sequence.invalid',
  /** No sequence with this id the caller may see (someone else's, not shared with them). */
  notFound: 'sequence.not_found',
  /** Only the owner deletes a sequence; only whoever started a run stops it. */
  notOwner: 'sequence.not_owner',
  /** A target names no board the caller holds; data {target}. */
  targetUnknown: 'sequence.target_unknown',
  /** A parameter has no value and no default; data {param}. */
  paramMissing: 'sequence.param_missing',
  /** No run with this id the caller may see. */
  runNotFound: 'sequence.run_not_found',
  /** The run has ended already. */
  runEnded: 'sequence.run_ended',
  /** The caller has SEQUENCE_MAX_PER_USER sequences already. */
  tooMany: 'sequence.too_many',
} as const;

/** Why a step failed, besides the stable error keys of the action it called (flash.*, lease.*, board.*). */
export const StepFailure = {
  /** exec: the command ended with another status than `expect`; data: the status. */
  status: 'sequence.exec_status',
  /** exec: the command ran past its timeout and was stopped. */
  timeout: 'sequence.exec_timeout',
  /** The service stopped while the step ran. */
  interrupted: 'sequence.interrupted',
  /** exec: the board's shell ended before the command did (reset, flashed, stopped). */
  lost: 'sequence.exec_lost',
  /** flash: the job disappeared from the board's history (another job replaced it). */
  flashLost: 'sequence.flash_lost',
  /** Anything else; the detail says what. */
  failed: 'sequence.step_failed',
} as const;

const NO_CONTROL = new RegExp(`^[^${CONTROL_CHARS.source.slice(1, -1)}]*$`, 'u');

export const SEQUENCE_MAX_STEPS = 50;
export const SEQUENCE_MAX_TARGETS = 32;
export const SEQUENCE_MAX_PER_USER = 100;
export const SEQUENCE_MAX_SOURCE = 64 * 1024;
/** Boards a run works on at the same time. */
export const SEQUENCE_PARALLEL = 8;
/** Characters of a step's output kept (its end). */
export const SEQUENCE_OUTPUT_KEEP = 16 * 1024;
export const EXEC_DEFAULT_TIMEOUT_S = 300;

export const sequenceName = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[\p{L}\p{N}][\p{L}\p{N} ._-]*$/u, 'letters, digits, spaces, dots, dashes and underscores');

export const STEP_KINDS = ['flash', 'exec', 'reset', 'renew', 'wait', 'snapshot'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/** A parameter's name, as `${name}` refers to it. */
export const paramName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_-]{0,31}$/, 'a parameter name: letters, digits, _ and -');

// ---- DTOs and calls

export const stepState = z.enum(['pending', 'running', 'success', 'failure', 'skipped', 'cancelled']);
export type StepState = z.infer<typeof stepState>;
export const runState = z.enum(['running', 'success', 'failure', 'cancelled']);
export type RunState = z.infer<typeof runState>;

export const sequenceDto = z.object({
  sequenceId: z.string(),
  name: z.string(),
  description: z.string(),
  source: z.string(),
  ownerId: z.string(),
  ownerName: z.string(),
  /** The owner's share group it is shared with, or null. */
  groupName: z.string().nullable(),
  /** Whether the caller owns it (may change and delete it). */
  mine: z.boolean(),
  params: z.array(z.object({ name: z.string(), default: z.string().nullable(), description: z.string() })),
  steps: z.array(z.object({ kind: z.enum(STEP_KINDS), label: z.string() })),
  updatedAt: z.string(),
});
export type SequenceDto = z.infer<typeof sequenceDto>;

export const runStepDto = z.object({
  label: z.string(),
  kind: z.enum(STEP_KINDS),
  state: stepState,
  startedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  /** A stable error key when it failed (sequence.exec_status, flash.*, lease.*, board.*), else null. */
  errorKey: z.string().nullable(),
  /** In words: the status, the flash job's result, the new end of the lease. */
  detail: z.string(),
  /** exec: the exit status (null: none, e.g. stopped at its timeout). */
  status: z.number().int().nullable(),
  /** exec: the end of what the command printed (stdout and stderr as one). */
  output: z.string(),
});
export type RunStepDto = z.infer<typeof runStepDto>;

export const runBoardDto = z.object({
  deviceId: z.string(),
  serverName: z.string(),
  state: runState,
  steps: z.array(runStepDto),
});
export type RunBoardDto = z.infer<typeof runBoardDto>;

export const sequenceRunDto = z.object({
  runId: z.string(),
  sequenceId: z.string(),
  sequenceName: z.string(),
  userId: z.string(),
  userName: z.string(),
  state: runState,
  params: z.record(z.string(), z.string()),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  boards: z.array(runBoardDto),
});
export type SequenceRunDto = z.infer<typeof sequenceRunDto>;

export const sequenceCalls = [
  defineCall({
    name: 'fetchSequences',
    method: 'GET',
    path: '/api/sequence/list',
    response: z.object({ items: z.array(sequenceDto) }),
    summary: 'The caller’s sequences and those shared with them through a group, by name',
  }),
  defineCall({
    name: 'saveSequence',
    method: 'POST',
    path: '/api/sequence/save',
    request: z.object({
      name: sequenceName,
      // Text with line breaks and tabs, but no NUL (PostgreSQL's text cannot hold one).
      source: z.string().min(1).max(SEQUENCE_MAX_SOURCE).refine((v) => !v.includes('\u0000'), 'must not contain NUL'),
      /** One of the caller's share groups, or null to share with nobody. */
      groupName: groupName.nullable().default(null),
    }),
    response: sequenceDto,
    summary: 'Create or replace one of the caller’s sequences by name; a bad file is refused with the line',
  }),
  defineCall({
    name: 'deleteSequence',
    method: 'POST',
    path: '/api/sequence/delete',
    request: z.object({ sequenceId: entityId }),
    response: z.object({ sequenceId: z.string() }),
    summary: 'Delete one of the caller’s sequences (its runs are kept)',
  }),
  defineCall({
    name: 'runSequence',
    method: 'POST',
    path: '/api/sequence/run',
    request: z.object({
      sequenceId: entityId,
      /** Held boards by name, id or glob of names (ci-*). */
      targets: z.array(idString({ trim: true })).min(1).max(SEQUENCE_MAX_TARGETS),
      params: z
        .record(paramName, z.string().max(256).regex(NO_CONTROL, 'must not contain control characters'))
        .default({}),
    }),
    response: sequenceRunDto,
    summary: 'Run a sequence on held boards; answers the run at once, which goes on in the service',
  }),
  defineCall({
    name: 'fetchSequenceRun',
    method: 'GET',
    path: '/api/sequence/run/fetch',
    request: z.object({ runId: entityId }),
    response: sequenceRunDto,
    summary: 'One run with each board’s steps, states and output',
  }),
  defineCall({
    name: 'fetchSequenceRuns',
    method: 'GET',
    path: '/api/sequence/runs',
    request: z.object({ sequenceId: entityId.optional() }),
    response: z.object({ items: z.array(sequenceRunDto) }),
    summary:
      'The latest runs (at most 20) the caller may see: theirs, and those of sequences shared with them',
  }),
  defineCall({
    name: 'cancelSequenceRun',
    method: 'POST',
    path: '/api/sequence/run/cancel',
    request: z.object({ runId: entityId }),
    response: sequenceRunDto,
    summary: 'Stop a run: steps not started are cancelled, a running command is stopped',
  }),
] as const;
