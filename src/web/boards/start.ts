// Starting a held board from any page (mainboard, shared with me, palette): apply, keep the apply in
// the cookie, open the workbench.
import { messageOf, startApply } from '#web/boards/store.ts';
import { t } from '#web/i18n/i18n.ts';
import { realtime, realtimeState } from '#web/realtime/client.ts';
import { notify } from '#web/state/notices.ts';

/** Start: apply, keep the apply in the cookie, open the workbench. */
export async function startAndOpen(
  navigate: (to: string) => void,
  deviceId: string,
  name: string,
): Promise<void> {
  try {
    await startApply(deviceId);
    // CONNECT carries the applyId: a connection made before this apply reconnects with it.
    if (realtimeState.status !== 'idle') realtime.reconnect();
    navigate('/workbench');
  } catch (err) {
    if (messageOf(err) !== 'busy')
      notify('error', t('devices:mainboard.startFailed', { name, error: messageOf(err) }));
  }
}
