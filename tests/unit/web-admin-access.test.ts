// The administration area's mirror of the service's rules: who is a global administrator, which roles
// one may grant, and which sections the menu shows for the built-in roles — held against the service's
// own functions and seed, so the console cannot drift from what the service decides.
import { describe, expect, it } from 'vitest';
import { isGlobalAdmin } from '#server/identity/admin.ts';
import { BUILTIN_ROLES } from '#server/identity/seed.ts';
import { hostCalls } from '#shared/board-hosts.ts';
import type { AdminRole } from '#shared/user.ts';
import { accessOf, grantable } from '#web/admin/access.ts';
import { adminCommands } from '#web/admin/commands.ts';
import { buildMenu } from '#web/router/access.ts';
import { routeTable } from '#web/router/table.ts';

const perms = (id: string) => BUILTIN_ROLES.find((r) => r.id === id)?.perms ?? [];
const roles: AdminRole[] = [
  ...BUILTIN_ROLES.map((r) => ({ id: r.id, name: r.name, perms: r.perms, builtin: true })),
  { id: 'lab-auditor', name: 'Lab auditor', perms: ['rbac.view_user', 'audit.view_log'], builtin: false },
  {
    id: 'lab-admin',
    name: 'Lab admin',
    perms: ['device.change_device', 'device.add_device'],
    builtin: false,
  },
];

function adminSections(held: readonly string[]): string[] {
  const group = buildMenu(routeTable, {
    perms: held,
    licenceValid: true,
    routeSet: 'full',
    settings: null,
  }).find((m) => m.key.startsWith('/admin'));
  if (!group) return [];
  return group.children ? group.children.map((c) => c.key) : [group.key];
}

describe('the administration area mirrors the service', () => {
  it.each([
    [['*'], 'Default'],
    [[], 'SuperAdmin'],
    [['rbac.view_user'], 'SystemAdmin'],
    [perms('org_admin'), 'org-a'],
    [perms('org_auditor'), 'org-a'],
    [['rbac.add_organization', 'rbac.add_role'], 'org-a'],
    [[], null],
  ] as const)('judges %j in %s a global administrator as the service does', (held, orgId) => {
    const service = isGlobalAdmin({
      id: 'u',
      username: 'u',
      displayName: 'u',
      orgId,
      orgType: null,
      perms: [...held],
      credentialId: 'c',
      credentialKind: 'access',
    });
    expect(accessOf(held, orgId).global).toBe(service);
  });

  it('offers an organisation admin only the roles within their own entries, never the super admin', () => {
    const orgAdmin = accessOf(perms('org_admin'), 'org-a');
    // Their own role too (they hold all of its entries), as the service's grantableRole decides.
    expect(grantable(roles, orgAdmin).map((r) => r.id)).toEqual([
      'org_admin',
      'org_auditor',
      'org_user',
      'lab-auditor',
    ]);
    expect(grantable(roles, accessOf(['*'], 'SuperAdmin')).map((r) => r.id)).toEqual(roles.map((r) => r.id));
    expect(grantable(roles, accessOf(['rbac.view_user'], 'org-a'))).toEqual([]);
  });

  it.each([
    ['superadmin', ['users', 'orgs', 'roles', 'boards', 'hosts', 'images', 'audit']],
    ['org_admin', ['users', 'orgs', 'roles', 'audit']],
    ['org_auditor', ['users', 'orgs', 'roles', 'audit']],
    ['org_user', []],
  ])('shows the %s role the sections whose list calls it may make', (role, sections) => {
    expect(adminSections(perms(role))).toEqual(sections.map((s) => `/admin/${s}`));
  });

  it('shows a custom role its sections only: one section collapses to a single entry', () => {
    expect(adminSections(['rbac.view_user', 'audit.view_log'])).toEqual(['/admin/users', '/admin/audit']);
    expect(adminSections(['audit.view_log'])).toEqual(['/admin/audit']);
    // Whoever may change boards sees the board hosts too: the entry of the service's adminHostsList.
    expect(adminSections(['device.change_device'])).toEqual(['/admin/boards', '/admin/hosts']);
  });

  it('gates the board hosts section and its palette command on the entries of the host calls', () => {
    const admin = routeTable.find((r) => r.path === '/admin');
    const hosts = admin?.children?.find((c) => c.path === 'hosts');
    const perm = (name: string) => hostCalls.find((c) => c.name === name)?.perms;
    expect(hosts?.meta.perms).toEqual(perm('adminHostsList'));
    expect(adminCommands.find((c) => c.id === 'admin.host.add')?.perms).toEqual(perm('adminHostsAdd'));
    expect(perm('adminHostsRevoke')).toEqual(['device.del_device']);
  });
});
