// The expiry scheduler. Each tick, reading time from app.clock: expire leases past their end (and
// return their boards to the pool), send the 1 h and 24 h warnings that are due, and take over board
// cleanups an instance abandoned mid-way, and show boards held by a live lease as leased whatever
// reset their state. Every step claims its rows with a conditional UPDATE, so
// several instances on one PostgreSQL can tick at once and each expiry and warning still happens
// exactly once. Nothing is kept in memory between ticks: a restart picks up where storage says, and
// never moves an end. Between ticks the scheduler sleeps until the next due instant (an end or a
// warning), at most `maxIntervalMs`.
import type { FastifyInstance } from 'fastify';
import type { LeaseService } from './leases.service.ts';

export interface TickReport {
  expired: number;
  warned1h: number;
  warned24h: number;
  retriedCleanups: number;
}

/** A cleanup claimed this long ago and not finished is taken over (its instance stopped). */
export const STALE_CLEANUP_MS = 10 * 60_000;
const EXPIRE_BATCH = 200;

/** More work a tick does after the leases' own (the waiting line's expiry and sweep). */
export interface SchedulerStep {
  tick(now: Date): Promise<unknown>;
  /** The next instant this step has something to do, or null. */
  nextDue(): Promise<Date | null>;
}

export class LeaseScheduler {
  private timer: NodeJS.Timeout | null = null;
  private readonly steps: SchedulerStep[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private stopped = true;

  constructor(
    private readonly app: FastifyInstance,
    private readonly service: LeaseService,
    /** 0 disables the timer: ticks run only when called (tests drive them with a manual clock). */
    private readonly maxIntervalMs: number,
  ) {}

  start(): void {
    if (this.maxIntervalMs <= 0) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.chain.catch(() => {});
  }

  addStep(step: SchedulerStep): void {
    this.steps.push(step);
  }

  /** One pass; ticks of one instance run one after another. */
  tick(): Promise<TickReport> {
    const run = this.chain.then(() => this.runOnce());
    this.chain = run.catch(() => {});
    return run;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.tick()
        .catch((err) => this.app.log.error({ err }, 'lease scheduler tick failed'))
        .then(() => this.nextDelay())
        .then((d) => this.schedule(d), () => this.schedule(this.maxIntervalMs));
    }, delayMs);
    this.timer.unref?.();
  }

  private async nextDelay(): Promise<number> {
    const dues = [await this.service.repo.nextDue(), ...(await Promise.all(this.steps.map((s) => s.nextDue())))];
    const due = dues.reduce<Date | null>((min, d) => (d && (!min || d < min) ? d : min), null);
    if (!due) return this.maxIntervalMs;
    const wait = due.getTime() - this.app.clock.now().getTime();
    return Math.min(this.maxIntervalMs, Math.max(50, wait + 5));
  }

  private async runOnce(): Promise<TickReport> {
    const { repo } = this.service;
    const report: TickReport = { expired: 0, warned1h: 0, warned24h: 0, retriedCleanups: 0 };
    const now = this.app.clock.now();

    for (;;) {
      const ended = await repo.expireDue(now, EXPIRE_BATCH);
      report.expired += ended.length;
      await Promise.all(ended.map((l) => this.service.afterExpiry(l)));
      if (ended.length < EXPIRE_BATCH) break;
    }

    // The 1 h warning first: a lease first seen inside its last hour gets that one only.
    const within1h = await repo.warnDue(now, '1h');
    report.warned1h = within1h.length;
    const within24h = await repo.warnDue(now, '24h');
    report.warned24h = within24h.length;
    await Promise.all([
      ...within1h.map((l) => this.service.warn(l, '1h')),
      ...within24h.map((l) => this.service.warn(l, '24h')),
    ]);

    await repo.reconcileHeldBoards(now);
    const stale = await repo.claimStaleCleanups(now, STALE_CLEANUP_MS);
    for (const s of stale) {
      const step = await repo.prepareRetriedCleanup(s.id, s.board_id, this.app.clock.now());
      if (step !== 'ready') continue;
      report.retriedCleanups++;
      await this.service.cleanup(s.id, s.board_id);
    }
    for (const step of this.steps) await step.tick(this.app.clock.now());
    return report;
  }
}
