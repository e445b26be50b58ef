// The shells of this instance (`app.shells`). Opens PTYs through the board driver of the apply's
// board, keeps the sessions it owns, and closes them on request from any instance: closes travel
// over the bus (shell.{id}.in for one shell, rt.ctl for an apply, a board or an ended sign-in), so
// the lifecycle feature calls closeForApply / closeForBoard on whichever instance notices the end,
// and a revoked, expired or deactivated sign-in (rt.ctl endSessions) ends the shells opened with it.
import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { BoardDriver, PtySize, RelayServe } from '#server/boards/driver.ts';
import { DriverError } from '#server/boards/driver.ts';
import { AppError, conflict, notFound } from '#server/errors.ts';
import type { Bus, BusMessage } from '#server/realtime/bus.ts';
import { ResultCode } from '#shared/codes.ts';
import { ShellCloseReason } from '#shared/realtime.ts';
import {
  MAX_SHELLS_PER_APPLY,
  type ShellJob,
  type ShellType,
  shellErrorKeys,
  shellJob,
} from '#shared/shells.ts';
import {
  CONTROL_CHANNEL,
  ENDED_SHELL_KEEP_MS,
  OWNER_ANSWER_TIMEOUT_MS,
  shellIn,
  shellOut,
} from './bus-protocol.ts';
import { type ShellMeta, ShellSession, type ShellStats } from './session.ts';

export interface OpenShellInput {
  applyId: string;
  deviceId: string;
  userId: string;
  shellType: ShellType;
  size?: PtySize;
  /** The credential of the call that opened it: ending that sign-in ends the shell. */
  credentialId?: string;
}

export type DriverLookup = (deviceId: string) => BoardDriver | Promise<BoardDriver>;

const DEFAULT_SIZE: PtySize = { cols: 80, rows: 24 };

export class ShellManager {
  private readonly sessions = new Map<string, ShellSession>();
  private unsubscribeCtl: (() => void) | null = null;
  private sweeper: NodeJS.Timeout | null = null;

  constructor(
    private readonly bus: Bus,
    private readonly drivers: DriverLookup,
    private readonly log: FastifyBaseLogger,
    private readonly now: () => number = Date.now,
    /** Prefixes the ids of the shells this manager opens (a board host's name: `<host>_<uuid>`). */
    public idPrefix = '',
  ) {}

  async start(): Promise<void> {
    this.unsubscribeCtl = await this.bus.subscribe(CONTROL_CHANNEL, (m) => this.onControl(m));
    this.sweeper = setInterval(() => this.sweep(), 10_000);
    this.sweeper.unref();
  }

  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.unsubscribeCtl?.();
    for (const s of this.sessions.values()) {
      s.close(ShellCloseReason.serviceStopping);
      s.dispose();
    }
    this.sessions.clear();
  }

  async open(input: OpenShellInput): Promise<{ clientId: string }> {
    const live = [...this.sessions.values()].filter(
      (s) => s.meta.applyId === input.applyId && !s.ended,
    ).length;
    if (live >= MAX_SHELLS_PER_APPLY)
      throw conflict(
        `At most ${MAX_SHELLS_PER_APPLY} shells may be open on one apply`,
        shellErrorKeys.tooMany,
      );
    const size = input.size ?? DEFAULT_SIZE;
    let pty: Awaited<ReturnType<BoardDriver['openShell']>>;
    try {
      const driver = await this.drivers(input.deviceId);
      // A board on a board host: the host keeps the shell (its PTY and ring), so it outlives this
      // instance; everything else about it travels over the bus as for another instance's shells.
      const hosted = driver as BoardDriver & {
        openHostedShell?: (i: OpenShellInput) => Promise<{ clientId: string }>;
      };
      if (hosted.openHostedShell) {
        const { credentialId, ...rest } = input;
        const r = await hosted.openHostedShell({ ...rest, size, ...(credentialId ? { credentialId } : {}) });
        this.log.info(
          { shellId: r.clientId, applyId: input.applyId, deviceId: input.deviceId },
          'shell opened on its board host',
        );
        return r;
      }
      pty = input.shellType === 'serial' ? await driver.openSerial(size) : await driver.openShell(size);
    } catch (err) {
      if (err instanceof DriverError) {
        const status = err.key === 'capability.unsupported' ? 501 : 503;
        const code = status === 501 ? ResultCode.NotImplementedByDriver : ResultCode.Unavailable;
        throw new AppError(status, code, err.key, err.message);
      }
      throw err;
    }
    const meta: ShellMeta = { id: `${this.idPrefix}${crypto.randomUUID()}`, ...input };
    const session = new ShellSession(meta, pty, this.bus, this.now, (s) => this.onEnded(s));
    this.sessions.set(meta.id, session);
    await session.start();
    this.log.info(
      { shellId: meta.id, applyId: input.applyId, deviceId: input.deviceId, type: input.shellType },
      'shell opened',
    );
    return { clientId: meta.id };
  }

  /**
   * Closes one shell of an apply, wherever it runs. Resolves once its owner confirms; a shell that
   * is not the apply's (or does not exist) answers "not found".
   */
  async close(applyId: string, shellId: string, reason: string = ShellCloseReason.closed): Promise<void> {
    const local = this.sessions.get(shellId);
    if (local) {
      if (local.meta.applyId !== applyId) throw notFound('Shell not found', shellErrorKeys.notFound);
      local.close(reason);
      return;
    }
    let off: (() => void) | null = null;
    const confirmed = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), OWNER_ANSWER_TIMEOUT_MS);
      this.bus
        .subscribe(shellOut(shellId), (m) => {
          if (m.h.t === 'exit') {
            clearTimeout(timer);
            resolve(true);
          }
        })
        .then(async (unsub) => {
          off = unsub;
          // No instance listens to the shell's input: it does not exist (any more), so no answer comes.
          const reached = await this.bus.publishReach(shellIn(shellId), {
            h: { t: 'close', applyId, reason },
          });
          if (reached === 0) {
            clearTimeout(timer);
            resolve(false);
          }
        });
    });
    const ok = await confirmed;
    (off as (() => void) | null)?.();
    if (!ok) throw notFound('Shell not found', shellErrorKeys.notFound);
  }

  /** Closes every shell and serial console of an apply, on every instance. */
  async closeForApply(applyId: string, reason: string = ShellCloseReason.applyEnded): Promise<void> {
    this.bus.publish(CONTROL_CHANNEL, { h: { t: 'closeApply', applyId, reason } });
  }

  /** Closes every shell of a board, on every instance (power reset, flash, board leaving its holder). */
  async closeForBoard(deviceId: string, reason: string = ShellCloseReason.boardReset): Promise<void> {
    this.bus.publish(CONTROL_CHANNEL, { h: { t: 'closeBoard', deviceId, reason } });
  }

  /**
   * Asks the instance that owns a shell (over the bus) and waits for its reply of type `reply` to this
   * request; null when no owner answers in time, at once when no instance listens to the shell.
   */
  private async askOwner(
    shellId: string,
    request: Record<string, unknown>,
    reply: string,
  ): Promise<Record<string, unknown> | null> {
    const r = crypto.randomUUID();
    let off: (() => void) | null = null;
    const answer = new Promise<Record<string, unknown> | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), OWNER_ANSWER_TIMEOUT_MS);
      this.bus
        .subscribe(shellOut(shellId), (m) => {
          if (m.h.t === reply && m.h.r === r) {
            clearTimeout(timer);
            resolve(m.h);
          }
        })
        .then(async (unsub) => {
          off = unsub;
          if ((await this.bus.publishReach(shellIn(shellId), { h: { ...request, r } })) === 0) {
            clearTimeout(timer);
            resolve(null);
          }
        });
    });
    const h = await answer;
    (off as (() => void) | null)?.();
    return h;
  }

  /**
   * Who opened a shell (its host), wherever it runs; null when no owner answers. Joined shells
   * (src/server/share) check the host before sharing it.
   */
  async describe(shellId: string): Promise<{
    userId: string;
    applyId: string;
    deviceId: string;
    shellType: ShellType;
    ended: boolean;
  } | null> {
    const local = this.sessions.get(shellId);
    if (local) return { ...local.meta, ended: local.ended !== null };
    const h = await this.askOwner(shellId, { t: 'describe' }, 'meta');
    if (!h) return null;
    return {
      userId: String(h.userId),
      applyId: String(h.applyId),
      deviceId: String(h.deviceId),
      shellType: h.shellType === 'serial' ? 'serial' : 'login',
      ended: h.ended === true,
    };
  }

  /**
   * Whether a shell of an apply runs a foreground job, wherever it runs. A shell that is not the
   * apply's (or does not exist, or whose owner does not answer in time) answers "not found".
   */
  async job(applyId: string, shellId: string): Promise<ShellJob> {
    const local = this.sessions.get(shellId);
    if (local) {
      if (local.meta.applyId !== applyId) throw notFound('Shell not found', shellErrorKeys.notFound);
      return local.job();
    }
    const h = await this.askOwner(shellId, { t: 'job', applyId }, 'jobState');
    const parsed = shellJob.safeParse(h);
    if (!parsed.success) throw notFound('Shell not found', shellErrorKeys.notFound);
    return parsed.data;
  }

  /** Input a shell of this instance holds for its program (ShellSession.inputToWaitFor; 0 elsewhere). */
  inputToWaitFor(shellId: string): number {
    return this.sessions.get(shellId)?.inputToWaitFor() ?? 0;
  }

  /** Hands a view of a shell of this instance to the WebSocket relay (ShellSession.serveRelay). */
  serveRelay(shellId: string, viewerId: string, o: Omit<RelayServe, 'offset'>): Promise<boolean> {
    const local = this.sessions.get(shellId);
    return local ? local.serveRelay(viewerId, o) : Promise.resolve(false);
  }

  /** Whether a view of a shell of this instance can be handed to the relay, now or later (ShellSession.relayable). */
  relayable(shellId: string, viewerId: string): boolean {
    return this.sessions.get(shellId)?.relayable(viewerId) ?? false;
  }

  unserveRelay(shellId: string, viewerId: string): void {
    this.sessions.get(shellId)?.unserveRelay(viewerId);
  }

  /** Joined shells: let a guest type, or take it back (on the owning instance). */
  grantInput(shellId: string, userId: string, input: boolean): void {
    this.bus.publish(shellIn(shellId), { h: { t: 'grant', u: userId, input } });
  }

  /** Joined shells: one guest (`userId`) or every guest leaves the shell; the host's views stay. */
  kickGuests(shellId: string, reason: string, userId?: string): void {
    this.bus.publish(shellIn(shellId), {
      h: userId === undefined ? { t: 'kickGuests', reason } : { t: 'kickUser', u: userId, reason },
    });
  }

  /** A user leaves every joined shell on a board (their access to it ended), on every instance. */
  kickGuestFromBoard(userId: string, deviceId: string, reason: string): void {
    this.bus.publish(CONTROL_CHANNEL, { h: { t: 'kickGuest', userId, deviceId, reason } });
  }

  /** Shells this instance owns (tests, metrics). */
  stats(shellId?: string): ShellStats[] {
    const all = [...this.sessions.values()].map((s) => s.stats());
    return shellId ? all.filter((s) => s.id === shellId) : all;
  }

  get(shellId: string): ShellSession | undefined {
    return this.sessions.get(shellId);
  }

  private onControl(m: BusMessage): void {
    const h = m.h;
    if (h.t === 'endSessions') {
      this.endSessions(h);
      return;
    }
    const reason = String(h.reason ?? ShellCloseReason.closed);
    if (h.t === 'kickGuest') {
      for (const s of this.sessions.values())
        if (!s.ended && s.meta.deviceId === h.deviceId) s.kickGuests(reason, String(h.userId));
      return;
    }
    for (const s of this.sessions.values()) {
      if (
        (h.t === 'closeApply' && s.meta.applyId === h.applyId) ||
        // A serial console follows the board, not its boot: it stays open through a power reset or a flash.
        (h.t === 'closeBoard' &&
          s.meta.deviceId === h.deviceId &&
          !(
            (reason === ShellCloseReason.boardReset || reason === ShellCloseReason.boardFlashing) &&
            s.meta.shellType === 'serial'
          ))
      )
        s.close(reason);
    }
  }

  /** A sign-in ended: its shells close (every shell of the user when `userId` is given). */
  private endSessions(h: Record<string, unknown>): void {
    const ids = new Set(Array.isArray(h.ids) ? h.ids.map(String) : []);
    const userId = typeof h.userId === 'string' ? h.userId : null;
    for (const s of this.sessions.values()) {
      if (s.ended) continue;
      const byUser = userId !== null && s.meta.userId === userId;
      const byCredential = s.meta.credentialId !== undefined && ids.has(s.meta.credentialId);
      if (byUser || byCredential) s.close(ShellCloseReason.sessionEnded);
    }
  }

  private onEnded(s: ShellSession): void {
    this.log.info({ shellId: s.meta.id, reason: s.ended?.reason }, 'shell ended');
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, s] of this.sessions) {
      if (s.ended && now - s.endedAt > ENDED_SHELL_KEEP_MS) {
        s.dispose();
        this.sessions.delete(id);
      } else if (!s.ended) {
        s.sweep();
      }
    }
  }
}
