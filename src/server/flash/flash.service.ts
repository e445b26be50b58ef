// Flash jobs. Lifecycle of a job: `post` checks everything that can be checked at once (the caller
// holds the board, the image exists and is not retired, the board's driver takes its kind — a raw disk
// image or a root file system archive — and its model fits, the board can flash and is not busy) and
// stores it PENDING; the runner takes jobs in order, at most BIANBU_FLASH_CONCURRENCY at a time on this
// instance. Running, a job puts the board into `flashing` (login shells close, new sessions, resets
// and release wait), checks the image file against its sha256 (transfer), has the driver write it into
// a new root (write), read it back and compare (verify), swap it in and boot (boot); then it waits for
// the board to answer on the new image. Only then is the job SUCCESS and the board its holder's again.
// Whatever fails, the driver has left the board on its previous root, booted. A job is cancellable
// until writing starts. A lease that ends stops the job (`flash.lease_ended`); a service that stops
// or dies marks its jobs `flash.interrupted` (a death: at the next start, or by another instance's
// sweep, flash-orphans.ts).
//
// Progress lives in memory while a job runs; the row is written at each stage change, at the end and
// at most once a second between, so a poll on any instance sees it. The job's user gets
// `flash.progress` notifications (throttled) and one final notification.
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { AuthUser } from '#server/auth/user-context.ts';
import { Capability, DriverError, imageKind } from '#server/boards/driver.ts';
import type { StateChange } from '#server/boards/lab.ts';
import { AppError, conflict, notFound } from '#server/errors.ts';
import { closeShells, notifyUser } from '#server/leases/collaborators.ts';
import { ResultCode } from '#shared/codes.ts';
import {
  FLASH_EVENT_MS,
  FLASH_FINAL_STATES,
  FLASH_LOG_LINES,
  FlashErrorKey,
  type FlashEvent,
  type FlashJobDto,
  FlashNotice,
  type FlashStage,
} from '#shared/flash.ts';
import { LeaseErrorKey } from '#shared/leases.ts';
import { ShellCloseReason } from '#shared/realtime.ts';
import {
  failureOf,
  JOB_SELECT,
  type JobRow,
  jobDto,
  type LiveJob,
  PERSIST_MS,
  PHASE_STAGE,
  STAGE_SPAN,
} from './flash-job.ts';
import { interruptOrphans, ORPHAN_SWEEP_MS } from './flash-orphans.ts';
import { fits, ImageStore, kindFits, kindTaken } from './images.ts';
import { hashFile } from './pack.ts';

export class FlashService {
  readonly images: ImageStore;
  private readonly live = new Map<string, LiveJob>();
  private readonly queue: string[] = [];
  private running = 0;
  private stopped = false;
  private readonly tasks = new Set<Promise<void>>();
  /** Readings of image files by version (see measureImage). */
  private readonly measured = new Map<string, Promise<{ size: number; sha256: string }>>();
  private readonly onState = (c: StateChange) => this.boardChanged(c);

  private catalogue: Promise<void> = Promise.resolve();
  private sweeper: NodeJS.Timeout | null = null;
  /** Set by a sharing feature: whether a user who is not the holder may flash this board. */
  flashGrant?: (userId: string, deviceId: string) => Promise<boolean>;

  constructor(private readonly app: FastifyInstance) {
    this.images = new ImageStore(app);
  }

  private get db() {
    return this.app.storage;
  }

  private now(): Date {
    return this.app.clock.now();
  }

  private get concurrency(): number {
    return this.app.config.BIANBU_FLASH_CONCURRENCY;
  }

  // ---- start and stop

  async start(): Promise<void> {
    // Jobs a previous run (or a dead instance) left unfinished: their board booted its previous image.
    const why = 'The service stopped while this job ran; the board kept its previous image';
    await interruptOrphans(this.app, why);
    if (this.app.bus.kind !== 'memory') {
      this.sweeper = setInterval(() => {
        interruptOrphans(this.app, why).catch((err) =>
          this.app.log.warn({ err: (err as Error).message }, 'flash: orphan sweep failed'),
        );
      }, ORPHAN_SWEEP_MS);
      this.sweeper.unref();
    }
    // The catalogue fills in the background (building the built-in images and hashing the board disk
    // images and lab images takes a while on a busy host): the service's start never waits for it, the
    // calls that read the catalogue do. The board disk images come before the lab's, whose tags may
    // not take theirs.
    this.catalogue = (async () => {
      await this.images.ensureBuiltins();
      await this.images.registerBoardImages();
      const labFile = this.app.config.BIANBU_LAB_FILE;
      if (labFile) {
        const { readLabFile } = await import('#server/boards/labfile.ts');
        const { images } = readLabFile(labFile);
        await this.images.applyLab(images);
        if (images.some((i) => i.url)) this.track(this.images.fetchLabUrls(images));
      }
    })();
    this.track(this.catalogue);
    this.app.boards?.events.on('state', this.onState);
  }

  /**
   * Catalogues the riscv64 disk images of the board images directory again: the board lab calls it
   * when a build of them finishes (they may appear after the start). Answers the tags catalogued.
   */
  registerBoardImages(): Promise<string[]> {
    return this.images.registerBoardImages();
  }

  /** Settles once the built-in and lab images are in the catalogue (or failed to be, logged). */
  ready(): Promise<void> {
    return this.catalogue.catch(() => {});
  }

  /** Background work stop() waits for (lab image downloads). */
  private track(work: Promise<void>): void {
    const t: Promise<void> = work
      .catch((err) => this.app.log.warn({ err }, 'flash background work failed'))
      .finally(() => this.tasks.delete(t));
    this.tasks.add(t);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.app.boards?.events.off('state', this.onState);
    for (const id of this.queue.splice(0)) {
      const j = this.live.get(id);
      if (j)
        await this.finish(
          j,
          'FAILURE',
          FlashErrorKey.interrupted,
          'The service stopped before this job started',
        );
    }
    for (const j of this.live.values()) this.abort(j, FlashErrorKey.interrupted);
    await Promise.allSettled([...this.tasks]);
  }

  // ---- calls

  private async row(jobId: string): Promise<JobRow | null> {
    const live = this.live.get(jobId);
    if (live) return live.row;
    const [r] = await this.db.query<JobRow>(`${JOB_SELECT} where j.id = $1`, [jobId]);
    return r ?? null;
  }

  /** The caller may use the board: they hold it, or have an open apply on its live lease. */
  /**
   * Flashing is the holder's: someone who only uses the board (an open apply through a share) may
   * watch its jobs but not start one (`flashGrant`, when a sharing feature grants it, says otherwise).
   */
  private async access(userId: string, deviceId: string, serverName?: string) {
    const a = await this.app.leases.repo.accessOf(userId, deviceId, this.now());
    const granted = a && !a.holder ? await this.flashGrant?.(userId, deviceId) : false;
    if (!a || (!a.holder && !granted) || (serverName && a.holder && serverName !== a.serverName)) {
      throw notFound('You hold no live lease on this board', LeaseErrorKey.notHeld);
    }
    return a;
  }

  async post(
    user: AuthUser,
    input: { deviceId: string; serverName?: string; flashImageTag: string },
    multiId: string | null = null,
  ) {
    await this.ready();
    const access = await this.access(user.id, input.deviceId, input.serverName);
    const image = await this.images.usable(input.flashImageTag, user.id);
    const board = await this.app.boards.row(input.deviceId);
    if (!board) throw notFound('You hold no live lease on this board', LeaseErrorKey.notHeld);
    if (!kindFits(image, board.driver)) {
      const kind = imageKind(image.format);
      throw new AppError(
        400,
        ResultCode.BadRequest,
        FlashErrorKey.imageKindMismatch,
        kind === 'disk'
          ? `${image.name} is a raw disk image (${image.format}): this board takes root file system archives (tar, tar.gz)`
          : `${image.name} is a root file system archive (${image.format}): this board takes raw disk images (img, img.gz, img.xz, img.zst)`,
        undefined,
        undefined,
        { format: image.format, kind, takes: kindTaken(board.driver) },
      );
    }
    if (!fits(image, board)) {
      throw new AppError(
        400,
        ResultCode.BadRequest,
        FlashErrorKey.imageUnfit,
        `${image.name} does not fit ${board.model || 'this board'}`,
        undefined,
        undefined,
        {
          models: image.models,
          model: board.model,
        },
      );
    }
    const driver = this.app.boards.driverIfAny(input.deviceId);
    if (driver && !driver.capabilities().has(Capability.flash)) {
      throw new AppError(
        501,
        ResultCode.NotImplementedByDriver,
        FlashErrorKey.unsupported,
        'This board cannot be flashed (no flash command configured)',
      );
    }
    if (board.state === 'flashing')
      throw conflict('The board is already being flashed', FlashErrorKey.alreadyFlashing);
    if (board.state !== 'leased')
      throw conflict(`The board is busy (${board.state})`, FlashErrorKey.boardBusy);
    const id = crypto.randomUUID();
    // Jobs are stamped with wall time: their order and durations are real, whatever the service clock says.
    const now = new Date();
    try {
      await this.db.query(
        `insert into flash_jobs (id, multi_id, board_id, server_name, user_id, image_tag, image_name, bytes_total, created_at, log, instance_id)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11)`,
        [
          id,
          multiId,
          input.deviceId,
          access.serverName,
          user.id,
          image.tag,
          image.name,
          Number(image.size),
          now,
          JSON.stringify([`queued: ${image.name} (${image.tag})`]),
          this.app.bus.instanceId,
        ],
      );
    } catch (err) {
      if (
        (err as { code?: string }).code === '23505' ||
        /duplicate key|flash_jobs_board_active_uq/.test(String((err as Error).message))
      ) {
        throw conflict('The board already has a flash job', FlashErrorKey.alreadyFlashing);
      }
      throw err;
    }
    const [row] = await this.db.query<JobRow>(`${JOB_SELECT} where j.id = $1`, [id]);
    const job: LiveJob = {
      row,
      image,
      abort: new AbortController(),
      abortKey: null,
      writing: false,
      newLog: [],
      stageBegan: Date.now(),
      lastEmit: 0,
      lastPersist: 0,
      lastPercent: 0,
    };
    this.live.set(id, job);
    this.queue.push(id);
    this.pump();
    return jobDto(row, job);
  }

  async postMulti(
    user: AuthUser,
    input: { flashImageTag: string; devices: { deviceId: string; serverName?: string }[] },
  ) {
    const multiId = crypto.randomUUID();
    const results: {
      deviceId: string;
      job: FlashJobDto | null;
      errorKey: string | null;
      message: string | null;
    }[] = [];
    for (const d of input.devices) {
      try {
        const job = await this.post(user, { ...d, flashImageTag: input.flashImageTag }, multiId);
        results.push({ deviceId: d.deviceId, job, errorKey: null, message: null });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        results.push({ deviceId: d.deviceId, job: null, errorKey: err.key, message: err.message });
      }
    }
    return { multiId, results };
  }

  /** Who may see a board's jobs: anyone who may use it now sees all; others only their own (a lease that ended). */
  private async jobScope(user: AuthUser, deviceId: string): Promise<{ sql: string; params: unknown[] }> {
    const a = await this.app.leases.repo.accessOf(user.id, deviceId, this.now());
    if (a) return { sql: 'j.board_id = $1', params: [deviceId] };
    const [own] = await this.db.query(
      'select 1 from flash_jobs where board_id = $1 and user_id = $2 limit 1',
      [deviceId, user.id],
    );
    if (!own) throw notFound('You hold no live lease on this board', LeaseErrorKey.notHeld);
    return { sql: 'j.board_id = $1 and j.user_id = $2', params: [deviceId, user.id] };
  }

  async latest(user: AuthUser, deviceId: string) {
    const scope = await this.jobScope(user, deviceId);
    const [r] = await this.db.query<JobRow>(
      `${JOB_SELECT} where ${scope.sql} order by j.created_at desc, j.id limit 1`,
      scope.params,
    );
    const live = r ? this.live.get(r.id) : undefined;
    const row = live?.row ?? r;
    return { deviceId, job: row ? jobDto(row, live) : null, log: row ? row.log : [] };
  }

  async multi(user: AuthUser, ids: string[]) {
    const rows = await this.db.query<JobRow>(
      `${JOB_SELECT} where j.user_id = $1 and (j.id = any($2::text[]) or j.multi_id = any($2::text[])) order by j.created_at, j.board_id`,
      [user.id, ids],
    );
    return { jobs: rows.map((r) => jobDto(this.live.get(r.id)?.row ?? r, this.live.get(r.id))) };
  }

  async history(user: AuthUser, deviceId: string, limit: number) {
    const scope = await this.jobScope(user, deviceId);
    const rows = await this.db.query<JobRow>(
      `${JOB_SELECT} where ${scope.sql} order by j.created_at desc, j.id limit ${Math.trunc(limit)}`,
      scope.params,
    );
    return { deviceId, items: rows.map((r) => jobDto(this.live.get(r.id)?.row ?? r, this.live.get(r.id))) };
  }

  async cancel(user: AuthUser, jobId: string): Promise<FlashJobDto> {
    const r = await this.row(jobId);
    if (!r || r.user_id !== user.id) throw notFound('No such flash job', FlashErrorKey.jobUnknown);
    if (FLASH_FINAL_STATES.has(r.state)) throw conflict('The job has ended', FlashErrorKey.notCancellable);
    const live = this.live.get(jobId);
    if (!live)
      throw conflict('The job runs on another instance of the service', FlashErrorKey.notCancellable);
    if (live.writing)
      throw conflict(
        'The job has started writing: it can no longer be cancelled',
        FlashErrorKey.notCancellable,
      );
    const queued = this.queue.indexOf(jobId);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      await this.finish(live, 'CANCELLED', FlashErrorKey.cancelled, 'Cancelled before it started');
    } else {
      this.abort(live, FlashErrorKey.cancelled);
      await new Promise<void>((resolve) => {
        const t = setInterval(() => {
          if (!this.live.has(jobId)) {
            clearInterval(t);
            resolve();
          }
        }, 20);
      });
    }
    return jobDto((await this.row(jobId))!);
  }

  // ---- the runner

  private pump(): void {
    while (!this.stopped && this.running < this.concurrency && this.queue.length) {
      const id = this.queue.shift()!;
      const job = this.live.get(id);
      if (!job) continue;
      this.running++;
      const task = this.run(job)
        .catch((err) => this.app.log.error({ err, jobId: id }, 'flash job crashed'))
        .finally(() => {
          this.running--;
          this.tasks.delete(task);
          this.pump();
        });
      this.tasks.add(task);
    }
  }

  private abort(job: LiveJob, key: string): void {
    if (job.abortKey) return;
    job.abortKey = key;
    job.abort.abort(new DriverError('flash.aborted', key));
  }

  /**
   * A board leaving `flashing` for anything but its holder stops its job: the lease ended, or the
   * board went offline under it (its board host died or was cut off: interrupted, src/server/hosts).
   */
  private boardChanged(c: StateChange): void {
    if (c.from !== 'flashing' || c.to === 'leased') return;
    const key = c.to === 'offline' ? FlashErrorKey.interrupted : FlashErrorKey.leaseEnded;
    for (const j of this.live.values())
      if (j.row.board_id === c.boardId && j.row.state === 'RUNNING') this.abort(j, key);
  }

  private log(job: LiveJob, line: string): void {
    const stamped = `${new Date().toISOString().slice(11, 23)} ${line}`;
    job.row.log = [...job.row.log, stamped].slice(-FLASH_LOG_LINES);
    job.newLog.push(stamped);
  }

  private setStage(job: LiveJob, stage: FlashStage, bytesTotal?: number): void {
    if (job.row.stage === stage) return;
    job.row.stage = stage;
    job.row.percent = STAGE_SPAN[stage][0];
    job.row.bytes_done = 0;
    if (bytesTotal !== undefined) job.row.bytes_total = bytesTotal;
    job.row.speed_bps = 0;
    job.stageBegan = Date.now();
    this.log(job, `stage ${stage}`);
    void this.emit(job, true);
  }

  private progress(job: LiveJob, fraction: number, done?: number, total?: number): void {
    const [a, b] = STAGE_SPAN[job.row.stage];
    job.row.percent = Math.max(job.row.percent, a + (b - a) * Math.min(1, Math.max(0, fraction)));
    if (done !== undefined) {
      job.row.bytes_done = done;
      if (total !== undefined) job.row.bytes_total = total;
      const secs = (Date.now() - job.stageBegan) / 1000;
      if (secs > 0.2) job.row.speed_bps = Math.round(done / secs);
    }
    void this.emit(job, false);
  }

  /** A progress notification (throttled unless `force`) and, at most once a second, the row. */
  private async emit(job: LiveJob, force: boolean): Promise<void> {
    const t = Date.now();
    const percentStep = Math.floor(job.row.percent) !== Math.floor(job.lastPercent);
    if (force || t - job.lastPersist >= PERSIST_MS) {
      job.lastPersist = t;
      await this.persist(job).catch((err) =>
        this.app.log.warn({ err, jobId: job.row.id }, 'flash progress not stored'),
      );
    }
    if (!force && t - job.lastEmit < FLASH_EVENT_MS && !(percentStep && t - job.lastEmit >= 50)) return;
    job.lastEmit = t;
    job.lastPercent = job.row.percent;
    const event: FlashEvent = { job: jobDto(job.row, job), log: job.newLog.splice(0) };
    await notifyUser(this.app, job.row.user_id, {
      id: crypto.randomUUID(),
      kind: FlashNotice.progress,
      at: new Date().toISOString(),
      level: 'info',
      data: event as unknown as Record<string, unknown>,
    });
  }

  private async persist(job: LiveJob): Promise<void> {
    const r = job.row;
    await this.db.query(
      `update flash_jobs set state = $2, stage = $3, percent = $4, bytes_done = $5, bytes_total = $6, speed_bps = $7,
              error_key = $8, error_message = $9, log = $10::jsonb, started_at = $11, ended_at = $12
        where id = $1`,
      [
        r.id,
        r.state,
        r.stage,
        r.percent,
        Number(r.bytes_done),
        Number(r.bytes_total),
        Number(r.speed_bps),
        r.error_key,
        r.error_message,
        JSON.stringify(r.log),
        r.started_at,
        r.ended_at,
      ],
    );
  }

  private async finish(
    job: LiveJob,
    state: 'SUCCESS' | 'FAILURE' | 'CANCELLED',
    key: string | null,
    message: string | null,
  ): Promise<void> {
    const r = job.row;
    r.state = state;
    r.error_key = key;
    r.error_message = message;
    r.ended_at = new Date();
    r.speed_bps = 0;
    if (state === 'SUCCESS') {
      r.stage = 'done';
      r.percent = 100;
    }
    this.log(
      job,
      state === 'SUCCESS'
        ? 'done: the board runs the new image'
        : `${state.toLowerCase()}: ${key}${message ? ` — ${message}` : ''}`,
    );
    await this.persist(job);
    this.live.delete(r.id);
    const kind =
      state === 'SUCCESS'
        ? FlashNotice.succeeded
        : state === 'CANCELLED'
          ? FlashNotice.cancelled
          : FlashNotice.failed;
    const event: FlashEvent = { job: jobDto(r), log: job.newLog.splice(0) };
    await notifyUser(this.app, r.user_id, {
      id: crypto.randomUUID(),
      kind,
      at: new Date().toISOString(),
      level: state === 'SUCCESS' ? 'success' : state === 'CANCELLED' ? 'info' : 'error',
      data: {
        ...(event as unknown as Record<string, unknown>),
        deviceId: r.board_id,
        serverName: r.server_name,
        imageName: r.image_name,
        errorKey: key,
      },
    });
  }

  /**
   * The image file's size and sha256. A file is hashed once per version (same inode, size, modification
   * and change times): jobs flashing it at once, or again later, share that one reading.
   */
  private async measureImage(job: LiveJob): Promise<{ size: number; sha256: string }> {
    const file = job.image.path;
    const st = await fs.promises.stat(file).catch((err: NodeJS.ErrnoException) => {
      throw new DriverError(
        FlashErrorKey.imageCorrupt,
        err.code === 'ENOENT' ? 'The image file is missing' : `The image file cannot be read: ${err.code}`,
      );
    });
    const key = [file, st.dev, st.ino, st.size, st.mtimeMs, st.ctimeMs].join('\0');
    let reading = this.measured.get(key);
    if (reading) this.log(job, 'this version of the image file was hashed before: using that reading');
    else {
      for (const k of this.measured.keys()) if (k.startsWith(`${file}\0`)) this.measured.delete(k);
      reading = hashFile(file, (d) => {
        for (const j of this.live.values()) {
          if (j.image.path === file && j.row.stage === 'transfer')
            this.progress(j, d / Math.max(1, st.size), d);
        }
      }).catch((err: NodeJS.ErrnoException) => {
        this.measured.delete(key);
        throw new DriverError(
          FlashErrorKey.imageCorrupt,
          `The image file cannot be read: ${err.code ?? err.message}`,
        );
      });
      this.measured.set(key, reading);
    }
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(new DriverError('flash.aborted', job.abortKey ?? 'aborted'));
      if (job.abort.signal.aborted) fail();
      else job.abort.signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => {});
    const result = await Promise.race([reading, aborted]);
    this.progress(job, 1, result.size);
    return result;
  }

  private async run(job: LiveJob): Promise<void> {
    const r = job.row;
    const now = new Date();
    const claimed = await this.db.query(
      `update flash_jobs set state = 'RUNNING', stage = 'transfer', started_at = $2 where id = $1 and state = 'PENDING' returning id`,
      [r.id, now],
    );
    if (!claimed.length) {
      this.live.delete(r.id);
      return;
    }
    r.state = 'RUNNING';
    r.started_at = now;
    const repo = this.app.leases.repo;
    if ((await repo.beginFlash(r.board_id, this.now())) === null) {
      const state = await repo.boardState(r.board_id);
      const held = await repo.accessOf(r.user_id, r.board_id, this.now());
      if (!held)
        await this.finish(job, 'FAILURE', FlashErrorKey.leaseEnded, 'The lease ended before the job started');
      else
        await this.finish(
          job,
          'FAILURE',
          FlashErrorKey.boardBusy,
          `The board was busy (${state}) when the job started`,
        );
      return;
    }
    let booted = false;
    let outcome: { state: 'SUCCESS' | 'FAILURE' | 'CANCELLED'; key: string | null; message: string | null } =
      {
        state: 'SUCCESS',
        key: null,
        message: null,
      };
    try {
      await closeShells(this.app, { deviceId: r.board_id }, ShellCloseReason.boardFlashing);
      // transfer: the image file is what the catalogue measured, byte for byte.
      this.setStage(job, 'transfer', Number(job.image.size));
      this.log(
        job,
        `checking ${job.image.tag} (${job.image.size} bytes) against sha256 ${job.image.sha256.slice(0, 16)}…`,
      );
      const measured = await this.measureImage(job);
      if (measured.size !== Number(job.image.size) || measured.sha256 !== job.image.sha256) {
        throw new DriverError(
          FlashErrorKey.imageCorrupt,
          measured.size !== Number(job.image.size)
            ? `The image file has ${measured.size} bytes, the catalogue says ${job.image.size}: truncated or replaced`
            : `The image's sha256 is ${measured.sha256}, the catalogue says ${job.image.sha256}`,
        );
      }
      this.log(job, 'image checked: sha256 matches');
      if (job.abortKey) throw new DriverError('flash.aborted', job.abortKey);
      job.writing = true;
      const driver = this.app.boards.driver(r.board_id);
      this.setStage(job, 'write');
      await driver.flash(
        job.image.path,
        (p) => {
          if (p.log) this.log(job, p.log);
          const stage = PHASE_STAGE[p.phase];
          if (!stage) return;
          if (stage !== r.stage) this.setStage(job, stage, p.bytesTotal);
          this.progress(job, p.percent / 100, p.bytesDone, p.bytesTotal);
        },
        { signal: job.abort.signal, format: job.image.format, label: `${job.image.name} (${job.image.tag})` },
      );
      // boot: the board answers on its new image.
      this.setStage(job, 'boot');
      const deadline = Date.now() + this.app.config.BIANBU_FLASH_BOOT_TIMEOUT_MS;
      for (;;) {
        try {
          await driver.probe(5000);
          break;
        } catch (err) {
          if (Date.now() > deadline)
            throw new DriverError(
              FlashErrorKey.bootFailed,
              `The board did not answer after the flash: ${(err as Error).message}`,
            );
          await new Promise((res) => setTimeout(res, 250));
        }
      }
      booted = true;
      this.log(job, 'the board answers on the new image');
      await this.db.query(
        `update boards set declared_os = case when image_os is null then attributes->>'os' else declared_os end,
                           image_os = $2, attributes = jsonb_set(attributes, '{os}', to_jsonb($2::text)), updated_at = $3
          where id = $1`,
        [r.board_id, job.image.name, this.now()],
      );
    } catch (err) {
      outcome = job.abortKey
        ? {
            state: job.abortKey === FlashErrorKey.cancelled ? 'CANCELLED' : 'FAILURE',
            key: job.abortKey,
            message:
              job.abortKey === FlashErrorKey.cancelled
                ? 'Cancelled before writing started'
                : job.abortKey === FlashErrorKey.leaseEnded
                  ? 'The lease ended: the job stopped and the board kept its previous image'
                  : 'The service or the board went away: the job stopped and the board kept its previous image',
          }
        : { state: 'FAILURE', ...failureOf(err) };
    }
    // The board is its holder's again before the result is announced, so what the result invites
    // (open a shell on the new image) works at once.
    await repo
      .endFlash(r.board_id, booted, this.now())
      .catch((err) => this.app.log.warn({ err, boardId: r.board_id }, 'board not handed back after flash'));
    await this.finish(job, outcome.state, outcome.key, outcome.message);
  }
}
