// Live facts about the user's boards from the realtime channel: lease warnings and expiry (user
// notifications of kind lease.*) become toasts and refresh the lease list (only lease.* kinds: flash.*
// notifications belong to flash/live.ts, and flash.progress is never a toast); a board's state changes
// (its /topic/board/{deviceId}) update the store so badges change without a reload.
import { BOARD_STATES, type BoardState } from '#shared/boards.ts';
import { LeaseNotice } from '#shared/leases.ts';
import { boardStateEvent, Destinations, userNotification } from '#shared/realtime.ts';
import { dataOf, leaseOf, leases, loadLeases } from '#web/boards/store.ts';
import { t } from '#web/i18n/i18n.ts';
import { type RealtimeMessage, realtime } from '#web/realtime/client.ts';
import { type NoticeKind, notify } from '#web/state/notices.ts';

// Features whose own view tells a board's state story while it runs (a flash: flash/state.ts) register
// here; a state change one of them explains is not toasted a second time.
const explainers = new Set<(deviceId: string) => boolean>();

export function addStateExplainer(explains: (deviceId: string) => boolean): void {
  explainers.add(explains);
}

function json(m: RealtimeMessage): unknown {
  try {
    return JSON.parse(m.body);
  } catch {
    return null;
  }
}

/** The toast text of a lease notification, or null for kinds this module does not word. */
export function leaseNoticeText(kind: string, data: Record<string, unknown>): string | null {
  const name = String(data.serverName ?? data.deviceId ?? '');
  if (kind === LeaseNotice.expiring) {
    return t(
      data.remaining === '1h' ? 'boards:notice.leaseWarning1h' : 'boards:notice.leaseWarning24h',
      { name },
    );
  }
  if (kind === LeaseNotice.expired) return t('boards:notice.leaseExpired', { name });
  return null;
}

let notices: { unsubscribe(): void } | null = null;

/** Subscribes once per tab to the user's notifications (the realtime client resubscribes on reconnect). */
export function watchLeaseNotices(): void {
  if (notices) return;
  notices = realtime.subscribe(Destinations.userNotifications, (m) => {
    const parsed = userNotification.safeParse(json(m));
    if (!parsed.success || !parsed.data.kind.startsWith('lease.')) return;
    const n = parsed.data;
    const text = leaseNoticeText(n.kind, n.data);
    const level: NoticeKind =
      n.level === 'error' || n.level === 'warning' ? 'error' : n.level === 'success' ? 'success' : 'info';
    if (text) notify(n.kind === LeaseNotice.expired ? 'error' : level, text, 10_000);
    void loadLeases();
  });
}

function isBoardState(v: string): v is BoardState {
  return (BOARD_STATES as readonly string[]).includes(v);
}

/** Follows one board's state while the caller is mounted; answers the unsubscribe. */
export function watchBoardState(deviceId: string): () => void {
  const handle = realtime.subscribe(Destinations.boardState(deviceId), (m) => {
    const parsed = boardStateEvent.safeParse(json(m));
    if (!parsed.success || !isBoardState(parsed.data.state)) return;
    const lease = leaseOf(deviceId);
    const list = dataOf(leases.mine);
    const item = list?.items.find((l) => l.deviceId === deviceId);
    // What the board's machine says of itself (kernel, OS, ISA after a boot): shown as it comes.
    const facts = parsed.data.attributes;
    if (item && facts) item.attributes = { ...item.attributes, ...facts };
    if (!lease || lease.boardState === parsed.data.state) return;
    if (item) item.boardState = parsed.data.state;
    // While the user's own action on this board runs (a power reset, a flash), that action's toasts
    // tell the story; a toast per state change on top would say it twice.
    if (leases.busy[deviceId] || [...explainers].some((explains) => explains(deviceId))) return;
    notify(
      'info',
      t('boards:notice.boardState', {
        name: lease.serverName,
        state: t(`devices:state.${parsed.data.state}`),
      }),
    );
  });
  return () => handle.unsubscribe();
}
