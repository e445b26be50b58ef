// Permission strings `app.action_resource` (spec section 6) and the one matching rule that the
// server, the console's menus, routes and the permission directive all share.

export const PermAction = { add: 'add', change: 'change', view: 'view', del: 'del' } as const;
export type PermAction = (typeof PermAction)[keyof typeof PermAction];

/** Route fragments to the action they require (spec section 6). */
export const ROUTE_ACTION: Record<string, PermAction> = {
  create: 'add',
  update: 'change',
  list: 'view',
  retrieve: 'view',
  destroy: 'del',
};

export const SUPER_ADMIN_ORG_IDS = ['SuperAdmin', 'SystemAdmin'] as const;
export const VIP_DEVELOPER_ORG_ID = 'VIP_Developer';
export const ROOT_ORG_TYPE = 'ROOT';

/** One required entry: any of its `|` alternatives in `held` suffices. */
export function entryAllowed(entry: string, held: ReadonlySet<string> | readonly string[]): boolean {
  const set = held instanceof Set ? held : new Set(held as readonly string[]);
  return entry
    .split('|')
    .map((s) => s.trim())
    .filter(Boolean)
    .some((alt) => set.has(alt) || set.has('*'));
}

/**
 * An item is allowed if it has no requirement or every required entry is held (spec section 6).
 * `required` may be one string or a list; an empty list or undefined means no requirement.
 */
export function hasPermission(
  required: string | readonly string[] | undefined | null,
  held: ReadonlySet<string> | readonly string[],
): boolean {
  if (required == null) return true;
  const list = typeof required === 'string' ? [required] : required;
  if (list.length === 0) return true;
  const set = held instanceof Set ? held : new Set(held as readonly string[]);
  return list.every((entry) => entryAllowed(entry, set));
}

/** The action a route path fragment requires: create/update/delete or an `:id` segment. */
export function actionForPath(path: string): PermAction {
  const parts = path.split('/').filter(Boolean);
  for (const p of parts.reverse()) {
    if (p === 'create') return 'add';
    if (p === 'update') return 'change';
    if (p === 'delete') return 'del';
    if (p.startsWith(':')) return 'view';
  }
  return 'view';
}

export function isSuperAdminOrg(orgId: string | undefined | null): boolean {
  return orgId != null && (SUPER_ADMIN_ORG_IDS as readonly string[]).includes(orgId);
}
