// Board snapshots (src/shared/snapshots.ts; docs/riscv-snapshots.md). The driver owns the disk
// (snapshot-disk.ts for QEMU boards); this service checks who may, what it costs and the board's
// state, and records who saved what on which lease. Quota rule: while a board holds snapshots, the
// allocated bytes of its overlay count against its holder's private-image quota (the flash images'
// BIANBU_FLASH_USER_QUOTA_MB), measured at every snapshot call (list, save, restore, delete); a save
// is refused when the holder's images and snapshot charges already exceed the quota. A restore runs
// as a power reset does (board state `resetting`, login shells closed first), so flashes, resets
// and lease cleanups wait for it.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { AuthUser } from '#server/auth/user-context.ts';
import { type BoardSnapshots, Capability, DriverError } from '#server/boards/driver.ts';
import { AppError, conflict, notFound } from '#server/errors.ts';
import type { ResolvedApply } from '#server/http/handlers.ts';
import { closeShells } from '#server/leases/collaborators.ts';
import { ResultCode } from '#shared/codes.ts';
import { FlashErrorKey } from '#shared/flash.ts';
import { LeaseErrorKey } from '#shared/leases.ts';
import { SNAPSHOT_LIMITS, type SnapshotDto, SnapshotErrorKey } from '#shared/snapshots.ts';

interface SnapshotRow {
  name: string;
  created_by: string | null;
  created_at: Date | string;
}

/** A driver's failure as the contract words it. */
export function snapshotFailure(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof DriverError) {
    if (err.key === 'capability.unsupported')
      return new AppError(501, ResultCode.NotImplementedByDriver, err.key, err.message);
    if (err.key === SnapshotErrorKey.notFound) return notFound(err.message, err.key);
    if (err.key === SnapshotErrorKey.nameTaken) return conflict(err.message, err.key);
    if (['board.offline', 'board.not_running', 'driver.timeout'].includes(err.key))
      return new AppError(503, ResultCode.Unavailable, err.key, err.message);
    return new AppError(500, ResultCode.ServerError, err.key, err.message);
  }
  return new AppError(500, ResultCode.ServerError, SnapshotErrorKey.failed, 'The snapshot operation failed');
}

/** Compresses `raw` into `out` (zstd), ending at once on `signal`. */
function zstd(raw: string, out: string, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('/usr/bin/zstd', ['-q', '-3', '-T0', '-f', '-o', out, raw], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d.slice(0, 2000);
    });
    const onAbort = () => p.kill('SIGKILL');
    signal.addEventListener('abort', onAbort, { once: true });
    p.once('error', reject);
    p.once('close', (code) => {
      signal.removeEventListener('abort', onAbort);
      if (code === 0) resolve();
      else reject(new Error(`zstd failed (${code}): ${err.trim()}`));
    });
  });
}

export class SnapshotService {
  constructor(private readonly app: FastifyInstance) {}

  private get db() {
    return this.app.storage;
  }

  private snapshotsOf(deviceId: string): BoardSnapshots {
    const d = this.app.boards.driver(deviceId);
    if (!d.snapshots || !d.capabilities().has(Capability.snapshot))
      throw new AppError(
        501,
        ResultCode.NotImplementedByDriver,
        'capability.unsupported',
        "This board's driver keeps no snapshots (riscv64 QEMU boards do)",
      );
    return d.snapshots;
  }

  private async holderOf(leaseId: string): Promise<string> {
    const [r] = await this.db.query<{ user_id: string }>('select user_id from leases where id = $1', [
      leaseId,
    ]);
    if (!r) throw notFound('No such lease', LeaseErrorKey.notFound);
    return r.user_id;
  }

  /** Measures what the board's snapshots cost now and records it as the holder's charge. */
  private async charge(apply: ResolvedApply, snaps: BoardSnapshots): Promise<number> {
    const bytes = await snaps.chargedBytes();
    if (bytes <= 0) {
      await this.db.query('delete from board_snapshot_charges where board_id = $1', [apply.deviceId]);
      return 0;
    }
    const holder = await this.holderOf(apply.leaseId);
    await this.db.query(
      `insert into board_snapshot_charges (board_id, lease_id, user_id, bytes, updated_at) values ($1, $2, $3, $4, now())
       on conflict (board_id) do update set lease_id = excluded.lease_id, user_id = excluded.user_id,
         bytes = excluded.bytes, updated_at = now()`,
      [apply.deviceId, apply.leaseId, holder, bytes],
    );
    return bytes;
  }

  /** Only on a board its lease holds and nothing else runs on (no flash, reset or cleanup). */
  private async mustBeLeased(deviceId: string): Promise<void> {
    const [r] = await this.db.query<{ state: string }>('select state from boards where id = $1', [deviceId]);
    if (r?.state === 'leased') return;
    if (r?.state === 'offline')
      throw new AppError(503, ResultCode.Unavailable, 'board.offline', 'The board is offline');
    throw conflict(`The board is busy (${r?.state ?? 'unknown'})`, LeaseErrorKey.busy);
  }

  async list(apply: ResolvedApply) {
    const snaps = this.snapshotsOf(apply.deviceId);
    let have: { name: string; createdAt: Date }[];
    try {
      have = await snaps.list();
    } catch (err) {
      throw snapshotFailure(err);
    }
    const rows = await this.db.query<SnapshotRow>(
      'select name, created_by, created_at from board_snapshots where board_id = $1 and lease_id = $2',
      [apply.deviceId, apply.leaseId],
    );
    const byName = new Map(rows.map((r) => [r.name, r]));
    const items: SnapshotDto[] = have
      .map((s) => ({
        name: s.name,
        createdAt: new Date(byName.get(s.name)?.created_at ?? s.createdAt).toISOString(),
        createdBy: byName.get(s.name)?.created_by ?? null,
      }))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const chargedBytes = await this.charge(apply, snaps);
    const holder = await this.holderOf(apply.leaseId);
    return {
      deviceId: apply.deviceId,
      items,
      usage: {
        chargedBytes,
        usedBytes: await this.app.flash.images.usedBy(holder),
        limitBytes: this.app.flash.images.quotaBytes,
      },
    };
  }

  async save(apply: ResolvedApply, name: string): Promise<SnapshotDto> {
    const snaps = this.snapshotsOf(apply.deviceId);
    await this.mustBeLeased(apply.deviceId);
    const have = await snaps.list().catch((err) => {
      throw snapshotFailure(err);
    });
    if (have.some((s) => s.name === name))
      throw conflict(`The board has a snapshot named ${name}`, SnapshotErrorKey.nameTaken);
    if (have.length >= SNAPSHOT_LIMITS.perBoard)
      throw conflict(`A board keeps at most ${SNAPSHOT_LIMITS.perBoard} snapshots`, SnapshotErrorKey.tooMany);
    // The quota: the holder's images and snapshot charges, this board's measured now.
    await this.charge(apply, snaps);
    const holder = await this.holderOf(apply.leaseId);
    const used = await this.app.flash.images.usedBy(holder);
    const limit = this.app.flash.images.quotaBytes;
    const own = await snaps.chargedBytes();
    // A first snapshot starts charging the overlay as it is.
    const after = own > 0 ? used : used + (await snaps.diskBytes());
    if (after > limit)
      throw new AppError(
        413,
        ResultCode.BadRequest,
        FlashErrorKey.quotaExceeded,
        'The snapshot does not fit in the private-image quota of the board’s holder',
        undefined,
        undefined,
        { limitBytes: limit },
      );
    try {
      await snaps.save(name);
    } catch (err) {
      throw snapshotFailure(err);
    }
    // The epoch (flash) of the disk it belongs to: a later flash keeps it restorable.
    const epoch = (await snaps.list().catch(() => [])).find((s) => s.name === name)?.epoch ?? 0;
    const [row] = await this.db.query<SnapshotRow>(
      `insert into board_snapshots (board_id, name, lease_id, created_by, created_at, epoch) values ($1, $2, $3, $4, now(), $5)
       on conflict (board_id, name) do update set lease_id = excluded.lease_id, created_by = excluded.created_by,
         created_at = excluded.created_at, epoch = excluded.epoch
       returning name, created_by, created_at`,
      [apply.deviceId, name, apply.leaseId, apply.userId, epoch],
    );
    await this.charge(apply, snaps);
    return { name: row.name, createdAt: new Date(row.created_at).toISOString(), createdBy: row.created_by };
  }

  async restore(apply: ResolvedApply, name: string) {
    const snaps = this.snapshotsOf(apply.deviceId);
    const now = () => this.app.clock.now();
    const repo = this.app.leases.repo;
    const from = await repo.beginPowerReset(apply.deviceId, now());
    if (from === null) await this.mustBeLeased(apply.deviceId);
    let ok = false;
    // Login shells close with the reason before the machine goes down, so their panes say why.
    await closeShells(this.app, { deviceId: apply.deviceId }, 'board.reset');
    try {
      await snaps.restore(name);
      ok = true;
    } catch (err) {
      throw snapshotFailure(err);
    } finally {
      await repo.endPowerReset(apply.deviceId, ok, now());
    }
    await this.charge(apply, snaps);
    return { deviceId: apply.deviceId, name };
  }

  async remove(apply: ResolvedApply, name: string) {
    const snaps = this.snapshotsOf(apply.deviceId);
    try {
      await snaps.remove(name);
    } catch (err) {
      throw snapshotFailure(err);
    }
    await this.db.query('delete from board_snapshots where board_id = $1 and name = $2', [
      apply.deviceId,
      name,
    ]);
    await this.charge(apply, snaps);
    return { deviceId: apply.deviceId, name };
  }

  /**
   * The snapshot as the caller's private image (img.zst) in the flash catalogue: the raw disk is
   * written next to the image's temporary file in the uploads directory (so a killed service's
   * leftovers go with the uploads'), compressed, and registered within the caller's quota.
   */
  async exportImage(
    user: AuthUser,
    apply: ResolvedApply,
    input: { name: string; tag: string; imageName?: string },
  ) {
    const snaps = this.snapshotsOf(apply.deviceId);
    if (!(await snaps.list()).some((s) => s.name === input.name))
      throw notFound(`No snapshot named ${input.name}`, SnapshotErrorKey.notFound);
    const board = await this.app.boards.row(apply.deviceId);
    const row = await this.app.flash.images.produce(
      user,
      {
        tag: input.tag,
        name: input.imageName ?? `${board?.name ?? apply.deviceId} ${input.name}`,
        description: `Snapshot ${input.name} of board ${board?.name ?? apply.deviceId}`,
      },
      async (tmp, signal) => {
        const raw = `${tmp}.raw`;
        try {
          await snaps.exportRaw(input.name, raw);
          if (signal.aborted) throw new Error('aborted');
          await zstd(raw, tmp, signal);
        } catch (err) {
          throw snapshotFailure(err);
        } finally {
          await fs.promises.rm(raw, { force: true });
        }
      },
    );
    return { tag: row.tag, size: Number(row.size), sha256: row.sha256 };
  }
}
