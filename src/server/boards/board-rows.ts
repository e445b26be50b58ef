// A board as storage holds it, as users and administrators see it, and small pieces the lab and the
// features that call drivers share (src/server/boards/lab.ts).
import { AppError, badRequest, conflict, notFound } from '#server/errors.ts';
import {
  type BoardDto,
  BoardState,
  type DriverKind,
  localDriverOptions,
  qemuDriverOptions,
  sshDriverOptions,
} from '#shared/boards.ts';
import { ResultCode } from '#shared/codes.ts';
import { DriverError } from './driver.ts';

/** A board as declared (a storage row or a lab file's entry): what makes its driver. */
export interface DeclaredBoard {
  id: string;
  name: string;
  model: string;
  attributes: Record<string, string | number | boolean>;
  driver: DriverKind;
  driver_options: Record<string, unknown>;
}

export interface BoardRow extends DeclaredBoard {
  source: 'default' | 'lab' | 'admin' | 'host';
  state: BoardState;
  state_reason: string | null;
  state_changed_at: Date | string;
  retired_at: Date | string | null;
  last_seen_at: Date | string | null;
  consecutive_failures: number;
  last_error: string | null;
  /** The board host that runs it (null: this service, in-process). */
  host_id?: string | null;
}

export interface StateChange {
  boardId: string;
  from: BoardState | null;
  to: BoardState;
  reason: string;
  at: string;
}

/** Failures in a row after which a board is marked offline. */
export const OFFLINE_AFTER_FAILURES = 3;
export const SECRET_KEYS = new Set(['password', 'privateKey', 'passphrase']);
/** States in which the driver is busy with the board; probes and samples leave it alone. */
export const BUSY_STATES: ReadonlySet<string> = new Set([BoardState.flashing, BoardState.resetting]);

export const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

export function toBoardDto(r: BoardRow): BoardDto {
  return {
    deviceId: r.id,
    name: r.name,
    model: r.model,
    attributes: r.attributes ?? {},
    state: r.state,
    driver: r.driver,
  };
}

export function redactOptions(options: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(options ?? {}).map(([k, v]) => [k, SECRET_KEYS.has(k) ? v != null && v !== '' : v]),
  );
}

/** Runs `fn` over `items` with at most `limit` at a time. */
export async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await fn(item).catch(() => {});
    }
  });
  await Promise.all(workers);
}

/** A driver failure as the envelope's error, for features that call drivers. */
export function driverAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof DriverError) {
    const k = err.key;
    if (k === 'capability.unsupported')
      return new AppError(501, ResultCode.NotImplementedByDriver, k, err.message);
    if (k === 'path.not_found') return notFound(err.message, k);
    if (
      k.startsWith('path.') ||
      k.startsWith('file.') ||
      k.startsWith('plugin.') ||
      k === 'flash.image_invalid'
    )
      return badRequest(err.message, k);
    if (k === 'board.busy') return conflict(err.message, k);
    return new AppError(503, ResultCode.Unavailable, k, err.message);
  }
  return new AppError(500, ResultCode.ServerError, 'server.error', (err as Error)?.message ?? 'error');
}

/**
 * New driver options for a board, checked by its driver's schema: secrets left out (or answered as
 * `true` by the list call) are kept from the old ones.
 */
export function mergeOptions(r: BoardRow, patch: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...patch };
  for (const k of SECRET_KEYS)
    if ((merged[k] === undefined || merged[k] === true) && r.driver_options[k] !== undefined)
      merged[k] = r.driver_options[k];
  const schema =
    r.driver === 'local' ? localDriverOptions : r.driver === 'qemu' ? qemuDriverOptions : sshDriverOptions;
  const parsed = schema.safeParse(merged);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw badRequest(`Invalid options.${i.path.join('.')}: ${i.message}`, 'request.invalid', [
      { path: `options.${i.path.join('.')}`, message: i.message },
    ]);
  }
  return parsed.data as Record<string, unknown>;
}
