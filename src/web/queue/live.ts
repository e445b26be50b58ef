// The waiting line's live side: one subscription per tab to the user's notifications, handing the
// `queue.*` kinds to the store (devices/live.ts words only `lease.*`, flash/live.ts only `flash.*`).
// After a reconnect the list is read again, so a grant missed while the socket was down still shows.
import { subscribe } from 'valtio';
import { Destinations, userNotification } from '#shared/realtime.ts';
import { type RealtimeMessage, realtime, realtimeState } from '#web/realtime/client.ts';
import { loadQueue, onQueueNotification, waitingEntries } from './state.ts';

let handle: { unsubscribe(): void } | null = null;

export function watchQueue(): void {
  if (handle) return;
  handle = realtime.subscribe(Destinations.userNotifications, (m: RealtimeMessage) => {
    let body: unknown = null;
    try {
      body = JSON.parse(m.body);
    } catch {
      return;
    }
    const n = userNotification.safeParse(body);
    if (n.success) onQueueNotification(n.data);
  });
  let generation = realtimeState.generation;
  subscribe(realtimeState, () => {
    if (realtimeState.generation === generation) return;
    generation = realtimeState.generation;
    if (realtimeState.status === 'connected' && waitingEntries().length) void loadQueue();
  });
}
