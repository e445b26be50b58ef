// Who may do what in the administration area: the console's mirror of the service's rules (the header
// of api.ts), pure so that tests hold it against the service's own functions. The service decides.
import { hasPermission } from '#shared/permissions.ts';
import type { AdminRole } from '#shared/user.ts';

export interface AdminAccess {
  perms: readonly string[];
  /** A global administrator: a role holding `*`, or SuperAdmin / SystemAdmin as current organisation. */
  global: boolean;
  orgId: string | null;
  can: (entry: string) => boolean;
}

export function accessOf(perms: readonly string[], orgId: string | null | undefined): AdminAccess {
  return {
    perms,
    // isSuperAdminOrg of src/shared/permissions.ts, spelt out: importing it would add it to that module's
    // chunk in the first load.
    global: perms.includes('*') || orgId === 'SuperAdmin' || orgId === 'SystemAdmin',
    orgId: orgId ?? null,
    can: (entry) => hasPermission(entry, perms),
  };
}

/** The roles a user may grant: every role for a global administrator, else those within their perms. */
export function grantable(roles: readonly AdminRole[], access: AdminAccess): AdminRole[] {
  if (access.global) return [...roles];
  return roles.filter((r) => !r.perms.includes('*') && r.perms.every((p) => access.can(p)));
}
