// The waiting line for boards (issue 12): a lease request that matches no free board may wait in line
// instead of failing, and gets a board the moment one frees.
//
// How the console uses these calls:
//   - /riscvhouse: when `requestDevice` fails with `lease.none_free`, the console offers "wait in line"
//     (opt-in, never automatic). `joinQueue {filterReq, durationKey, serverName}` answers the entry:
//     `waiting` with its `position` and `estimateAt`, or already `granted` (with `lease`) when a
//     matching board freed meanwhile. The palette's "Join the queue" and the API do the same.
//   - /mainboard and the notification view: `fetchQueue` lists the caller's waiting entries (position,
//     estimate, expiry) and their latest ended ones (granted, cancelled, expired).
//   - `cancelQueue {entryId}` leaves the line. Someone else's entry, or an unknown id, is answered
//     `queue.not_found` (404), exactly like a missing one; an own entry that no longer waits answers
//     `queue.not_waiting` (409, data {state}).
//   - Live, over the realtime channel (/user/queue/notifications), to the entry's user:
//       `queue.granted`  (level success) data {entryId, leaseId, deviceId, serverName, boardName,
//                        durationKey, startedAt, endsAt}: the board is restored, leased to them, and
//                        the lease's time started at that moment.
//       `queue.position` (info, not a toast) data {entryId, position, estimateAt}: the position changed
//                        because someone ahead was served, cancelled or expired.
//       `queue.expired`  (warning) data {entryId, serverName, expiredAt}: the entry waited its longest.
//
// Rules:
//   - Order is first come, first served. A freed board goes to the oldest waiting entry whose filter
//     it matches; `position` counts the waiting entries with the same filter (compared after
//     normalising: key order, letter case and list order do not matter) that joined earlier, plus 1.
//   - One waiting entry per user per filter (`queue.already_waiting`, 409, data {entryId}); at most
//     QUEUE_MAX_WAITING_PER_USER waiting entries per user (`queue.too_many`); a serverName may not be
//     used by a live lease or another waiting entry of the user (`lease.name_taken`). Should the name
//     be taken by the time the board is granted (a lease renamed meanwhile), the lease gets the name
//     with `-<4 characters of the entry id>` appended.
//   - A filter that matches no board in service is refused (`lease.no_match`), as by requestDevice.
//   - Expiry: an entry waits at most BIANBU_QUEUE_MAX_WAIT_HOURS (default 24) hours from joining, then
//     it is `expired` (notified) and never granted. `expiresAt` is in every entry.
//   - Estimate (`estimateAt`): the end of the position-th soonest ending live lease among the boards in
//     service that match the filter (a board being restored after its lease counts as freeing now);
//     null when there are fewer such leases than the position. Holders may release early or renew, so
//     it is an estimate, never a promise.
//   - Several service instances on one PostgreSQL: a board freed after its restore is granted inside
//     the same transaction that makes it idle (so a direct request never sees it free first), the
//     waiting entry is claimed with a conditional UPDATE, and the scheduler's tick grants boards that
//     became free any other way (an operator, a probe) in queue order, claiming entries and boards
//     with FOR UPDATE SKIP LOCKED: each freed board goes to exactly one waiting entry, and each entry
//     gets at most one board.
import { z } from 'zod';
import { defineCall } from './http.ts';
import { entityId } from './ids.ts';
import { filterReq, leaseDto, leaseDurationKey, serverName } from './leases.ts';

/** Stable error keys of the queue (worded by locales/<lng>/queue.json under `errors`). */
export const QueueErrorKey = {
  /** Unknown entry, or someone else's. */
  notFound: 'queue.not_found',
  /** The entry is granted, cancelled or expired already; data {state}. */
  notWaiting: 'queue.not_waiting',
  /** The caller already waits with this filter; data {entryId}. */
  alreadyWaiting: 'queue.already_waiting',
  /** The caller already has QUEUE_MAX_WAITING_PER_USER waiting entries. */
  tooMany: 'queue.too_many',
} as const;
export type QueueErrorKey = (typeof QueueErrorKey)[keyof typeof QueueErrorKey];

/** User notifications of the queue (realtime channel, `kind`). */
export const QueueNotice = {
  granted: 'queue.granted',
  position: 'queue.position',
  expired: 'queue.expired',
} as const;

/** Waiting entries one user may have at once. */
export const QUEUE_MAX_WAITING_PER_USER = 5;
/** Default of BIANBU_QUEUE_MAX_WAIT_HOURS: how long an entry waits at most. */
export const QUEUE_DEFAULT_MAX_WAIT_HOURS = 24;

export const queueState = z.enum(['waiting', 'granted', 'cancelled', 'expired']);
export type QueueState = z.infer<typeof queueState>;

export const queueEntryDto = z.object({
  entryId: z.string(),
  state: queueState,
  serverName: z.string(),
  durationKey: leaseDurationKey,
  filterReq: z.record(z.string(), z.unknown()),
  joinedAt: z.string(),
  expiresAt: z.string(),
  /** 1 = next in line for this filter; null once the entry no longer waits. */
  position: z.number().int().nullable(),
  /** When a matching board is expected to free for this position (see the header); null when unknown. */
  estimateAt: z.string().nullable(),
  /** When it was granted, cancelled or expired. */
  endedAt: z.string().nullable(),
  /** The board granted (state `granted`). */
  deviceId: z.string().nullable(),
  leaseId: z.string().nullable(),
});
export type QueueEntryDto = z.infer<typeof queueEntryDto>;

export const queueCalls = [
  defineCall({
    name: 'joinQueue',
    method: 'POST',
    path: '/api/device/queue/join',
    request: z.object({ filterReq, durationKey: leaseDurationKey, serverName }),
    response: queueEntryDto.extend({ lease: leaseDto.nullable() }),
    summary:
      'Wait in line for a board matching filterReq (opt-in after lease.none_free); answers the position and estimate, or the lease when one was free',
  }),
  defineCall({
    name: 'fetchQueue',
    method: 'GET',
    path: '/api/device/queue/fetch',
    response: z.object({
      now: z.string(),
      /** The caller's waiting entries, oldest first. */
      items: z.array(queueEntryDto),
      /** The caller's latest entries that ended (at most 10), newest first. */
      recent: z.array(queueEntryDto),
    }),
    summary: 'The caller’s places in line with position, estimate and expiry, and their latest ended entries',
  }),
  defineCall({
    name: 'cancelQueue',
    method: 'POST',
    path: '/api/device/queue/cancel',
    request: z.object({ entryId: entityId }),
    response: queueEntryDto,
    summary: 'Leave the line (only one’s own waiting entry)',
  }),
] as const;
