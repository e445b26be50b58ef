// Sequences and their runs (src/shared/sequences.ts). A run is carried out here, in the service, as
// the user who started it: each step calls the same services the console's calls do (flash jobs,
// renewals, power resets), so it may do exactly what that user may; exec goes through the board's own
// login shell (board-exec.ts). Boards run side by side, at most SEQUENCE_PARALLEL at once; each
// board's steps in order. The run's document (every board's steps, states, output) is written after
// each change, so a reader polling fetchSequenceRun sees it move, and it outlives the service: a run
// the service was carrying out when it stopped ends as failure, its running step `interrupted`.
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { AuthUser } from '#server/auth/user-context.ts';
import { AppError, badRequest, conflict, forbidden, notFound } from '#server/errors.ts';
import { toIso } from '#server/leases/leases.repo.ts';
import { ResultCode } from '#shared/codes.ts';
import { LEASE_DURATIONS } from '#shared/constants.ts';
import { FLASH_FINAL_STATES } from '#shared/flash.ts';
import { LeaseErrorKey } from '#shared/leases.ts';
import {
  parseSequence,
  type SequenceDoc,
  type SequenceStep,
  stepsOf,
  withParams,
} from '#shared/sequence-file.ts';
import {
  type RunBoardDto,
  type RunState,
  type RunStepDto,
  SEQUENCE_MAX_PER_USER,
  SEQUENCE_OUTPUT_KEEP,
  SEQUENCE_PARALLEL,
  type SequenceDto,
  SequenceErrorKey,
  type SequenceRunDto,
  StepFailure,
} from '#shared/sequences.ts';
import { snapshotName } from '#shared/snapshots.ts';
import { execOnBoard } from './board-exec.ts';

/** How long a snapshot restore step waits for the board to answer again after its reboot. */
const SNAPSHOT_BOOT_WAIT_MS = 300_000;

import { type RunRow, SequenceRepo, type SequenceRow } from './sequences.repo.ts';

/** How often a flash step looks at its job. */
const FLASH_POLL_MS = 1_000;

interface LiveRun {
  row: RunRow;
  abort: AbortController;
  /** Writes of the run's document, one after the other. */
  writing: Promise<void>;
  done: Promise<void>;
}

function invalid(problem: { line: number; column: number; path: string; message: string }) {
  return new AppError(
    400,
    ResultCode.BadRequest,
    SequenceErrorKey.invalid,
    `line ${problem.line}: ${problem.message}`,
    [{ path: 'source', message: `line ${problem.line}, column ${problem.column}: ${problem.message}` }],
    undefined,
    problem,
  );
}

function globRe(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'i');
}

export class SequenceService {
  readonly repo: SequenceRepo;
  private readonly live = new Map<string, LiveRun>();
  private stopping = false;

  constructor(private readonly app: FastifyInstance) {
    this.repo = new SequenceRepo(app.storage.db);
  }

  private now(): Date {
    return this.app.clock.now();
  }

  async start(): Promise<void> {
    // Runs a stopped service was carrying out end now, saying so.
    for (const r of await this.repo.orphans()) {
      const boards = r.boards.map((b) => this.interruptBoard(b));
      await this.repo.writeRun(r.id, 'failure', boards, this.now());
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const runs = [...this.live.values()];
    for (const r of runs) r.abort.abort();
    await Promise.allSettled(runs.map((r) => r.done));
  }

  private interruptBoard(b: RunBoardDto): RunBoardDto {
    const at = this.now().toISOString();
    const steps = b.steps.map((s): RunStepDto => {
      if (s.state === 'running')
        return {
          ...s,
          state: 'failure',
          endedAt: at,
          errorKey: StepFailure.interrupted,
          detail: 'the service stopped',
        };
      if (s.state === 'pending') return { ...s, state: 'cancelled' };
      return s;
    });
    return { ...b, state: b.state === 'running' ? 'failure' : b.state, steps };
  }

  // ---- sequences

  private dto(r: SequenceRow, userId: string): SequenceDto {
    const parsed = parseSequence(r.source);
    const doc: SequenceDoc | null = parsed.ok ? parsed.doc : null;
    return {
      sequenceId: r.id,
      name: r.name,
      description: doc?.description ?? '',
      source: r.source,
      ownerId: r.owner_id,
      ownerName: r.owner_name,
      groupName: r.group_name,
      mine: r.owner_id === userId,
      params: Object.entries(doc?.params ?? {}).map(([name, p]) => ({
        name,
        default: p?.default === undefined ? null : String(p.default),
        description: p?.description ?? '',
      })),
      steps: doc ? stepsOf(doc).map((s) => ({ kind: s.kind, label: s.label })) : [],
      updatedAt: toIso(r.updated_at)!,
    };
  }

  async list(user: AuthUser) {
    return { items: (await this.repo.visible(user.id)).map((r) => this.dto(r, user.id)) };
  }

  private async visible(user: AuthUser, id: string): Promise<SequenceRow> {
    const r = await this.repo.one(user.id, id);
    if (!r) throw notFound('No such sequence', SequenceErrorKey.notFound);
    return r;
  }

  async save(user: AuthUser, input: { name: string; source: string; groupName: string | null }) {
    const parsed = parseSequence(input.source);
    if (!parsed.ok) throw invalid(parsed.problem);
    let groupId: string | null = null;
    if (input.groupName) {
      groupId = await this.repo.groupId(user.id, input.groupName);
      if (!groupId) throw notFound(`You have no group named ${input.groupName}`, 'share.group_not_found');
    }
    const existing = (await this.repo.visible(user.id)).some(
      (r) => r.owner_id === user.id && r.name === input.name,
    );
    if (!existing && (await this.repo.count(user.id)) >= SEQUENCE_MAX_PER_USER) {
      throw conflict(`You have ${SEQUENCE_MAX_PER_USER} sequences already`, SequenceErrorKey.tooMany);
    }
    const id = await this.repo.save(user.id, input.name, input.source, groupId, this.now());
    return this.dto((await this.repo.one(user.id, id))!, user.id);
  }

  async remove(user: AuthUser, sequenceId: string) {
    const r = await this.visible(user, sequenceId);
    if (r.owner_id !== user.id)
      throw conflict('Only its owner deletes a sequence', SequenceErrorKey.notOwner);
    await this.repo.remove(user.id, sequenceId);
    return { sequenceId };
  }

  // ---- runs

  private runDto(r: RunRow): SequenceRunDto {
    return {
      runId: r.id,
      sequenceId: r.sequence_id,
      sequenceName: r.sequence_name,
      userId: r.user_id,
      userName: r.user_name,
      state: r.state,
      params: r.params,
      startedAt: toIso(r.started_at)!,
      endedAt: toIso(r.ended_at),
      boards: r.boards,
    };
  }

  async fetchRun(user: AuthUser, runId: string) {
    const live = this.live.get(runId);
    const row = await this.repo.run(user.id, runId);
    if (!row) throw notFound('No such run', SequenceErrorKey.runNotFound);
    // The live document is ahead of the stored one by at most a write.
    return this.runDto(live ? live.row : row);
  }

  async runs(user: AuthUser, sequenceId: string | undefined) {
    const rows = await this.repo.runs(user.id, sequenceId, 20);
    return { items: rows.map((r) => this.runDto(this.live.get(r.id)?.row ?? r)) };
  }

  async cancel(user: AuthUser, runId: string) {
    const row = await this.repo.run(user.id, runId);
    if (!row) throw notFound('No such run', SequenceErrorKey.runNotFound);
    // Members of the group see a run; only whoever started it stops it.
    if (row.user_id !== user.id)
      throw forbidden('Only whoever started a run stops it', SequenceErrorKey.notOwner);
    const live = this.live.get(runId);
    if (!live) throw conflict('The run has ended', SequenceErrorKey.runEnded);
    live.abort.abort();
    await live.done;
    return this.runDto(live.row);
  }

  /** Held boards the targets name: by name, id, or a glob of names. */
  private async resolveTargets(user: AuthUser, targets: string[]) {
    const { items } = await this.app.leases.list(user.id);
    const found = new Map<string, { deviceId: string; serverName: string }>();
    for (const t of targets) {
      const glob = /[*?]/.test(t) ? globRe(t) : null;
      const hits = items.filter((l) =>
        glob ? glob.test(l.serverName) : l.serverName === t || l.deviceId === t,
      );
      if (!hits.length) {
        throw new AppError(
          404,
          ResultCode.NotFound,
          SequenceErrorKey.targetUnknown,
          `You hold no board named ${t}`,
          undefined,
          undefined,
          {
            target: t,
          },
        );
      }
      for (const l of hits) found.set(l.deviceId, { deviceId: l.deviceId, serverName: l.serverName });
    }
    return [...found.values()];
  }

  async run(
    user: AuthUser,
    input: { sequenceId: string; targets: string[]; params: Record<string, string> },
  ) {
    if (this.stopping) throw conflict('The service is stopping', StepFailure.interrupted);
    const seq = await this.visible(user, input.sequenceId);
    const parsed = parseSequence(seq.source);
    if (!parsed.ok) throw invalid(parsed.problem);
    const declared = parsed.doc.params ?? {};
    const values: Record<string, string> = {};
    for (const [name, p] of Object.entries(declared)) {
      const v = input.params[name] ?? (p?.default === undefined ? undefined : String(p.default));
      if (v === undefined || v === '') {
        throw new AppError(
          400,
          ResultCode.BadRequest,
          SequenceErrorKey.paramMissing,
          `Give a value for ${name}`,
          [{ path: `params.${name}`, message: 'required' }],
          undefined,
          { param: name },
        );
      }
      values[name] = v;
    }
    for (const name of Object.keys(input.params)) {
      if (!(name in declared))
        throw badRequest(`The sequence has no parameter ${name}`, SequenceErrorKey.paramMissing);
    }
    const steps = stepsOf(parsed.doc).map((s) => withParams(s, values));
    const boards = await this.resolveTargets(user, input.targets);
    const row: RunRow = {
      id: crypto.randomUUID(),
      sequence_id: seq.id,
      sequence_name: seq.name,
      group_id: seq.group_id,
      user_id: user.id,
      user_name: user.username,
      state: 'running',
      params: values,
      started_at: this.now().toISOString(),
      ended_at: null,
      boards: boards.map((b) => ({
        ...b,
        state: 'running',
        steps: steps.map((s) => ({
          label: s.label,
          kind: s.kind,
          state: 'pending',
          startedAt: null,
          endedAt: null,
          errorKey: null,
          detail: '',
          status: null,
          output: '',
        })),
      })),
    };
    await this.repo.insertRun({
      id: row.id,
      sequenceId: seq.id,
      sequenceName: seq.name,
      groupId: seq.group_id,
      userId: user.id,
      params: values,
      boards: row.boards,
      now: new Date(row.started_at as string),
    });
    const live: LiveRun = {
      row,
      abort: new AbortController(),
      writing: Promise.resolve(),
      done: Promise.resolve(),
    };
    this.live.set(row.id, live);
    live.done = this.carryOut(user, live, steps).finally(() => this.live.delete(row.id));
    return this.runDto(row);
  }

  private persist(live: LiveRun): Promise<void> {
    const { id, state, ended_at } = live.row;
    const boards = structuredClone(live.row.boards);
    live.writing = live.writing
      .then(() => this.repo.writeRun(id, state, boards, ended_at ? new Date(ended_at as string) : null))
      .catch((err) => this.app.log.warn({ err, runId: id }, 'sequence run not written'));
    return live.writing;
  }

  private async carryOut(user: AuthUser, live: LiveRun, steps: SequenceStep[]): Promise<void> {
    const queue = [...live.row.boards.keys()];
    const worker = async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift())
        await this.runBoard(user, live, i, steps);
    };
    await Promise.all(Array.from({ length: Math.min(SEQUENCE_PARALLEL, queue.length) }, worker));
    const states = live.row.boards.map((b) => b.state);
    live.row.state = live.abort.signal.aborted
      ? this.stopping
        ? 'failure'
        : 'cancelled'
      : states.every((s) => s === 'success')
        ? 'success'
        : 'failure';
    live.row.ended_at = this.now().toISOString();
    await this.persist(live);
  }

  private async runBoard(user: AuthUser, live: LiveRun, index: number, steps: SequenceStep[]): Promise<void> {
    const board = live.row.boards[index];
    const signal = live.abort.signal;
    let stopped = false;
    let failed = false;
    for (const [i, step] of steps.entries()) {
      const st = board.steps[i];
      if (signal.aborted) {
        st.state = 'cancelled';
        continue;
      }
      if (stopped) {
        st.state = 'skipped';
        continue;
      }
      st.state = 'running';
      st.startedAt = this.now().toISOString();
      await this.persist(live);
      try {
        const r = await this.step(user, board, step, signal);
        Object.assign(st, r);
      } catch (err) {
        const e = err instanceof AppError ? err : null;
        st.state = 'failure';
        st.errorKey = e?.key ?? StepFailure.failed;
        st.detail = err instanceof Error ? err.message : String(err);
        if (!e) this.app.log.warn({ err, runId: live.row.id }, 'sequence step failed');
      }
      // (The step's answer set the state; the compiler still sees the 'running' written above.)
      const state = st.state as RunStepDto['state'];
      if (signal.aborted && state === 'running') st.state = 'cancelled';
      if (signal.aborted && this.stopping && state !== 'success') {
        st.state = 'failure';
        st.errorKey = StepFailure.interrupted;
        st.detail = 'the service stopped';
      }
      st.endedAt = this.now().toISOString();
      if (st.state === 'failure') {
        failed = true;
        if (step.onFailure === 'stop') stopped = true;
      }
      await this.persist(live);
    }
    const allDone = board.steps.every((s) => s.state === 'success');
    board.state = failed ? 'failure' : allDone ? 'success' : this.stopping ? 'failure' : 'cancelled';
    await this.persist(live);
  }

  /** Carries out one step on one board; answers the step's result fields. */
  private async step(
    user: AuthUser,
    board: { deviceId: string; serverName: string },
    step: SequenceStep,
    signal: AbortSignal,
  ): Promise<Partial<RunStepDto> & { state: RunStepDto['state'] }> {
    const { deviceId } = board;
    switch (step.kind) {
      case 'wait': {
        // Ends at once on a cancel, also one that came before the wait began (an AbortError).
        await sleep(step.seconds * 1000, undefined, { signal }).catch(() => undefined);
        return { state: signal.aborted ? 'cancelled' : 'success', detail: `${step.seconds} s` };
      }
      case 'exec': {
        await this.held(user, deviceId);
        const r = await execOnBoard(this.app.boards.driver(deviceId), step.command, {
          timeoutMs: step.timeoutS * 1000,
          keep: SEQUENCE_OUTPUT_KEEP,
          signal,
        });
        const base = { status: r.status, output: r.output };
        if (signal.aborted) return { ...base, state: 'cancelled', detail: 'stopped' };
        if (r.timedOut)
          return {
            ...base,
            state: 'failure',
            errorKey: StepFailure.timeout,
            detail: `still running after ${step.timeoutS} s`,
          };
        if (r.lost || r.status === null)
          return { ...base, state: 'failure', errorKey: StepFailure.lost, detail: 'the board’s shell ended' };
        const ok = r.status === step.expect;
        return {
          ...base,
          state: ok ? 'success' : 'failure',
          errorKey: ok ? null : StepFailure.status,
          detail: `exit ${r.status}`,
        };
      }
      case 'snapshot': {
        const access = await this.held(user, deviceId);
        const apply = { applyId: '', deviceId, userId: user.id, leaseId: access.leaseId };
        const name = snapshotName.safeParse(step.name);
        if (!name.success)
          throw badRequest(`Not a snapshot name: ${name.error.issues[0]?.message}`, 'request.invalid');
        if (step.action === 'save') await this.app.snapshots.save(apply, name.data);
        else if (step.action === 'restore') {
          await this.app.snapshots.restore(apply, name.data);
          // The board reboots into the snapshot: the step ends once it answers again, so the next
          // step (an exec) finds it up.
          const deadline = Date.now() + SNAPSHOT_BOOT_WAIT_MS;
          for (;;) {
            const r = await execOnBoard(this.app.boards.driver(deviceId), 'true', {
              timeoutMs: 20_000,
              keep: 100,
              signal,
            }).catch(() => null);
            if (r?.status === 0 || signal.aborted) break;
            if (Date.now() > deadline)
              return {
                state: 'failure',
                errorKey: StepFailure.failed,
                detail: 'the board did not come back',
              };
            await sleep(2000, undefined, { signal }).catch(() => undefined);
          }
        } else await this.app.snapshots.remove(apply, name.data);
        return { state: 'success', detail: `${step.action} ${name.data}` };
      }
      case 'reset': {
        const access = await this.held(user, deviceId);
        await this.app.leases.powerReset({ applyId: '', deviceId, userId: user.id, leaseId: access.leaseId });
        return { state: 'success', detail: 'reset' };
      }
      case 'renew': {
        const ms = LEASE_DURATIONS.find((d) => d.key === step.duration)!.ms;
        const renewalDate = new Date(this.now().getTime() + ms).toISOString();
        try {
          const lease = await this.app.leases.renew(user.id, {
            serverName: board.serverName,
            deviceId,
            renewalDate,
          });
          return { state: 'success', detail: `ends ${lease.endsAt}` };
        } catch (err) {
          // A lease that already ends later than asked needs no renewal.
          if (err instanceof AppError && err.key === LeaseErrorKey.renewalNotLater)
            return { state: 'success', detail: 'already ends later' };
          throw err;
        }
      }
      case 'flash': {
        const job = await this.app.flash.post(user, { deviceId, flashImageTag: step.image });
        for (;;) {
          if (signal.aborted) {
            await this.app.flash.cancel(user, job.jobId).catch(() => undefined);
          }
          const { job: now } = await this.app.flash.latest(user, deviceId);
          if (!now || now.jobId !== job.jobId)
            return { state: 'failure', errorKey: StepFailure.flashLost, detail: 'job gone' };
          if (FLASH_FINAL_STATES.has(now.state)) {
            if (now.state === 'SUCCESS') return { state: 'success', detail: `${now.imageName}: success` };
            if (now.state === 'CANCELLED' && signal.aborted)
              return { state: 'cancelled', detail: 'cancelled' };
            return {
              state: 'failure',
              errorKey: now.errorKey ?? StepFailure.failed,
              detail: `${now.imageName}: ${now.state.toLowerCase()}`,
            };
          }
          await new Promise((r) => setTimeout(r, signal.aborted ? 200 : FLASH_POLL_MS));
        }
      }
    }
  }

  private async held(user: AuthUser, deviceId: string) {
    const a = await this.app.leases.repo.accessOf(user.id, deviceId, this.now());
    if (!a) throw notFound('You no longer hold this board', LeaseErrorKey.notHeld);
    return a;
  }
}

export type { RunState };
