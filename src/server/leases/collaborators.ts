// The lifecycle's collaborators that other features provide: the board lab (drivers, state, metrics),
// the realtime shells (closed when an apply or lease ends) and the user notification bus. Each is an
// optional decoration, looked up when needed, so leases work (and are tested) before the others land
// and whichever lands first decides nothing for the rest.
import type { EventEmitter } from 'node:events';
import type { FastifyInstance } from 'fastify';
import type { BoardDriver, MetricsSample } from '#server/boards/driver.ts';

/** What leases need of the board lab (`app.boards`). */
export interface LabPort {
  driver(boardId: string): BoardDriver;
  setState(boardId: string, state: string, reason: string): Promise<unknown>;
  /** Restores the board's default image; the board boots again. */
  resetToDefault(boardId: string): Promise<unknown>;
  recentMetrics(boardId: string, sinceMs: number): Promise<MetricsSample[]>;
  /** Board state changes ('state', BoardChange), whoever makes them; the realtime channel listens. */
  events?: EventEmitter;
}

/** One board state change, as the lab emits it on `events` ('state'). */
export interface BoardChange {
  boardId: string;
  from: string | null;
  to: string;
  reason: string;
  at: string;
}

/** What leases need of the realtime shells (`app.shells`). */
export interface ShellCloser {
  closeForApply?(applyId: string, reason: string): unknown;
  closeForBoard?(deviceId: string, reason: string): unknown;
}

/** A notification for one user (the realtime channel's `/user/queue/notifications` body). */
export interface LeaseNotification {
  id: string;
  kind: string;
  at: string;
  level: 'info' | 'success' | 'warning' | 'error';
  data: Record<string, unknown>;
}

/** `app.notify(userId, notification)`: delivers to the user's connections on any instance. */
export type Notifier = (userId: string, n: LeaseNotification) => unknown;

interface Optional {
  boards?: LabPort;
  shells?: ShellCloser;
  notify?: Notifier;
  realtime?: { publishToUser?(userId: string, n: LeaseNotification): unknown };
}

export function labOf(app: FastifyInstance): LabPort | null {
  return (app as unknown as Optional).boards ?? null;
}

/** Shell closing is best effort: a failure there must not undo an ended lease. */
export async function closeShells(
  app: FastifyInstance,
  target: { applyIds?: string[]; deviceId?: string },
  reason: string,
): Promise<void> {
  const shells = (app as unknown as Optional).shells;
  if (!shells) return;
  try {
    for (const id of target.applyIds ?? []) await shells.closeForApply?.(id, reason);
    if (target.deviceId) await shells.closeForBoard?.(target.deviceId, reason);
  } catch (err) {
    app.log.warn({ err, ...target, reason }, 'closing shells failed');
  }
}

/** Board state changes made here go out on the lab's stream, like the lab's own. */
export function emitBoardChanges(app: FastifyInstance, changes: readonly BoardChange[]): void {
  const events = labOf(app)?.events;
  if (!events) return;
  for (const c of changes) {
    try {
      events.emit('state', c);
    } catch (err) {
      app.log.warn({ err, change: c }, 'a board state listener failed');
    }
  }
}

/** Through `app.notify` when a feature provides one, else the realtime hub's per-user queue. */
export async function notifyUser(app: FastifyInstance, userId: string, n: LeaseNotification): Promise<void> {
  const { notify, realtime } = app as unknown as Optional;
  const send: Notifier | undefined = notify ?? (realtime?.publishToUser ? (u, x) => realtime.publishToUser?.(u, x) : undefined);
  if (!send) return;
  try {
    await send(userId, n);
  } catch (err) {
    app.log.warn({ err, userId, kind: n.kind }, 'notifying a user failed');
  }
}
