// The device lifecycle. A lease holds one board for one user from a request until its end; it ends
// when the holder releases it (unlock) or when the scheduler expires it. Ending a lease closes its
// applies (working sessions) and their shells, then returns the board to the pool clean: the board
// waits in `resetting` (nobody can lease it) while the lab restores its default image, and only then
// becomes `idle`. A restore that fails puts the board into maintenance instead of handing it out
// dirty. Ends are written once at request or renewal and never moved by a restart.
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { DriverError } from '#server/boards/driver.ts';
import { readMetricsSince } from '#server/boards/metrics-store.ts';
import { AppError, badRequest, conflict, notFound } from '#server/errors.ts';
import type { CallContext, EarlyApply, ResolvedApply } from '#server/http/handlers.ts';
import { ResultCode } from '#shared/codes.ts';
import { LEASE_DURATIONS, LEASE_END_TOLERANCE_MS, LONGEST_LEASE_MS } from '#shared/constants.ts';
import {
  type AppliedDeviceDto,
  type ApplyHistoryItem,
  type LeaseDto,
  LeaseErrorKey,
  LeaseNotice,
  type LoadSeries,
} from '#shared/leases.ts';
import { closeShells, emitBoardChanges, type LabPort, labOf, notifyUser } from './collaborators.ts';
import type { AttributeFilters } from './filters.ts';
import { type ApplyRow, type EndedLease, LeaseRepo, type LeaseRow, toIso } from './leases.repo.ts';
import { type LoadKind, loadSeries } from './load.ts';

/** Why shells close, as the realtime channel words it (src/shared/realtime.ts ShellCloseReason). */
const SHELL_REASON = {
  applyEnded: 'apply.ended',
  leaseExpired: 'lease.expired',
  boardReset: 'board.reset',
} as const;

const unavailable = (message: string, key: string) => new AppError(503, ResultCode.Unavailable, key, message);

const nameTaken = (serverName: string) =>
  new AppError(
    409,
    ResultCode.Conflict,
    LeaseErrorKey.nameTaken,
    `You already hold a board named "${serverName}"`,
    [{ path: 'serverName', message: 'already used for another of your boards' }],
    undefined,
    { serverName },
  );

/** A driver failure as the caller should see it: unsupported, unreachable, or failed. */
function driverFailure(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof DriverError) {
    if (err.key === 'capability.unsupported') {
      return new AppError(501, ResultCode.NotImplementedByDriver, err.key, err.message);
    }
    if (
      [
        'board.offline',
        'driver.timeout',
        'ssh.unreachable',
        'board.not_running',
        'board.booting',
        'board.no_agent',
      ].includes(err.key)
    ) {
      return unavailable(err.message, err.key);
    }
    if (err.key === 'plugin.unknown') return badRequest(err.message, err.key);
    return new AppError(500, ResultCode.ServerError, err.key, err.message);
  }
  return new AppError(500, ResultCode.ServerError, 'driver.failed', 'The board did not complete the action');
}

export class LeaseService {
  readonly repo: LeaseRepo;
  /** Set by the waiting line: boards free now go to those waiting before a direct request may take one. */
  queueFirst: (() => Promise<unknown>) | null = null;
  /**
   * Set by the sharing feature: the live lease of someone else through which `userId` may use the
   * board (a group of its holder holds it and they are a member; with `grant`, only when the group
   * grants that too), or null.
   */
  sharedLease:
    | ((userId: string, deviceId: string, now: Date, grant?: 'renew') => Promise<string | null>)
    | null = null;
  /** Cleanups running in the background (after unlock); stop() waits for them. */
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly app: FastifyInstance) {
    this.repo = new LeaseRepo(app.storage.db, (changes) => emitBoardChanges(app, changes));
  }

  private now(): Date {
    return this.app.clock.now();
  }

  private lab(): LabPort {
    const lab = labOf(this.app);
    if (!lab) throw unavailable('The board lab is not running on this service', 'board.offline');
    return lab;
  }

  toDto(r: LeaseRow, now: Date): LeaseDto {
    const endsAt = new Date(r.ends_at);
    return {
      leaseId: r.id,
      deviceId: r.board_id,
      serverName: r.server_name,
      boardName: r.board_name,
      model: r.model,
      attributes: r.attributes ?? {},
      boardState: r.board_state as LeaseDto['boardState'],
      state: r.state,
      durationKey: r.duration_key as LeaseDto['durationKey'],
      startedAt: toIso(r.started_at)!,
      endsAt: endsAt.toISOString(),
      remainingMs: r.state === 'live' ? Math.max(0, endsAt.getTime() - now.getTime()) : 0,
      renewals: r.renewals,
      warned24h: r.warned_24h_at !== null,
      warned1h: r.warned_1h_at !== null,
      applyId: r.apply_id,
    };
  }

  // ---- leases

  async list(userId: string) {
    const now = this.now();
    const items = await this.repo.listLive(userId, now);
    return { now: now.toISOString(), items: items.map((r) => this.toDto(r, now)) };
  }

  async listSimple(userId: string) {
    const items = await this.repo.listLive(userId, this.now());
    return items.map((r) => ({ deviceId: r.board_id, serverName: r.server_name, endsAt: toIso(r.ends_at)! }));
  }

  /** The offered duration `end` stands for, measured from `now`, or an error listing what is offered. */
  private durationOf(end: Date, now: Date) {
    const asked = end.getTime() - now.getTime();
    const match = LEASE_DURATIONS.find((d) => Math.abs(asked - d.ms) <= LEASE_END_TOLERANCE_MS);
    if (match) return match;
    throw new AppError(
      400,
      ResultCode.BadRequest,
      LeaseErrorKey.durationNotOffered,
      `requestDate must be now plus one of the offered durations (${LEASE_DURATIONS.map((d) => d.key).join(', ')})`,
      [{ path: 'requestDate', message: 'not an offered duration from now' }],
      undefined,
      {
        offered: LEASE_DURATIONS.map((d) => ({
          key: d.key,
          endsAt: new Date(now.getTime() + d.ms).toISOString(),
        })),
      },
    );
  }

  async request(
    userId: string,
    input: { requestDate: string; filterReq: AttributeFilters; serverName: string },
  ) {
    const now = this.now();
    const endsAt = new Date(input.requestDate);
    const duration = this.durationOf(endsAt, now);
    await this.queueFirst?.();
    let outcome = await this.repo.requestLease({
      userId,
      serverName: input.serverName,
      filters: input.filterReq,
      durationKey: duration.key,
      endsAt,
      now,
    });
    // A free board skipped only because another transaction had it locked for a moment: look again.
    for (let i = 0; i < 3 && outcome.kind === 'none_free' && outcome.lockedElsewhere; i++) {
      await new Promise((r) => setTimeout(r, 15 * (i + 1)));
      outcome = await this.repo.requestLease({
        userId,
        serverName: input.serverName,
        filters: input.filterReq,
        durationKey: duration.key,
        endsAt,
        now,
      });
    }
    if (outcome.kind === 'name_taken') throw nameTaken(input.serverName);
    if (outcome.kind === 'none_free') {
      const next = await this.repo.nextFree(input.filterReq);
      if (next.matching === 0) {
        throw badRequest('No board in service matches these attributes', LeaseErrorKey.noMatch, [
          { path: 'filterReq', message: 'matches no board' },
        ]);
      }
      const nextFreeAt = next.cleaning > 0 ? now : next.nextEnd;
      throw new AppError(
        409,
        ResultCode.Conflict,
        LeaseErrorKey.noneFree,
        nextFreeAt
          ? `No matching board is free; the next one frees at ${nextFreeAt.toISOString()}`
          : 'No matching board is free, and none is due to free',
        undefined,
        undefined,
        { nextFreeAt: nextFreeAt ? nextFreeAt.toISOString() : null, matching: next.matching },
      );
    }
    return this.toDto(outcome.lease, now);
  }

  private async liveLeaseOrFail(userId: string, deviceId: string, serverName: string, now: Date) {
    const lease = await this.repo.getLive(userId, deviceId, now);
    if (!lease || lease.server_name !== serverName) {
      throw notFound('You hold no board by that id and name', LeaseErrorKey.notFound);
    }
    return lease;
  }

  async rename(userId: string, input: { deviceId: string; oldServerName: string; newServerName: string }) {
    const now = this.now();
    const lease = await this.liveLeaseOrFail(userId, input.deviceId, input.oldServerName, now);
    if (input.newServerName !== input.oldServerName) {
      const result = await this.repo.rename(
        userId,
        input.deviceId,
        input.oldServerName,
        input.newServerName,
        now,
      );
      if (result === 'taken') throw nameTaken(input.newServerName);
      if (result === 'missing')
        throw notFound('You hold no board by that id and name', LeaseErrorKey.notFound);
    }
    const fresh = await this.repo.getById(lease.id);
    return this.toDto(fresh!, now);
  }

  async renew(userId: string, input: { serverName: string; deviceId: string; renewalDate: string }) {
    const now = this.now();
    // A share member renews the owner's lease when their group grants `renew`.
    const sharedId = (await this.repo.getLive(userId, input.deviceId, now))
      ? null
      : await this.sharedLease?.(userId, input.deviceId, now, 'renew');
    const shared = sharedId ? await this.repo.getById(sharedId) : null;
    const lease =
      shared && shared.server_name === input.serverName
        ? shared
        : await this.liveLeaseOrFail(userId, input.deviceId, input.serverName, now);
    const newEnd = new Date(input.renewalDate);
    const currentEnd = new Date(lease.ends_at);
    if (newEnd.getTime() <= currentEnd.getTime()) {
      throw badRequest(
        `renewalDate must be later than the current end (${currentEnd.toISOString()})`,
        LeaseErrorKey.renewalNotLater,
        [{ path: 'renewalDate', message: 'not later than the current end' }],
      );
    }
    // The tolerance covers a console clock slightly ahead of the service's, as for requests.
    const latest = new Date(now.getTime() + LONGEST_LEASE_MS);
    if (newEnd.getTime() > latest.getTime() + LEASE_END_TOLERANCE_MS) {
      throw new AppError(
        400,
        ResultCode.BadRequest,
        LeaseErrorKey.renewalTooLong,
        `A lease may end at most ${LONGEST_LEASE_MS / 86_400_000} days from now (${latest.toISOString()})`,
        [{ path: 'renewalDate', message: 'past the longest offered duration' }],
        undefined,
        { latest: latest.toISOString() },
      );
    }
    if (!(await this.repo.renew(lease.id, newEnd, now))) {
      throw notFound('You hold no board by that id and name', LeaseErrorKey.notFound);
    }
    return this.toDto((await this.repo.getById(lease.id))!, now);
  }

  async unlock(userId: string, input: { deviceId: string; serverName: string }) {
    const now = this.now();
    await this.refuseWhileFlashing(input.deviceId);
    const ended = await this.repo.release(userId, input.deviceId, input.serverName, now);
    if (!ended) throw notFound('You hold no board by that id and name', LeaseErrorKey.notFound);
    await closeShells(
      this.app,
      { applyIds: ended.closedApplyIds, deviceId: ended.board_id },
      SHELL_REASON.applyEnded,
    );
    void notifyUser(this.app, ended.user_id, this.notice(LeaseNotice.released, 'info', ended, now));
    // Restoring a board can take longer than the console waits for an answer: it runs on, tracked.
    this.track(this.cleanup(ended.id, ended.board_id));
    return { deviceId: ended.board_id, serverName: ended.server_name, endedAt: now.toISOString() };
  }

  /** After the scheduler expired a lease: shells, the holder's notice, then the board back to the pool. */
  async afterExpiry(ended: EndedLease): Promise<void> {
    const now = this.now();
    await closeShells(
      this.app,
      { applyIds: ended.closedApplyIds, deviceId: ended.board_id },
      SHELL_REASON.leaseExpired,
    );
    await notifyUser(this.app, ended.user_id, this.notice(LeaseNotice.expired, 'warning', ended, now));
    await this.cleanup(ended.id, ended.board_id);
  }

  async warn(
    lease: { id: string; user_id: string; board_id: string; server_name: string; ends_at: Date | string },
    remaining: '24h' | '1h',
  ): Promise<void> {
    const n = this.notice(LeaseNotice.expiring, 'warning', lease, this.now());
    n.data.remaining = remaining;
    n.data.count = remaining === '24h' ? 24 : 1;
    await notifyUser(this.app, lease.user_id, n);
  }

  private notice(
    kind: string,
    level: 'info' | 'warning',
    lease: { id: string; board_id: string; server_name: string; ends_at: Date | string },
    now: Date,
  ) {
    return {
      id: crypto.randomUUID(),
      kind,
      at: now.toISOString(),
      level,
      data: {
        leaseId: lease.id,
        deviceId: lease.board_id,
        serverName: lease.server_name,
        endsAt: toIso(lease.ends_at),
      } as Record<string, unknown>,
    };
  }

  /**
   * Restores the board and returns it to the pool; never throws (the outcome is stored). A board that
   * is offline cannot be restored now: its cleanup stays pending and the scheduler retries it later.
   */
  async cleanup(leaseId: string, boardId: string): Promise<void> {
    const lab = labOf(this.app);
    try {
      if ((await this.repo.boardState(boardId)) === 'offline') {
        this.app.log.info({ leaseId, boardId }, 'board offline: restoring it after its lease is deferred');
        return;
      }
      if (lab) await lab.resetToDefault(boardId);
      await this.repo.finishCleanup(leaseId, boardId, this.now());
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.app.log.error({ err, leaseId, boardId }, 'restoring a board after its lease failed');
      await this.repo.failCleanup(leaseId, boardId, message, this.now()).catch((e) => {
        this.app.log.error({ err: e, leaseId, boardId }, 'recording a failed board restore failed');
      });
    }
  }

  private track(p: Promise<void>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Waits for background cleanups (tests, and shutdown). */
  async drain(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  // ---- applies

  private deviceDto(
    a: ApplyRow,
    board: {
      model: string;
      attributes: LeaseRow['attributes'];
      board_state: string;
      driver: 'local' | 'ssh' | 'qemu';
    },
  ): AppliedDeviceDto {
    return {
      deviceId: a.board_id,
      name: a.board_name,
      model: board.model,
      attributes: board.attributes ?? {},
      state: board.board_state as AppliedDeviceDto['state'],
      driver: board.driver,
      serverName: a.server_name,
      leaseId: a.lease_id,
      endsAt: toIso(a.ends_at)!,
    };
  }

  /** A board being flashed is locked against new sessions, resets and release until the job ends. */
  private async refuseWhileFlashing(deviceId: string): Promise<void> {
    if ((await this.repo.boardState(deviceId)) === 'flashing') {
      throw conflict('The board is being flashed; wait for the flash job to end', LeaseErrorKey.busy);
    }
  }

  async apply(userId: string, deviceId: string) {
    const now = this.now();
    // While flashing, a session already open is answered (its flash pane and serial console stay
    // usable); a new one waits for the job to end.
    const open = (await this.repo.liveApplies(userId, now)).some((a) => a.board_id === deviceId);
    if (!open) await this.refuseWhileFlashing(deviceId);
    let apply = await this.repo.openApply(userId, deviceId, now);
    if (!apply && this.sharedLease) {
      const leaseId = await this.sharedLease(userId, deviceId, now);
      if (leaseId) apply = await this.repo.openApplyOn(userId, leaseId, now);
      // A revocation committed meanwhile closed the applies it saw; this one it may not have seen.
      if (apply && !(await this.sharedLease(userId, deviceId, now))) {
        await this.repo.closeApply(apply.id, userId, now);
        apply = null;
      }
    }
    if (!apply) throw notFound('You hold no live lease on this board', LeaseErrorKey.notHeld);
    const lease = (await this.repo.getById(apply.lease_id))!;
    return { applyId: apply.id, deviceDto: this.deviceDto(apply, lease) };
  }

  /** Why an apply cannot be used by this user now, or null when it can. */
  private applyProblem(
    a: ApplyRow | null,
    userId: string,
    now: Date,
  ): { key: string; message: string } | null {
    if (!a || a.user_id !== userId) return { key: LeaseErrorKey.applyNotFound, message: 'No such apply' };
    if (a.state !== 'open') return { key: LeaseErrorKey.applyClosed, message: 'This apply has been closed' };
    if (a.lease_state !== 'live' || new Date(a.ends_at).getTime() <= now.getTime()) {
      return { key: LeaseErrorKey.applyLeaseEnded, message: 'The lease of this apply has ended' };
    }
    return null;
  }

  async checkApply(userId: string, applyId: string) {
    const a = await this.repo.getApply(applyId);
    const problem = this.applyProblem(a, userId, this.now());
    const mine = a && a.user_id === userId ? a : null;
    return {
      valid: problem === null,
      reason: problem?.key ?? null,
      applyId,
      deviceId: mine?.board_id ?? null,
      serverName: mine?.server_name ?? null,
      endsAt: mine ? toIso(mine.ends_at) : null,
    };
  }

  async unapply(userId: string, applyId: string) {
    const now = this.now();
    const a = await this.repo.getApply(applyId);
    if (!a || a.user_id !== userId) throw notFound('No such apply', LeaseErrorKey.applyNotFound);
    if (a.state === 'open') {
      await this.repo.closeApply(applyId, userId, now);
      await closeShells(this.app, { applyIds: [applyId] }, SHELL_REASON.applyEnded);
      return { applyId, closedAt: now.toISOString() };
    }
    // Already closed: nothing changes, the answer says when it closed.
    return { applyId, closedAt: toIso(a.closed_at) ?? now.toISOString() };
  }

  /**
   * On PostgreSQL, starts looking up the apply a call names while its token is being checked, so the
   * two queries overlap. PGlite runs one query at a time, so there it would only add one.
   */
  prefetchApply(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    input: unknown,
  ): EarlyApply | undefined {
    if (this.app.storage.kind !== 'postgres') return undefined;
    const applyId = applyIdOf(headers, input);
    if (!applyId || applyId.length > 64) return undefined;
    const row = this.repo.getApply(applyId);
    // Unused when the caller turns out not to be signed in: its failure must not go unhandled.
    row.catch(() => {});
    return { applyId, row };
  }

  /**
   * `app.resolveApply`: the payload's applyId, else the ApplyAccess header; the caller's, open, lease
   * live. `early` is prefetchApply's lookup, used only when it names the same apply.
   */
  async resolveApply(ctx: CallContext, input: unknown, early?: EarlyApply): Promise<ResolvedApply> {
    const applyId = applyIdOf(ctx.req.headers, input);
    if (!applyId) {
      throw badRequest(
        'This action needs an applyId (payload applyId or the ApplyAccess header)',
        LeaseErrorKey.applyMissing,
        [{ path: 'applyId', message: 'required' }],
      );
    }
    if (!ctx.user) throw notFound('No such apply', LeaseErrorKey.applyNotFound);
    const a =
      applyId.length > 64
        ? null
        : await (early?.applyId === applyId
            ? (early.row as Promise<ApplyRow | null>)
            : this.repo.getApply(applyId));
    const problem = this.applyProblem(a, ctx.user.id, this.now());
    if (problem) throw notFound(problem.message, problem.key);
    return { applyId: a!.id, deviceId: a!.board_id, userId: a!.user_id, leaseId: a!.lease_id };
  }

  async listAppliesOf(userId: string) {
    const rows = await this.repo.liveApplies(userId, this.now());
    return rows.map((r) => ({
      applyId: r.id,
      deviceId: r.board_id,
      serverName: r.server_name,
      expiresAt: toIso(r.ends_at),
    }));
  }

  // ---- board actions

  async powerReset(apply: ResolvedApply) {
    const lab = this.lab();
    const from = await this.repo.beginPowerReset(apply.deviceId, this.now());
    if (from === null) {
      const state = await this.repo.boardState(apply.deviceId);
      if (state === 'offline') throw unavailable('The board is offline', 'board.offline');
      if (state === 'maintenance') throw conflict('The board is in maintenance', 'board.maintenance');
      throw conflict(`The board is busy (${state})`, LeaseErrorKey.busy);
    }
    let ok = false;
    // Login shells close with the reason before the reset kills them, so their panes say why.
    await closeShells(this.app, { deviceId: apply.deviceId }, SHELL_REASON.boardReset);
    try {
      await lab.driver(apply.deviceId).powerReset();
      ok = true;
    } catch (err) {
      throw driverFailure(err);
    } finally {
      await this.repo.endPowerReset(apply.deviceId, ok, this.now());
    }
    const state = (await this.repo.boardState(apply.deviceId)) ?? 'leased';
    return { deviceId: apply.deviceId, state: state as 'leased' };
  }

  async callPlugin(apply: ResolvedApply, input: { topic: string; data?: unknown; nodeId?: string | number }) {
    const lab = this.lab();
    const data =
      input.data === undefined
        ? ''
        : typeof input.data === 'string'
          ? input.data
          : JSON.stringify(input.data);
    try {
      const result = await lab
        .driver(apply.deviceId)
        .callPlugin(input.topic, data, String(input.nodeId ?? ''));
      return { topic: input.topic, result };
    } catch (err) {
      throw driverFailure(err);
    }
  }

  async load(
    userId: string,
    kind: LoadKind,
    input: { deviceId: string; serverName?: string; windowSeconds: number },
  ): Promise<LoadSeries> {
    const now = this.now();
    const access = await this.repo.accessOf(userId, input.deviceId, now);
    if (!access || (access.holder && input.serverName && input.serverName !== access.serverName)) {
      throw notFound('You hold no live lease on this board', LeaseErrorKey.notHeld);
    }
    const since = now.getTime() - input.windowSeconds * 1000;
    const lab = labOf(this.app);
    // Without a lab in this process (lifecycle-only tests) the stored samples are read directly.
    const samples = lab
      ? await lab.recentMetrics(input.deviceId, since)
      : await readMetricsSince(this.app.storage, input.deviceId, since);
    return loadSeries(
      input.deviceId,
      kind,
      samples.filter((s) => s.at >= since && s.at <= now.getTime()),
    );
  }

  // ---- history

  private historyItem(a: ApplyRow): ApplyHistoryItem {
    return {
      applyId: a.id,
      deviceId: a.board_id,
      serverName: a.server_name,
      boardName: a.board_name,
      openedAt: toIso(a.opened_at)!,
      closedAt: toIso(a.closed_at),
      closeReason: a.close_reason,
      open: a.state === 'open',
    };
  }

  async applyHistory(userId: string, page: number, pageSize: number) {
    const r = await this.repo.applyHistory(userId, page, pageSize);
    return { total: r.total, items: r.items.map((a) => this.historyItem(a)) };
  }

  async recentApplies(userId: string, limit: number) {
    return (await this.repo.recentApplies(userId, limit)).map((a) => this.historyItem(a));
  }

  async workHistory(userId: string, deviceId: string) {
    const r = await this.repo.workHistory(userId, deviceId);
    return {
      deviceId,
      leases: r.leases.map((l) => ({
        leaseId: l.id,
        serverName: l.server_name,
        state: l.state,
        startedAt: toIso(l.started_at)!,
        endsAt: toIso(l.ends_at)!,
        endedAt: toIso(l.ended_at),
      })),
      applies: r.applies.map((a) => this.historyItem(a)),
    };
  }
}

/** The apply a call names: its payload's applyId, else the ApplyAccess header (quotes trimmed). */
function applyIdOf(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  input: unknown,
): string | undefined {
  const fromPayload = (input as { applyId?: unknown } | null)?.applyId;
  const header = headers.applyaccess;
  const raw =
    typeof fromPayload === 'string' && fromPayload ? fromPayload : Array.isArray(header) ? header[0] : header;
  return raw?.trim().replace(/^"(.*)"$/, '$1') || undefined;
}
