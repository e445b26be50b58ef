// The palette's built-in commands (core-command-list.ts), registered from the root on every page and
// rebuilt when the permissions, the route set or the public settings change. The list is a chunk of
// its own fetched after the first paint: the first page does not carry it (the palette itself loads
// on first use, later still).
import { useEffect } from 'react';
import { useSnapshot } from 'valtio';
import { registerCommands } from '#web/commands/registry.ts';
import { licenceState, licenceValid } from '#web/state/licence.ts';
import { session } from '#web/state/session.ts';
import { publicSettingsState } from '#web/state/settings.ts';

export function useCoreCommands(): void {
  const { perms } = useSnapshot(session);
  const { value } = useSnapshot(publicSettingsState);
  const { detail } = useSnapshot(licenceState);
  // biome-ignore lint/correctness/useExhaustiveDependencies: commands read the public settings (docs link) when built.
  useEffect(() => {
    const licenceOk = licenceValid(detail, Date.now());
    let offs: (() => void)[] = [];
    let live = true;
    void import('./core-command-list.ts').then((m) => {
      if (!live) return;
      offs = [
        registerCommands('core.navigation', m.navigationCommands(perms, licenceOk)),
        registerCommands('core.preferences', m.preferenceCommands()),
        registerCommands('core.account', m.accountCommands()),
      ];
    });
    return () => {
      live = false;
      for (const off of offs) off();
    };
  }, [perms, value, detail]);
}
