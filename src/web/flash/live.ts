// Live flash progress. The service sends the job's user `flash.progress` notifications (data: a
// FlashEvent) as the job moves, and one `flash.succeeded|failed|cancelled` when it ends; progress
// notifications are never toasts (devices/live.ts toasts only lease.* kinds), the end is announced once
// by the store. While the realtime socket is down, jobs that have not ended are polled every second
// (fetch-flash-job per board, fetch-multi-flash-job per multi-flash); after a reconnect, and every few
// seconds even while connected, they are read once more, so a missed event never freezes a bar.
import { subscribe } from 'valtio';
import { flashEvent } from '#shared/flash.ts';
import { Destinations, userNotification } from '#shared/realtime.ts';
import { type RealtimeMessage, realtime, realtimeState } from '#web/realtime/client.ts';
import { activeWork, applyEvent, flash, refreshJob, refreshMulti } from './state.ts';

/** Poll period while the socket is down. */
export const POLL_MS = 1_000;
/** Safety re-read period while the socket is up (events are the main path). */
export const RESYNC_MS = 10_000;

/** True for the notification kinds of this feature. */
export function isFlashKind(kind: string): boolean {
  return kind.startsWith('flash.');
}

function json(m: RealtimeMessage): unknown {
  try {
    return JSON.parse(m.body);
  } catch {
    return null;
  }
}

/** Handles one user notification; answers whether it was a flash one. */
export function onNotification(body: unknown): boolean {
  const n = userNotification.safeParse(body);
  if (!n.success || !isFlashKind(n.data.kind)) return false;
  const ev = flashEvent.safeParse(n.data.data);
  if (ev.success) applyEvent(ev.data);
  return true;
}

let handle: { unsubscribe(): void } | null = null;
let timer: ReturnType<typeof setInterval> | null = null;
let lastResync = 0;
let lastGeneration = -1;
let inFlight = false;

async function pollOnce(force: boolean): Promise<void> {
  if (inFlight) return;
  const work = activeWork();
  if (work.devices.length === 0 && work.multis.length === 0) return;
  const down = realtimeState.status !== 'connected';
  const reconnected = realtimeState.generation !== lastGeneration;
  const now = Date.now();
  if (!force && !down && !reconnected && now - lastResync < RESYNC_MS) return;
  lastGeneration = realtimeState.generation;
  lastResync = now;
  inFlight = true;
  try {
    await Promise.allSettled([
      ...work.devices.map((d) => refreshJob(d)),
      ...work.multis.map((m) => refreshMulti(m)),
    ]);
  } finally {
    inFlight = false;
  }
}

function ensureTimer(): void {
  const work = activeWork();
  const busy = work.devices.length > 0 || work.multis.length > 0;
  if (busy && !timer) timer = setInterval(() => void pollOnce(false), POLL_MS);
  if (!busy && timer) {
    clearInterval(timer);
    timer = null;
  }
}

/** Once per tab after sign-in: the notification subscription and the polling fallback. */
export function watchFlash(): void {
  if (handle) return;
  handle = realtime.subscribe(Destinations.userNotifications, (m) => {
    onNotification(json(m));
  });
  lastGeneration = realtimeState.generation;
  // The whole store, not flash.jobs: a reset replaces those objects, and a subscription to the old
  // ones would never fire again.
  subscribe(flash, ensureTimer);
  ensureTimer();
}
