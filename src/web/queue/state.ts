// The caller's places in the waiting line for boards (src/shared/queue.ts): the list (waiting entries
// with position, estimate and expiry, and the latest ended ones), join and cancel, and what the live
// notifications change. `queue.position` updates an entry in place (never a toast); `queue.granted`
// is a toast (the board is ready, the lease started) and reloads the leases; `queue.expired` too.
import { proxy } from 'valtio';
import type { LeaseDurationKey } from '#shared/constants.ts';
import type { ResponseOf } from '#shared/http.ts';
import { type QueueEntryDto, QueueNotice, queueCalls } from '#shared/queue.ts';
import type { UserNotification } from '#shared/realtime.ts';
import { call } from '#web/api/http.ts';
import { dataOf, filterPayload, idle, leases, loadLeases, type Req, track } from '#web/boards/store.ts';
import { dateTimeText } from '#web/boards/time.ts';
import { currentLanguage, t } from '#web/i18n/i18n.ts';
import { notify } from '#web/state/notices.ts';

const call_ = <N extends (typeof queueCalls)[number]['name']>(name: N) =>
  queueCalls.find((c) => c.name === name) as Extract<(typeof queueCalls)[number], { name: N }>;

export const QueueCalls = {
  joinQueue: call_('joinQueue'),
  fetchQueue: call_('fetchQueue'),
  cancelQueue: call_('cancelQueue'),
} as const;

export type QueueList = ResponseOf<typeof QueueCalls.fetchQueue>;
export type JoinAnswer = ResponseOf<typeof QueueCalls.joinQueue>;

export const queue = proxy({
  list: idle<QueueList>() as Req<QueueList>,
  /** Entries with a cancel in flight. */
  busy: {} as Record<string, true>,
});

export function loadQueue(): Promise<QueueList | undefined> {
  return track(
    () => queue.list,
    (r) => {
      queue.list = r;
    },
    () => call(QueueCalls.fetchQueue, {}, { silent: true }),
  );
}

export function waitingEntries(): QueueEntryDto[] {
  return dataOf(queue.list)?.items ?? [];
}

export interface JoinInput {
  durationKey: LeaseDurationKey;
  filters: Record<string, string>;
  serverName: string;
}

/** Waits in line (opt-in); answers the entry, already granted when a board was free. */
export async function joinQueue(input: JoinInput): Promise<JoinAnswer> {
  const entry = await call(
    QueueCalls.joinQueue,
    {
      filterReq: filterPayload(input.filters),
      durationKey: input.durationKey,
      serverName: input.serverName.trim(),
    },
    { silent: true },
  );
  if (entry.lease) {
    leases.highlight = entry.lease.deviceId;
    leases.selected = entry.lease.deviceId;
    void loadLeases();
  }
  await loadQueue();
  return entry;
}

export async function cancelQueue(entryId: string): Promise<QueueEntryDto | undefined> {
  if (queue.busy[entryId]) return undefined;
  queue.busy[entryId] = true;
  try {
    return await call(QueueCalls.cancelQueue, { entryId }, { silent: true });
  } finally {
    delete queue.busy[entryId];
    void loadQueue();
  }
}

/** The text of a granted or expired notice, or null for kinds that are not toasts. */
export function queueNoticeText(kind: string, data: Record<string, unknown>): string | null {
  const name = String(data.serverName ?? '');
  if (kind === QueueNotice.granted) {
    const ends = typeof data.endsAt === 'string' ? dateTimeText(currentLanguage(), data.endsAt) : '';
    return t('queue:notice.granted', {
      name,
      board: String(data.boardName ?? data.deviceId ?? ''),
      date: ends,
    });
  }
  if (kind === QueueNotice.expired) return t('queue:notice.expired', { name });
  return null;
}

/** Applies one user notification; answers whether it was a queue one. */
export function onQueueNotification(n: UserNotification): boolean {
  if (!n.kind.startsWith('queue.')) return false;
  if (n.kind === QueueNotice.position) {
    const entry = waitingEntries().find((e) => e.entryId === n.data.entryId);
    if (entry && typeof n.data.position === 'number') {
      entry.position = n.data.position;
      entry.estimateAt = typeof n.data.estimateAt === 'string' ? n.data.estimateAt : null;
    } else void loadQueue();
    return true;
  }
  const text = queueNoticeText(n.kind, n.data);
  if (n.kind === QueueNotice.granted) {
    if (typeof n.data.deviceId === 'string') {
      leases.highlight = n.data.deviceId;
      leases.selected = n.data.deviceId;
    }
    void loadLeases();
  }
  if (text) notify(n.kind === QueueNotice.granted ? 'success' : 'error', text, 12_000);
  void loadQueue();
  return true;
}
