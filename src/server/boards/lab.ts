// The board lab (`app.boards`). Lifecycle: `start()` applies the lab file (or creates the default
// local lab on first start), starts one driver per board in service, then runs the health prober,
// the metrics sampler and the metrics pruner; `stop()` ends them and every driver. Board state lives in
// storage; every change is written to board_events and emitted on `events` ('state').
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { installShippedPlugins } from '#server/board-plugins/shipped.ts';
import { AppError, conflict, notFound } from '#server/errors.ts';
import type { BoardNetworkDto, Egress, NetworkPolicy } from '#shared/board-network.ts';
import {
  type AdminBoardDto,
  type BoardDeclaration,
  type BoardDto,
  BoardErrorKey,
  BoardState,
} from '#shared/boards.ts';
import { ResultCode } from '#shared/codes.ts';
import {
  type BoardRow,
  BUSY_STATES,
  eachLimited,
  iso,
  mergeOptions,
  OFFLINE_AFTER_FAILURES,
  redactOptions,
  type StateChange,
  toBoardDto,
} from './board-rows.ts';
import { type BoardDriver, Capability, DriverError, type MetricsSample } from './driver.ts';
import { makeDriver } from './driver-factory.ts';
import { prepareBoardsHost } from './host-prepare.ts';
import { applyLabFile, type DeclareContext, upsertBoard } from './lab-declare.ts';
import {
  applyNetwork,
  networkDto,
  requireQemu,
  resolveBoardNetwork,
  saveAdminNetwork,
} from './lab-network.ts';
import { hostSupport } from './local/host-support.ts';
import { BOARD_TERMINALS, machineTerminals, terminalBudget } from './local/pty-host/budget.ts';
import { deleteSamplesBefore, insertSamples, readMetricsSince } from './metrics-store.ts';
import { BoardImages } from './qemu/board-images.ts';
import { hostDefaultEgress } from './qemu/net-policy.ts';
import type { BoardFacts } from './qemu/qemu-driver.ts';

export {
  type BoardRow,
  driverAppError,
  OFFLINE_AFTER_FAILURES,
  redactOptions,
  type StateChange,
  toBoardDto,
} from './board-rows.ts';

export class BoardLab {
  /** 'state' (StateChange): board state changes, for the realtime channel. */
  readonly events = new EventEmitter();
  private readonly drivers = new Map<string, BoardDriver>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly health = new Map<string, { failures: number; lastSeenWrite: number }>();
  private probing = false;
  private starting: Promise<void> = Promise.resolve();
  private sampling = false;
  private stopped = false;
  /** False when boards cannot be isolated here and unsandboxed boards were not allowed: local boards stay down. */
  readonly localBoardsRun: boolean;
  /** How many local boards the last terminal-budget warning was for (said once per count). */
  private terminalsSaid = -1;
  readonly pluginsDir: string;
  /** The riscv64 board images (built on a first start, in the background). */
  readonly boardImages: BoardImages;
  /** The lab file's `network`: riscv64 boards' policy where their own options name none. */
  private labNetwork: NetworkPolicy | null = null;
  /** The host's default egress, read at start: `nat` with a default route, `none` without. */
  private hostEgress: Egress = hostDefaultEgress();

  constructor(private readonly app: FastifyInstance) {
    this.events.setMaxListeners(0);
    const cfg = app.config;
    this.boardImages = new BoardImages(
      path.resolve(cfg.BIANBU_BOARD_IMAGES ?? path.join(cfg.dataDir, 'images', 'board')),
      (msg, extra) => app.log.info(extra ?? {}, msg),
    );
    this.localBoardsRun = hostSupport().userns || cfg.BIANBU_ALLOW_UNSANDBOXED;
    this.pluginsDir = path.resolve(cfg.BIANBU_PLUGINS_DIR ?? path.join(cfg.dataDir, 'plugins'));
  }

  private get db() {
    return this.app.storage;
  }

  // ---- start and stop -------------------------------------------------------------------------

  async start(): Promise<void> {
    const cfg = this.app.config;
    const begun = Date.now();
    await prepareBoardsHost({
      boardsDir: path.join(cfg.dataDir, 'boards'),
      allowUnsandboxed: cfg.BIANBU_ALLOW_UNSANDBOXED,
      log: this.app.log,
    });
    this.hostEgress = hostDefaultEgress();
    await this.applyLab();
    fs.mkdirSync(this.pluginsDir, { recursive: true });
    try {
      const plugins = installShippedPlugins(this.pluginsDir);
      const changed = Object.entries(plugins).filter(([, v]) => v === 'installed' || v === 'updated');
      if (changed.length) this.app.log.info({ plugins, dir: this.pluginsDir }, 'shipped plugins installed');
    } catch (err) {
      this.app.log.warn({ err, dir: this.pluginsDir }, 'could not install the shipped plugins');
    }
    // A board left flashing or resetting by a previous run is no longer busy.
    for (const r of await this.rows({ includeRetired: false })) {
      if (BUSY_STATES.has(r.state) && !r.host_id)
        await this.setState(r.id, BoardState.idle, 'service restarted');
    }
    const rows = await this.rows({ includeRetired: false });
    if (rows.some((r) => r.driver === 'qemu')) void this.prepareBoardImages();
    // A large lab keeps booting in the background: the service must come up within Fastify's start
    // deadline, and a board still booting is simply not answering probes yet.
    // One share for the boards starting together, from the rows just read.
    const terminals = this.terminalsPerBoard(rows);
    this.starting = eachLimited(rows, 8, (r) => this.startDriver(r, terminals));
    const wait = Math.max(0, 4000 - (Date.now() - begun));
    await Promise.race([this.starting, new Promise((r) => setTimeout(r, wait).unref())]);
    this.timers.push(setInterval(() => void this.probeAll(), cfg.BIANBU_PROBE_INTERVAL_MS));
    this.timers.push(setInterval(() => void this.sampleAll(), cfg.BIANBU_METRICS_INTERVAL_MS));
    this.timers.push(setInterval(() => void this.pruneMetrics(), 10 * 60_000));
    for (const t of this.timers) t.unref();
  }

  /**
   * Builds the riscv64 board images if they are missing or stale (minutes, once; the log says how far
   * it is), then lets the flash catalogue list them. Boards that wait for their default image start
   * as soon as it is there.
   */
  private async prepareBoardImages(): Promise<void> {
    await this.boardImages.ensure();
    const images = (
      this.app as unknown as { flash?: { images?: { registerBoardImages?: () => Promise<void> } } }
    ).flash?.images;
    await images
      ?.registerBoardImages?.()
      .catch((err: Error) =>
        this.app.log.warn({ err: err.message }, 'riscv64 board images not added to the catalogue'),
      );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.boardImages.stop();
    for (const t of this.timers) clearInterval(t);
    await this.starting;
    await Promise.all([...this.drivers.values()].map((d) => d.stop().catch(() => {})));
    this.drivers.clear();
  }

  /** Lab file → boards (upsert; boards the file no longer names are retired), or the default lab. */
  private async applyLab(): Promise<void> {
    this.labNetwork = await applyLabFile(this.declareContext());
  }

  private upsert(b: BoardDeclaration, source: BoardRow['source']): Promise<void> {
    return upsertBoard(this.declareContext(), b, source);
  }

  private declareContext(): DeclareContext {
    return {
      db: this.db,
      config: this.app.config,
      log: this.app.log,
      row: (id) => this.row(id),
      event: (id, kind, from, to, reason) => this.event(id, kind, from, to, reason),
      retire: (id, reason) => this.retireRow(id, reason),
    };
  }

  private driverFor(r: BoardRow, terminals?: number, network?: { policy: NetworkPolicy }): BoardDriver {
    return makeDriver(
      r,
      {
        dataDir: this.app.config.dataDir,
        pluginsDir: this.pluginsDir,
        codeServerDir: this.app.config.BIANBU_CODE_SERVER_DIR || null,
        images: this.boardImages,
        log: (boardId, msg, extra) => this.app.log.warn({ boardId, ...extra }, msg),
        onFacts: (boardId, f) => void this.recordFacts(boardId, f),
      },
      terminals,
      network,
    );
  }

  /**
   * What a riscv64 board's machine says of itself (harts, memory, ISA, kernel, OS) replaces what was
   * declared: the catalogue shows the machine, not the lab file.
   */
  async recordFacts(id: string, f: BoardFacts): Promise<void> {
    const attrs: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(f)) if (v !== undefined && v !== '') attrs[k] = v;
    if (!Object.keys(attrs).length) return;
    try {
      const [r] = await this.db.query<{ state: BoardState }>(
        'update boards set attributes = attributes || $2::jsonb where id = $1 returning state',
        [id, JSON.stringify(attrs)],
      );
      // Consoles showing the board hear of it: what they show is the machine, not the lab file.
      if (r) this.events.emit('facts', { boardId: id, state: r.state, attributes: attrs });
    } catch (err) {
      this.app.log.warn({ boardId: id, err: (err as Error).message }, 'board facts not recorded');
    }
  }

  /** `terminals`: a local board's terminal share when the caller knows it (else read from storage). */
  private async startDriver(r: BoardRow, terminals?: number): Promise<void> {
    // A board host's board: its driver runs there, reached once the host links (attachRemote).
    // An instance that runs no boards itself leaves its own lab's boards to whoever runs them.
    if (r.host_id || !this.app.config.BIANBU_LOCAL_BOARDS) return;
    if (r.driver === 'local' && !this.localBoardsRun) {
      await this.markHealth(r.id, false, BoardErrorKey.sandboxMissing);
      if (r.state !== BoardState.offline && r.state !== BoardState.maintenance) {
        await this.setState(r.id, BoardState.offline, 'bubblewrap is missing');
      }
      return;
    }
    let d: BoardDriver;
    try {
      d = this.driverFor(
        r,
        r.driver === 'local'
          ? (terminals ?? this.terminalsPerBoard(await this.rows({ includeRetired: false })))
          : undefined,
        r.driver === 'qemu' ? await this.resolveNetwork(r) : undefined,
      );
    } catch (err) {
      await this.markHealth(r.id, false, (err as Error).message.slice(0, 200));
      return;
    }
    this.drivers.set(r.id, d);
    try {
      await d.start();
      await this.markHealth(r.id, true, null);
    } catch (err) {
      this.app.log.warn({ boardId: r.id, err: (err as Error).message }, 'board did not start');
      await this.markHealth(r.id, false, err instanceof DriverError ? err.key : BoardErrorKey.driverFailed);
    }
  }

  /**
   * Each local board's share of the machine's terminals (pty-host/budget.ts), for the boards declared
   * (`rows`, retired ones left out). Said once in the log when they do not all get BOARD_TERMINALS.
   */
  private terminalsPerBoard(rows: readonly BoardRow[]): number {
    const boards = rows.filter((x) => x.driver === 'local').length;
    const pool = machineTerminals();
    const { perBoard, fits } = terminalBudget(boards, pool);
    if (perBoard < BOARD_TERMINALS && this.terminalsSaid !== boards) {
      this.terminalsSaid = boards;
      this.app.log.warn(
        { boards, perBoard, ptyMax: pool.max, ptyReserve: pool.reserve, fits },
        fits
          ? "local boards share the machine's terminals: each may hold fewer at once"
          : "local boards overfill the machine's terminals: raise kernel.pty.max",
      );
    }
    return perBoard;
  }

  private async stopDriver(id: string): Promise<void> {
    const d = this.drivers.get(id);
    this.drivers.delete(id);
    this.health.delete(id);
    await d?.stop().catch(() => {});
  }

  // ---- lookups ------------------------------------------------------------------------------

  async row(id: string): Promise<BoardRow | undefined> {
    const [r] = await this.db.query<BoardRow>('select * from boards where id = $1', [id]);
    return r;
  }

  async rows(opts: { state?: BoardState; includeRetired?: boolean } = {}): Promise<BoardRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (!opts.includeRetired) where.push('retired_at is null');
    if (opts.state) {
      params.push(opts.state);
      where.push(`state = $${params.length}`);
    }
    return this.db.query<BoardRow>(
      `select * from boards ${where.length ? `where ${where.join(' and ')}` : ''} order by name, id`,
      params,
    );
  }

  /** Boards in service as users see them. */
  async list(opts: { state?: BoardState } = {}): Promise<BoardDto[]> {
    return (await this.rows(opts)).map(toBoardDto);
  }

  /** One board in service, or undefined (retired boards are not answered). */
  async get(id: string): Promise<BoardDto | undefined> {
    const r = await this.row(id);
    return r && !r.retired_at ? toBoardDto(r) : undefined;
  }

  adminDto(r: BoardRow): AdminBoardDto {
    return {
      ...toBoardDto(r),
      source: r.source,
      stateReason: r.state_reason,
      stateChangedAt: iso(r.state_changed_at) as string,
      retiredAt: iso(r.retired_at),
      lastSeenAt: iso(r.last_seen_at),
      consecutiveFailures: r.consecutive_failures,
      lastError: r.last_error,
      options: redactOptions(r.driver_options),
      running: this.drivers.has(r.id),
      host: this.hostNames.get(r.host_id ?? '') ?? (r.host_id ? r.host_id : null),
    };
  }

  /**
   * The driver of a board in service. Unknown and retired boards answer "not found"; a board whose
   * driver is not running (offline, or local boards without bubblewrap) answers `board.offline`.
   */
  driver(boardId: string): BoardDriver {
    const d = this.drivers.get(boardId);
    if (d) return d;
    throw new AppError(
      503,
      ResultCode.Unavailable,
      BoardErrorKey.offline,
      `Board ${boardId} is offline or unknown`,
    );
  }

  /** The driver if there is one, without throwing (probes, tests). */
  driverIfAny(boardId: string): BoardDriver | undefined {
    return this.drivers.get(boardId);
  }

  /** Host ids → names, for the admin list (filled as hosts link). */
  readonly hostNames = new Map<string, string>();

  /**
   * A board host's board is reachable through this instance now (src/server/hosts): its calls go to
   * `d`, and a board shown offline comes back as it answers.
   */
  async attachRemote(d: BoardDriver): Promise<void> {
    this.drivers.set(d.boardId, d);
    const r = await this.row(d.boardId);
    if (r && !r.retired_at) await this.probeOne(r);
  }

  /** The link that carried `d` ended: the board is not reachable through this instance any more. */
  detachRemote(d: BoardDriver): void {
    if (this.drivers.get(d.boardId) === d) {
      this.drivers.delete(d.boardId);
      this.health.delete(d.boardId);
    }
  }

  // ---- state ----------------------------------------------------------------------------------

  /** Sets a board's state, records it in board_events and emits 'state'. Answers the change, or null if unchanged. */
  async setState(boardId: string, state: BoardState, reason: string): Promise<StateChange | null> {
    return this.transition(boardId, null, state, reason);
  }

  /**
   * Compare-and-set: changes the state only if the current one is among `from` (null: any). Answers
   * the change, or null when the board was not in one of those states (or already in `to`).
   */
  async transition(
    boardId: string,
    from: readonly BoardState[] | null,
    to: BoardState,
    reason: string,
  ): Promise<StateChange | null> {
    const rows = await this.db.query<{ from_state: BoardState; at: Date | string }>(
      `with old as (select id, state from boards where id = $1 and retired_at is null for update)
       update boards b set state = $2, state_reason = $3, state_changed_at = now(), updated_at = now()
       from old where b.id = old.id and old.state <> $2 and ($4::text[] is null or old.state = any($4::text[]))
       returning old.state as from_state, b.state_changed_at as at`,
      [boardId, to, reason, from ? [...from] : null],
    );
    if (!rows.length) {
      if (!(await this.get(boardId))) throw notFound(`Board ${boardId} not found`, BoardErrorKey.unknown);
      return null;
    }
    const change: StateChange = {
      boardId,
      from: rows[0].from_state,
      to,
      reason,
      at: iso(rows[0].at) as string,
    };
    await this.event(boardId, 'state', change.from, to, reason);
    this.events.emit('state', change);
    return change;
  }

  private async event(
    boardId: string,
    kind: string,
    from: string | null,
    to: string | null,
    reason: string | null,
  ) {
    await this.db.query(
      'insert into board_events (board_id, kind, from_state, to_state, reason) values ($1, $2, $3, $4, $5)',
      [boardId, kind, from, to, reason],
    );
  }

  /** The state history of a board, newest first. */
  async history(boardId: string, limit = 50) {
    return this.db.query<{
      at: Date;
      kind: string;
      from_state: string | null;
      to_state: string | null;
      reason: string | null;
    }>(
      'select at, kind, from_state, to_state, reason from board_events where board_id = $1 order by id desc limit $2',
      [boardId, limit],
    );
  }

  async setMaintenance(boardId: string, on: boolean, reason?: string): Promise<BoardRow> {
    const r = await this.mustRow(boardId);
    if (on) await this.setState(boardId, BoardState.maintenance, reason || 'maintenance');
    else if (r.state === BoardState.maintenance) {
      const healthy = this.drivers.has(boardId) && r.consecutive_failures < OFFLINE_AFTER_FAILURES;
      await this.transition(
        boardId,
        [BoardState.maintenance],
        healthy ? BoardState.idle : BoardState.offline,
        reason || 'maintenance over',
      );
    }
    return this.mustRow(boardId);
  }

  /**
   * Restores the board's default image (lease expiry): state `resetting` while it runs, then the
   * state it had before (normally idle). A failure leaves the board offline with the reason.
   */
  async resetToDefault(boardId: string): Promise<void> {
    const d = this.driver(boardId);
    const before = (await this.mustRow(boardId)).state;
    await this.setState(boardId, BoardState.resetting, 'restoring the default image');
    try {
      await d.restoreDefault();
      // Its snapshots went with the disk (they end with the lease): their rows and charges go too.
      await this.db.query('delete from board_snapshots where board_id = $1', [boardId]);
      await this.db.query('delete from board_snapshot_charges where board_id = $1', [boardId]);
      // The board runs its default image again: its os attribute is the declared one again.
      await this.db.query(
        `update boards set attributes = case when declared_os is null then attributes - 'os'
                                             else jsonb_set(attributes, '{os}', to_jsonb(declared_os)) end,
                           image_os = null, declared_os = null
          where id = $1 and image_os is not null`,
        [boardId],
      );
      await this.transition(
        boardId,
        [BoardState.resetting],
        before === BoardState.resetting ? BoardState.idle : before,
        'default image restored',
      );
    } catch (err) {
      const key = err instanceof DriverError ? err.key : BoardErrorKey.driverFailed;
      if (key === BoardErrorKey.unsupported) {
        // A board without a reimage command keeps its files; it is back in service as it was.
        await this.transition(
          boardId,
          [BoardState.resetting],
          before === BoardState.resetting ? BoardState.idle : before,
          'no default image to restore',
        );
        return;
      }
      await this.markHealth(boardId, false, key);
      await this.transition(boardId, [BoardState.resetting], BoardState.offline, `restore failed: ${key}`);
      throw err;
    }
  }

  // ---- administration -----------------------------------------------------------------------

  private async mustRow(id: string): Promise<BoardRow> {
    const r = await this.row(id);
    if (!r || r.retired_at) throw notFound(`Board ${id} not found`, BoardErrorKey.unknown);
    return r;
  }

  async add(decl: BoardDeclaration): Promise<BoardRow> {
    const existing = await this.row(decl.id);
    if (existing && !existing.retired_at)
      throw conflict(`Board ${decl.id} already exists`, BoardErrorKey.exists);
    await this.upsert(decl, 'admin');
    const r = await this.mustRow(decl.id);
    await this.startDriver(r);
    return this.mustRow(decl.id);
  }

  async change(
    id: string,
    patch: {
      name?: string;
      model?: string;
      attributes?: Record<string, string | number | boolean>;
      options?: Record<string, unknown>;
    },
  ): Promise<BoardRow> {
    const r = await this.mustRow(id);
    const options = patch.options ? mergeOptions(r, patch.options) : r.driver_options;
    await this.db.query(
      `update boards set name = $2, model = $3, attributes = $4::jsonb, driver_options = $5::jsonb, updated_at = now() where id = $1`,
      [
        id,
        patch.name ?? r.name,
        patch.model ?? r.model,
        JSON.stringify(patch.attributes ?? r.attributes),
        JSON.stringify(options),
      ],
    );
    await this.event(id, 'changed', null, null, Object.keys(patch).join(','));
    const after = await this.mustRow(id);
    if (patch.options || (patch.name && patch.name !== r.name)) {
      // New connection settings or a new hostname take effect with a fresh driver.
      await this.stopDriver(id);
      await this.startDriver(after);
    }
    return after;
  }

  async retire(id: string): Promise<BoardRow> {
    await this.mustRow(id);
    await this.retireRow(id, 'retired by an administrator');
    return (await this.row(id)) as BoardRow;
  }

  private async retireRow(id: string, reason: string): Promise<void> {
    await this.stopDriver(id);
    await this.db.query('update boards set retired_at = now(), updated_at = now() where id = $1', [id]);
    await this.event(id, 'retired', null, null, reason);
  }

  // ---- network (riscv64 boards; src/shared/board-network.ts; a host's boards: lab-network.ts) ---
  /** A riscv64 board's policy and where it came from (first found wins, board-network.ts). */
  private async resolveNetwork(r: BoardRow) {
    return resolveBoardNetwork(this.db, r, this.labNetwork, this.hostEgress);
  }

  /** A riscv64 board's network: its policy, where it comes from, and whether its NIC is on. */
  async networkOf(id: string): Promise<BoardNetworkDto> {
    const r = await this.mustRow(id);
    requireQemu(r);
    return networkDto(r, await this.resolveNetwork(r), this.hostEgress, this.drivers.get(id));
  }

  /** An administrator's policy for a board (null: drop it), kept and applied live to a running board. */
  async setNetwork(id: string, policy: NetworkPolicy | null): Promise<BoardNetworkDto> {
    const r = await this.mustRow(id);
    requireQemu(r);
    await saveAdminNetwork(this.db, id, policy);
    await this.event(
      id,
      'network',
      null,
      null,
      policy ? `egress ${policy.egress}, ${policy.allow.length} allowed` : 'policy reset',
    );
    await applyNetwork(this.drivers.get(id), (await this.resolveNetwork(r)).policy, policy);
    return this.networkOf(id);
  }

  // ---- health -------------------------------------------------------------------------------

  private async markHealth(id: string, ok: boolean, error: string | null): Promise<void> {
    const h = this.health.get(id) ?? { failures: 0, lastSeenWrite: 0 };
    const now = this.app.clock.now().getTime();
    if (ok) {
      const wasFailing = h.failures > 0;
      h.failures = 0;
      // last_seen_at is written at most every 30 s while healthy: 200 boards must not mean 40 writes a second.
      if (wasFailing || now - h.lastSeenWrite > 30_000) {
        h.lastSeenWrite = now;
        await this.db.query(
          'update boards set last_seen_at = $2, consecutive_failures = 0, last_error = null where id = $1',
          [id, new Date(now)],
        );
      }
    } else {
      h.failures++;
      await this.db.query('update boards set consecutive_failures = $2, last_error = $3 where id = $1', [
        id,
        h.failures,
        error,
      ]);
    }
    this.health.set(id, h);
  }

  /** One probe of one board; state follows: offline after repeated failures, back when it answers. */
  async probeOne(r: BoardRow): Promise<void> {
    const d = this.drivers.get(r.id);
    if (!d || BUSY_STATES.has(r.state)) return;
    try {
      await d.probe(3000);
      await this.markHealth(r.id, true, null);
      if (r.state === BoardState.offline) {
        const [last] = await this.db.query<{ from_state: string | null }>(
          `select from_state from board_events where board_id = $1 and kind = 'state' and to_state = 'offline' order by id desc limit 1`,
          [r.id],
        );
        const back = (last?.from_state as BoardState | null) ?? BoardState.idle;
        await this.transition(
          r.id,
          [BoardState.offline],
          back === BoardState.offline || BUSY_STATES.has(back) ? BoardState.idle : back,
          'answers again',
        );
      }
    } catch (err) {
      const key =
        err instanceof DriverError ? err.key : err instanceof AppError ? err.key : BoardErrorKey.driverFailed;
      await this.markHealth(r.id, false, key);
      const failures = this.health.get(r.id)?.failures ?? 0;
      if (
        failures >= OFFLINE_AFTER_FAILURES &&
        r.state !== BoardState.offline &&
        r.state !== BoardState.maintenance
      ) {
        await this.transition(r.id, [r.state], BoardState.offline, `${failures} failed probes: ${key}`);
      }
    }
  }

  /** One probe round over every board in service, a few at a time. */
  async probeAll(): Promise<void> {
    if (this.probing || this.stopped) return;
    this.probing = true;
    try {
      await eachLimited(await this.rows(), 8, (r) => this.probeOne(r));
    } catch (err) {
      this.app.log.warn({ err }, 'board probe round failed');
    } finally {
      this.probing = false;
    }
  }

  // ---- metrics ------------------------------------------------------------------------------

  /** One sampling round: a sample of every online board, stored in one insert. Answers the count. */
  async sampleAll(): Promise<number> {
    if (this.sampling || this.stopped) return 0;
    this.sampling = true;
    try {
      const rows = (await this.rows()).filter(
        (r) => r.state !== BoardState.offline && !BUSY_STATES.has(r.state),
      );
      const samples: Array<[string, MetricsSample]> = [];
      await eachLimited(rows, 16, async (r) => {
        const d = this.drivers.get(r.id);
        if (!d?.capabilities().has(Capability.metrics)) return;
        samples.push([r.id, await d.sampleMetrics()]);
      });
      await this.storeSamples(samples);
      return samples.length;
    } catch (err) {
      this.app.log.warn({ err }, 'metrics round failed');
      return 0;
    } finally {
      this.sampling = false;
    }
  }

  storeSamples(samples: Array<[string, MetricsSample]>): Promise<void> {
    return insertSamples(this.db, samples);
  }

  /** Samples of a board from `sinceMs` (epoch ms) on, oldest first. */
  recentMetrics(boardId: string, sinceMs: number): Promise<MetricsSample[]> {
    return readMetricsSince(this.db, boardId, sinceMs);
  }

  /** Deletes samples older than the retention (at least 24 h). Answers the number deleted. */
  pruneMetrics(): Promise<number> {
    const keepMs = Math.max(24, this.app.config.BIANBU_METRICS_RETENTION_HOURS) * 3_600_000;
    return deleteSamplesBefore(this.db, new Date(this.app.clock.now().getTime() - keepMs));
  }
}
