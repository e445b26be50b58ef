// The user's keymap, every feature's palette commands, and the realtime notices their features watch (lease warnings,
// flash progress, the queue, share invitations), installed once the account has loaded. A chunk of
// its own that Root fetches while the account loads: a visitor who is not signed in never needs it,
// and the first page does not carry it.
import { installAdminCommands } from '#web/admin/commands.ts';
import { installDeviceCommands } from '#web/devices/commands.ts';
import { installFlashCommands } from '#web/flash/commands.ts';
import { startKeymapSync } from '#web/keymap/sync.ts';
import { withZod } from '#web/lazy-zod.ts';
import { installQueueCommands } from '#web/queue/commands.ts';
import { installShareCommands } from '#web/share/commands.ts';

/** Each installs once; later calls do nothing. */
export function installFeatureCommands(): void {
  // The user's keymap follows them: loaded from the service once they are signed in, on every page.
  startKeymapSync();
  installDeviceCommands();
  installFlashCommands();
  installQueueCommands();
  installShareCommands();
  installAdminCommands();
  // Sequences' commands carry their calls' schemas: loaded after the first paint, off the first load.
  void withZod(() => import('#web/sequences/commands.ts'))().then((m) => m.installSequenceCommands());
}
