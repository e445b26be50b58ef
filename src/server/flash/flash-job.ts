// A flash job's record and the rules it lives by: its row as stored, what this instance holds of a
// running one, where each stage sits in the overall percent, how a failure is recorded, and the job as
// the API answers it. flash.service.ts runs the jobs.
import type { FlashProgress } from '#server/boards/driver.ts';
import { DriverError } from '#server/boards/driver.ts';
import { AppError } from '#server/errors.ts';
import { FlashErrorKey, type FlashJobDto, type FlashStage } from '#shared/flash.ts';
import type { ImageRow } from './images.ts';

export interface JobRow {
  id: string;
  multi_id: string | null;
  board_id: string;
  server_name: string;
  user_id: string;
  user_name: string;
  image_tag: string;
  image_name: string;
  state: FlashJobDto['state'];
  stage: FlashStage;
  percent: number;
  bytes_done: string | number;
  bytes_total: string | number;
  speed_bps: string | number;
  error_key: string | null;
  error_message: string | null;
  log: string[];
  created_at: Date | string;
  started_at: Date | string | null;
  ended_at: Date | string | null;
}

/** A job this instance holds: queued or running. */
export interface LiveJob {
  row: JobRow;
  image: ImageRow;
  abort: AbortController;
  /** Why the abort was asked: cancelled, lease ended, service stopping. */
  abortKey: string | null;
  /** Past the transfer: writing has started and cancel is refused. */
  writing: boolean;
  newLog: string[];
  stageBegan: number;
  lastEmit: number;
  lastPersist: number;
  lastPercent: number;
}

/** Where each stage sits in the job's overall percent. */
export const STAGE_SPAN: Record<FlashStage, [number, number]> = {
  queued: [0, 0],
  transfer: [0, 10],
  write: [10, 75],
  verify: [75, 90],
  boot: [90, 100],
  done: [100, 100],
};

export const PHASE_STAGE: Record<FlashProgress['phase'], FlashStage | null> = {
  preparing: null,
  writing: 'write',
  verifying: 'verify',
  booting: 'boot',
  done: null,
};

const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());
export const PERSIST_MS = 1000;
export const JOB_SELECT = `select j.*, coalesce(nullif(u.display_name, ''), u.username) as user_name
  from flash_jobs j join users u on u.id = j.user_id`;

/** A failure as the job records it: a stable key and a message. */
export function failureOf(err: unknown): { key: string; message: string } {
  if (err instanceof AppError) return { key: err.key, message: err.message };
  if (err instanceof DriverError) {
    // The board's host went away under the flash (src/server/hosts/link.ts): interrupted, like a
    // flash whose service died.
    if ((err as { linkLost?: boolean }).linkLost)
      return { key: FlashErrorKey.interrupted, message: `The board host went away during the flash: ${err.message}` };
    const key =
      err.key === 'path.no_space'
        ? FlashErrorKey.noSpace
        : err.key === 'driver.command_failed'
          ? FlashErrorKey.toolFailed
          : err.key;
    return { key, message: err.message };
  }
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC') return { key: FlashErrorKey.noSpace, message: (err as Error).message };
  return { key: 'driver.failed', message: (err as Error)?.message ?? String(err) };
}

/** A job as the API answers it (live: the job runs on this instance). */
export function jobDto(r: JobRow, live?: LiveJob): FlashJobDto {
  const started = r.started_at ? new Date(r.started_at).getTime() : null;
  const ended = r.ended_at ? new Date(r.ended_at).getTime() : null;
  const done = Number(r.bytes_done);
  const total = Number(r.bytes_total);
  const speed = Number(r.speed_bps);
  const running = r.state === 'RUNNING';
  return {
    jobId: r.id,
    multiId: r.multi_id,
    deviceId: r.board_id,
    serverName: r.server_name,
    imageTag: r.image_tag,
    imageName: r.image_name,
    userId: r.user_id,
    userName: r.user_name,
    state: r.state,
    stage: r.stage,
    percent: Math.round(r.percent * 10) / 10,
    bytesDone: done,
    bytesTotal: total,
    speedBps: running ? speed : 0,
    etaSeconds: running && speed > 0 && total > done ? Math.ceil((total - done) / speed) : null,
    createdAt: iso(r.created_at)!,
    startedAt: iso(r.started_at),
    endedAt: iso(r.ended_at),
    durationMs: started === null ? null : (ended ?? (live ? Date.now() : started)) - started,
    errorKey: r.error_key,
    errorMessage: r.error_message,
  };
}
