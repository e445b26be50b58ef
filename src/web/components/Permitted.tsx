// The permission directive (spec section 6): children render only when the current organisation's
// permissions satisfy `perms` (every entry, `|` alternatives), with the rule the service uses.
import type { ReactNode } from 'react';
import { useSnapshot } from 'valtio';
import { hasPermission } from '#shared/permissions.ts';
import { session } from '#web/state/session.ts';

export function Permitted({
  perms,
  children,
  fallback = null,
}: {
  perms: string | readonly string[];
  children: ReactNode;
  fallback?: ReactNode;
}) {
  const snap = useSnapshot(session);
  return hasPermission(perms, snap.perms) ? children : fallback;
}
