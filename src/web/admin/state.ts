// What the palette asks of the administration area: a command navigates to a section and leaves an
// intent (open the "add" dialog) that the section takes once it is on screen.
import { useEffect } from 'react';
import { proxy, useSnapshot } from 'valtio';

export type AdminIntent = 'user.create' | 'org.create' | 'role.create' | 'board.create' | 'host.create';

export const adminUi = proxy({ intent: null as AdminIntent | null });

/** Runs `open` when the palette left this intent, and clears it. */
export function useIntent(intent: AdminIntent, open: () => void): void {
  const snap = useSnapshot(adminUi);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `open` is a fresh closure each render.
  useEffect(() => {
    if (snap.intent !== intent) return;
    adminUi.intent = null;
    open();
  }, [snap.intent, intent]);
}
