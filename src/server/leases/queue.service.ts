// The waiting line for boards (contract and rules: src/shared/queue.ts). An entry's life: joined
// (waiting, with a position per filter) → granted (a board freed: the lease is written and starts at
// that moment, in the transaction that returned the board to the pool, or by the next sweep),
// cancelled by its user, or expired by the scheduler after BIANBU_QUEUE_MAX_WAIT_HOURS. Each change
// reaches the user live: `queue.granted`, `queue.expired`, and `queue.position` to those behind in the
// same line. Nothing is kept in memory: storage is the line, so any instance may grant, expire or
// answer, and a restart loses nothing.
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AppError, badRequest, notFound } from '#server/errors.ts';
import { ResultCode } from '#shared/codes.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { LeaseErrorKey } from '#shared/leases.ts';
import { QUEUE_MAX_WAITING_PER_USER, type QueueEntryDto, QueueErrorKey, QueueNotice } from '#shared/queue.ts';
import { emitBoardChanges, type LeaseNotification, notifyUser } from './collaborators.ts';
import type { AttributeFilters } from './filters.ts';
import { toIso } from './leases.repo.ts';
import type { LeaseService } from './leases.service.ts';
import { type Grant, QueueRepo, type QueueRow } from './queue.repo.ts';

export class QueueService {
  readonly repo: QueueRepo;
  private readonly maxWaitMs: number;
  /** Sweeps of this instance run one after another (a sweep walks the whole line). */
  private sweeping: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly app: FastifyInstance,
    private readonly leases: LeaseService,
  ) {
    this.maxWaitMs = app.config.BIANBU_QUEUE_MAX_WAIT_HOURS * HOUR_MS;
    this.repo = new QueueRepo(
      app.storage.db,
      (changes) => emitBoardChanges(app, changes),
      (err, entryId, boardId) =>
        app.log.error(
          { err, entryId, boardId },
          'granting a freed board to the waiting line failed; the next sweep retries',
        ),
    );
  }

  /** Hooks the line into the lifecycle: freed boards, direct requests, scheduler ticks. */
  install(): void {
    this.leases.repo.onBoardFreed = async (tx, boardId, now, changes) => {
      const grant = await this.repo.grantFreedBoard(tx, boardId, now, changes);
      return grant ? () => this.announce([grant], [], now) : null;
    };
    this.leases.queueFirst = () => this.sweep();
    this.app.leaseScheduler.addStep({
      tick: (now) => this.tick(now),
      nextDue: () => this.repo.nextExpiry(),
    });
  }

  private now(): Date {
    return this.app.clock.now();
  }

  async toDto(r: QueueRow, now: Date, position?: number | null): Promise<QueueEntryDto> {
    const waiting = r.state === 'waiting' && new Date(r.expires_at) > now;
    let pos: number | null = null;
    let estimate: Date | null = null;
    if (waiting) {
      pos = position ?? (await this.repo.positions([r.filter_key], now)).get(r.id)?.position ?? null;
      if (pos) estimate = await this.repo.estimate(r.filter, pos, now);
    }
    return {
      entryId: r.id,
      state: waiting || r.state !== 'waiting' ? r.state : 'expired',
      serverName: r.server_name,
      durationKey: r.duration_key as QueueEntryDto['durationKey'],
      filterReq: r.filter,
      joinedAt: toIso(r.joined_at)!,
      expiresAt: toIso(r.expires_at)!,
      position: pos,
      estimateAt: estimate ? estimate.toISOString() : null,
      endedAt: toIso(r.ended_at) ?? (waiting ? null : toIso(r.expires_at)),
      deviceId: r.board_id,
      leaseId: r.lease_id,
    };
  }

  async join(
    userId: string,
    input: { filterReq: AttributeFilters; durationKey: string; serverName: string },
  ) {
    const now = this.now();
    const next = await this.leases.repo.nextFree(input.filterReq);
    if (next.matching === 0) {
      throw badRequest('No board in service matches these attributes', LeaseErrorKey.noMatch, [
        { path: 'filterReq', message: 'matches no board' },
      ]);
    }
    const outcome = await this.repo.join({
      userId,
      filters: input.filterReq,
      serverName: input.serverName,
      durationKey: input.durationKey,
      now,
      expiresAt: new Date(now.getTime() + this.maxWaitMs),
      maxWaiting: QUEUE_MAX_WAITING_PER_USER,
    });
    if (outcome.kind === 'already_waiting') {
      throw new AppError(
        409,
        ResultCode.Conflict,
        QueueErrorKey.alreadyWaiting,
        'You already wait in line for a board with these attributes',
        [{ path: 'filterReq', message: 'you already wait with this filter' }],
        undefined,
        { entryId: outcome.entryId },
      );
    }
    if (outcome.kind === 'too_many') {
      throw new AppError(
        409,
        ResultCode.Conflict,
        QueueErrorKey.tooMany,
        `You already wait in line ${QUEUE_MAX_WAITING_PER_USER} times; cancel one first`,
        undefined,
        undefined,
        { max: QUEUE_MAX_WAITING_PER_USER },
      );
    }
    if (outcome.kind === 'name_taken') {
      throw new AppError(
        409,
        ResultCode.Conflict,
        LeaseErrorKey.nameTaken,
        `You already use the name "${input.serverName}" for a board or a place in line`,
        [{ path: 'serverName', message: 'already used for another of your boards or places in line' }],
        undefined,
        { serverName: input.serverName },
      );
    }
    // A matching board may have freed meanwhile (or was free all along): the line is served at once,
    // in order, so this entry gets it only if nobody ahead wants it.
    await this.sweep();
    const fresh = (await this.repo.get(outcome.entry.id)) ?? outcome.entry;
    const dto = await this.toDto(fresh, this.now());
    const lease = fresh.lease_id ? await this.leases.repo.getById(fresh.lease_id) : null;
    return { ...dto, lease: lease ? this.leases.toDto(lease, this.now()) : null };
  }

  async list(userId: string) {
    const now = this.now();
    const waiting = await this.repo.listWaiting(userId, now);
    const positions = await this.repo.positions([...new Set(waiting.map((w) => w.filter_key))], now);
    const items = await Promise.all(
      waiting.map((w) => this.toDto(w, now, positions.get(w.id)?.position ?? null)),
    );
    const recent = await Promise.all(
      (await this.repo.listRecent(userId, now)).map((r) => this.toDto(r, now)),
    );
    return { now: now.toISOString(), items, recent };
  }

  async cancel(userId: string, entryId: string) {
    const now = this.now();
    const done = await this.repo.cancel(userId, entryId, now);
    if (!done) {
      const own = await this.repo.getOwn(userId, entryId);
      if (!own) throw notFound('You have no place in line with this id', QueueErrorKey.notFound);
      const state = own.state === 'waiting' ? 'expired' : own.state;
      throw new AppError(
        409,
        ResultCode.Conflict,
        QueueErrorKey.notWaiting,
        `This place in line is ${state} already`,
        undefined,
        undefined,
        { state },
      );
    }
    await this.announce([], [done], now);
    return this.toDto(done, now);
  }

  /** The scheduler's step: expire entries that waited their longest, then serve the line. */
  async tick(now: Date): Promise<void> {
    try {
      const expired = await this.repo.expireDue(now);
      for (const e of expired) {
        await notifyUser(
          this.app,
          e.user_id,
          this.notice(QueueNotice.expired, 'warning', now, {
            entryId: e.id,
            serverName: e.server_name,
            expiredAt: now.toISOString(),
          }),
        );
      }
      if (expired.length) await this.announce([], expired, now);
      await this.sweep();
    } catch (err) {
      this.app.log.error({ err }, 'waiting line tick failed');
    }
  }

  /**
   * Serves the line in order with the boards free now. Cheap when nobody waits or nothing is free;
   * several instances may sweep at once (entries and boards are claimed with SKIP LOCKED).
   */
  sweep(): Promise<unknown> {
    const run = this.sweeping.then(() => this.sweepOnce());
    this.sweeping = run.catch((err) => this.app.log.error({ err }, 'serving the waiting line failed'));
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    const now = this.now();
    if (!(await this.repo.sweepWorthwhile(now))) return;
    const grants = await this.repo.sweep(now);
    if (grants.length) await this.announce(grants, [], now);
  }

  /**
   * After a commit: the granted users hear of their lease, and everyone behind a served, cancelled or
   * expired entry in the same line hears their new position.
   */
  private async announce(grants: Grant[], left: QueueRow[], now: Date): Promise<void> {
    try {
      for (const g of grants) {
        await notifyUser(
          this.app,
          g.entry.user_id,
          this.notice(QueueNotice.granted, 'success', now, {
            entryId: g.entry.id,
            leaseId: g.lease.id,
            deviceId: g.lease.board_id,
            serverName: g.lease.server_name,
            boardName: g.lease.board_name,
            durationKey: g.lease.duration_key,
            startedAt: toIso(g.lease.started_at),
            endsAt: toIso(g.lease.ends_at),
          }),
        );
      }
      const keys = [...new Set([...grants.map((g) => g.entry.filter_key), ...left.map((e) => e.filter_key)])];
      const positions = await this.repo.positions(keys, now);
      for (const { entry, position } of positions.values()) {
        const estimate = await this.repo.estimate(entry.filter, position, now);
        await notifyUser(
          this.app,
          entry.user_id,
          this.notice(QueueNotice.position, 'info', now, {
            entryId: entry.id,
            position,
            estimateAt: estimate ? estimate.toISOString() : null,
          }),
        );
      }
    } catch (err) {
      this.app.log.warn({ err }, 'announcing waiting line changes failed');
    }
  }

  private notice(
    kind: string,
    level: LeaseNotification['level'],
    now: Date,
    data: Record<string, unknown>,
  ): LeaseNotification {
    return { id: crypto.randomUUID(), kind, at: now.toISOString(), level, data };
  }
}
