// Device lifecycle: leases ("request"), applies (a working session on a held board), board actions,
// load series and history (spec sections 3, 4, 7, 9).
//
// How the console uses these calls:
//   - /riscvhouse: `requestDevice {requestDate, filterReq, serverName}` where requestDate is now plus
//     one of LEASE_DURATIONS (ISO 8601). When no matching board is free the call fails with the key
//     `lease.none_free` and `data: {nextFreeAt, matching}` (nextFreeAt: ISO time the next matching
//     board's lease ends, null when unknown).
//   - /mainboard: `fetchRequestDevice` lists the caller's live leases with time left (computed against
//     the server's `now`, answered beside the items, so a skewed browser clock does not matter).
//   - "Start": `applyDevice {deviceId}` answers `{applyId, deviceDto}`; the console keeps it in the
//     applyInfo cookie and sends it as the `ApplyAccess` header. Calls marked needsApply check that the
//     apply is the caller's, still open, and that its lease is live; otherwise they fail with
//     `apply.not_found` / `apply.closed` / `apply.lease_ended` (404, nothing changed).
//   - Load panes: the four `recent-*-loading` calls answer uPlot-ready series: `timestamps` in Unix
//     seconds and one `values` array per series, aligned with them (null where no value).
//   - Lease warnings arrive over the realtime channel as user notifications (kind `lease.expiring`
//     with data.remaining `24h` or `1h`, then `lease.expired`; data has leaseId, deviceId, serverName,
//     endsAt); the same facts are in the lease DTO (`warned24h`, `warned1h`, `remainingMs`) for the
//     console to show without the channel.
import { z } from 'zod';
import { attributeFilters, boardDto, boardState } from './boards.ts';
import { LEASE_DURATIONS, RECENT_APPLIES_LIMIT } from './constants.ts';
import { defineCall } from './http.ts';
import { entityId, idString } from './ids.ts';

/** Stable error keys of this feature (worded by locales/<lng>/leases.json under `errors`). */
export const LeaseErrorKey = {
  /** No free board matches; data: {nextFreeAt: string | null, matching: number}. */
  noneFree: 'lease.none_free',
  /** No board in service matches the filters at all. */
  noMatch: 'lease.no_match',
  /** requestDate is not now plus an offered duration; data: {offered: [{key, endsAt}]}. */
  durationNotOffered: 'lease.duration_not_offered',
  /** The caller already uses this serverName for a live lease. */
  nameTaken: 'lease.name_taken',
  /** No live lease of the caller on this board (also the answer for someone else's board). */
  notFound: 'lease.not_found',
  renewalNotLater: 'lease.renewal_not_later',
  /** data: {latest: string} — the latest end a renewal may ask for now. */
  renewalTooLong: 'lease.renewal_too_long',
  /** The call needs an applyId (payload `applyId` or header ApplyAccess) and none came. */
  applyMissing: 'apply.missing',
  /** Unknown applyId, or someone else's. */
  applyNotFound: 'apply.not_found',
  applyClosed: 'apply.closed',
  applyLeaseEnded: 'apply.lease_ended',
  /** The caller neither holds this board nor has it shared: answered like "not found". */
  notHeld: 'device.not_held',
  /** A power reset or a cleanup is already running on the board. */
  busy: 'board.busy',
} as const;
export type LeaseErrorKey = (typeof LeaseErrorKey)[keyof typeof LeaseErrorKey];

export const LeaseState = { live: 'live', released: 'released', expired: 'expired' } as const;
export type LeaseState = (typeof LeaseState)[keyof typeof LeaseState];
export const leaseState = z.enum(['live', 'released', 'expired']);

export const LEASE_DURATION_KEYS = LEASE_DURATIONS.map((d) => d.key) as [
  (typeof LEASE_DURATIONS)[number]['key'],
  ...(typeof LEASE_DURATIONS)[number]['key'][],
];
export const leaseDurationKey = z.enum(LEASE_DURATION_KEYS);

/** User notifications this feature publishes (realtime channel, type field). */
export const LeaseNotice = {
  /** data.remaining `24h` or `1h` (data.count 24 or 1, for plurals). */
  expiring: 'lease.expiring',
  expired: 'lease.expired',
  released: 'lease.released',
} as const;

const isoDate = z.iso.datetime({ offset: true, local: false });
const deviceId = entityId;
const applyId = entityId;

/** The user's name for a held board: trimmed, 1–64 characters, no control characters. */
export const serverName = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[^\u0000-\u001f\u007f]+$/u, 'no control characters');

/** Accepts the filters as an object, or as a JSON text (older consoles send it that way). */
export const filterReq = z.preprocess((v) => {
  if (typeof v !== 'string') return v ?? {};
  if (v.trim() === '') return {};
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}, attributeFilters);

export const leaseDto = z.object({
  leaseId: z.string(),
  deviceId: z.string(),
  serverName: z.string(),
  boardName: z.string(),
  model: z.string(),
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  boardState: boardState,
  state: leaseState,
  durationKey: leaseDurationKey,
  startedAt: z.string(),
  endsAt: z.string(),
  /** Milliseconds left at the server's now (0 once ended). */
  remainingMs: z.number(),
  renewals: z.number().int(),
  warned24h: z.boolean(),
  warned1h: z.boolean(),
  /** The caller's open apply on this board, so "Start" can reuse it; null when none. */
  applyId: z.string().nullable(),
});
export type LeaseDto = z.infer<typeof leaseDto>;

export const leaseSimpleDto = z.object({ deviceId: z.string(), serverName: z.string(), endsAt: z.string() });

/** The board an apply works on, as apply-device answers it. */
export const appliedDeviceDto = boardDto.extend({
  serverName: z.string(),
  leaseId: z.string(),
  endsAt: z.string(),
});
export type AppliedDeviceDto = z.infer<typeof appliedDeviceDto>;

export const applyHistoryItem = z.object({
  applyId: z.string(),
  deviceId: z.string(),
  serverName: z.string(),
  boardName: z.string(),
  openedAt: z.string(),
  closedAt: z.string().nullable(),
  /** `unapplied`, `released`, `expired`, or null while open. */
  closeReason: z.string().nullable(),
  open: z.boolean(),
});
export type ApplyHistoryItem = z.infer<typeof applyHistoryItem>;

export const leaseHistoryItem = z.object({
  leaseId: z.string(),
  serverName: z.string(),
  state: leaseState,
  startedAt: z.string(),
  endsAt: z.string(),
  endedAt: z.string().nullable(),
});

export const LoadUnit = { percent: 'percent', bytes: 'bytes', bytesPerSecond: 'bytesPerSecond' } as const;

/** One load graph, ready for uPlot: `[timestamps, ...series.map(s => s.values)]`. */
export const loadSeries = z.object({
  deviceId: z.string(),
  unit: z.enum(['percent', 'bytes', 'bytesPerSecond']),
  /** Unix seconds (uPlot's default time scale). */
  timestamps: z.array(z.number()),
  series: z.array(z.object({ key: z.string(), values: z.array(z.number().nullable()) })),
  /** Capacity the values are measured against (memory or disk total, bytes) when it applies. */
  total: z.number().nullable(),
});
export type LoadSeries = z.infer<typeof loadSeries>;

const loadRequest = z.object({
  deviceId,
  serverName: z.string().max(64).optional(),
  /** How far back, in seconds (default 15 minutes, at most 24 hours). */
  windowSeconds: z.coerce.number().int().min(10).max(86_400).default(900),
});

const paging = {
  page: z.coerce.number().int().min(1).default(1),
  pageSize: z.coerce.number().int().min(1).max(100).default(20),
};

export const leaseCalls = [
  defineCall({
    name: 'fetchRequestDevice',
    method: 'GET',
    path: '/api/device/fetch-request-device',
    response: z.object({ now: z.string(), items: z.array(leaseDto) }),
    summary: 'The caller’s live leases with board, state and time left, soonest end first',
  }),
  defineCall({
    name: 'fetchRequestDeviceSimple',
    method: 'GET',
    path: '/api/device/fetch-request-device-simple',
    response: z.array(leaseSimpleDto),
    summary: 'The caller’s live leases, just deviceId, serverName and end',
  }),
  defineCall({
    name: 'requestDevice',
    method: 'POST',
    path: '/api/device/request-device',
    request: z.object({ requestDate: isoDate, filterReq: filterReq, serverName }),
    response: leaseDto,
    summary:
      'Lease a free board matching filterReq until requestDate (now plus an offered duration); lease.none_free names when the next one frees',
  }),
  defineCall({
    name: 'unlockRequestDevice',
    method: 'POST',
    path: '/api/device/unlock-request-device',
    request: z.object({ deviceId, serverName }),
    response: z.object({ deviceId: z.string(), serverName: z.string(), endedAt: z.string() }),
    summary: 'Release a held board: its applies and shells close, it is reset to default and returns to the pool',
  }),
  defineCall({
    name: 'renameRequestDevice',
    method: 'POST',
    path: '/api/device/rename-request-device',
    request: z.object({ deviceId, oldServerName: serverName, newServerName: serverName }),
    response: leaseDto,
    summary: 'Rename a held board (names are unique among the caller’s live leases)',
  }),
  defineCall({
    name: 'renewalDevice',
    method: 'POST',
    path: '/api/device/renewal-device',
    request: z.object({ serverName, deviceId, renewalDate: isoDate }),
    response: leaseDto,
    summary: 'Move a lease’s end later, at most the longest offered duration from now',
  }),
  defineCall({
    name: 'applyDevice',
    method: 'POST',
    path: '/api/device/apply-device',
    request: z.object({ deviceId }),
    response: z.object({ applyId: z.string(), deviceDto: appliedDeviceDto }),
    summary: 'Start working on a held board: answers the applyId (the open one if the caller has one there)',
  }),
  defineCall({
    name: 'checkApplyId',
    method: 'POST',
    path: '/api/device/check-apply-id',
    request: z.object({ applyId }),
    response: z.object({
      valid: z.boolean(),
      /** Why not valid: apply.not_found, apply.closed or apply.lease_ended; null when valid. */
      reason: z.string().nullable(),
      applyId: z.string(),
      deviceId: z.string().nullable(),
      serverName: z.string().nullable(),
      endsAt: z.string().nullable(),
    }),
    summary: 'Whether an applyId is the caller’s, open and on a live lease',
  }),
  defineCall({
    name: 'unapplyDevice',
    method: 'POST',
    path: '/api/device/unapply-device',
    request: z.object({ applyId }),
    response: z.object({ applyId: z.string(), closedAt: z.string() }),
    summary: 'End a working session: its shells close; the lease stays',
  }),
  defineCall({
    name: 'powerReset',
    method: 'POST',
    path: '/api/device/power-reset',
    request: z.object({ applyId: applyId.optional() }),
    response: z.object({ deviceId: z.string(), state: boardState }),
    needsApply: true,
    timeoutMs: 60_000,
    summary: 'Power-cycle the board of the apply; answers once it is back',
  }),
  defineCall({
    name: 'callPlugin',
    method: 'POST',
    path: '/api/device/call-plugin',
    request: z.object({
      applyId: applyId.optional(),
      topic: z.string().min(1).max(128),
      /** Text, or any JSON value (sent to the plugin as JSON text). */
      data: z.union([z.string().max(65_536), z.json()]).optional(),
      nodeId: z.union([z.literal(''), idString({ max: 128 }), z.number()]).optional(),
    }),
    response: z.object({ topic: z.string(), result: z.string() }),
    needsApply: true,
    // A plugin may take a while on a riscv64 board (the service allows it twice the board's timeout).
    timeoutMs: 120_000,
    summary: 'Call a plugin on the board of the apply (topic, data, nodeId); answers its output',
  }),
  defineCall({
    name: 'recentCpuLoading',
    method: 'GET',
    path: '/api/device/recent-cpu-loading',
    request: loadRequest,
    response: loadSeries,
    summary: 'CPU use of a held board in percent over the recent window',
  }),
  defineCall({
    name: 'recentMemLoading',
    method: 'GET',
    path: '/api/device/recent-mem-loading',
    request: loadRequest,
    response: loadSeries,
    summary: 'Memory use of a held board in percent (total in bytes) over the recent window',
  }),
  defineCall({
    name: 'recentDiskLoading',
    method: 'GET',
    path: '/api/device/recent-disk-loading',
    request: loadRequest,
    response: loadSeries,
    summary: 'Disk bytes used on a held board (total in bytes) over the recent window',
  }),
  defineCall({
    name: 'recentNetLoading',
    method: 'GET',
    path: '/api/device/recent-net-loading',
    request: loadRequest,
    response: loadSeries,
    summary: 'Network receive and transmit rate of a held board in bytes per second',
  }),
  defineCall({
    name: 'applyHistory',
    method: 'GET',
    path: '/api/device/apply-history',
    request: z.object(paging),
    response: z.object({ total: z.number().int(), items: z.array(applyHistoryItem) }),
    summary: 'The caller’s applies, newest first, one page at a time',
  }),
  defineCall({
    name: 'workHistory',
    method: 'POST',
    path: '/api/device/work-history',
    request: z.object({ deviceId }),
    response: z.object({
      deviceId: z.string(),
      leases: z.array(leaseHistoryItem),
      applies: z.array(applyHistoryItem),
    }),
    summary: 'The caller’s own leases and applies on one board (latest 100 of each)',
  }),
  defineCall({
    name: 'recentApplies',
    method: 'GET',
    path: '/api/device/recent-applies',
    request: z.object({ limit: z.coerce.number().int().min(1).max(RECENT_APPLIES_LIMIT).default(RECENT_APPLIES_LIMIT) }),
    response: z.array(applyHistoryItem),
    summary: 'The caller’s most recent applies (at most 10)',
  }),
] as const;
