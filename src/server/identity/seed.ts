// First-start seeding, idempotent: the built-in organisations and roles, and the `admin` account in
// SuperAdmin. The admin password is BIANBU_ADMIN_PASSWORD, or a random one printed once: it is
// printed only by the start that created the account, never again.
import crypto from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { memberships, organisations, roles, users } from '#server/db/schema/identity.ts';
import { BUILTIN_ORG, BUILTIN_ROLE, IdentityPerm } from '#shared/user.ts';
import { hashPassword, randomPassword } from './passwords.ts';

/** Device permissions every ordinary member holds (other features check these). */
export const ORG_USER_PERMS = [
  'device.view_device',
  'device.add_request',
  'device.change_request',
  'device.view_request',
  'device.add_apply',
  'device.view_apply',
  'device.del_apply',
  'device.view_share',
  'device.add_share',
  'device.change_share',
  'device.del_share',
  'device.view_file',
  'device.change_file',
  'device.add_flash',
  'device.view_flash',
];

export const BUILTIN_ORGS = [
  { id: BUILTIN_ORG.root, name: 'Root', type: 'ROOT' },
  { id: BUILTIN_ORG.superAdmin, name: 'Super Admin', type: 'ORG' },
  { id: BUILTIN_ORG.systemAdmin, name: 'System Admin', type: 'ORG' },
  { id: BUILTIN_ORG.vipDeveloper, name: 'VIP Developer', type: 'ORG' },
  { id: BUILTIN_ORG.default, name: 'Default', type: 'ORG' },
];

export const BUILTIN_ROLES = [
  { id: BUILTIN_ROLE.superAdmin, name: 'superadmin', perms: ['*'] },
  {
    id: BUILTIN_ROLE.orgAdmin,
    name: 'Org Admin',
    perms: [
      ...ORG_USER_PERMS,
      IdentityPerm.viewUser,
      IdentityPerm.addUser,
      IdentityPerm.changeUser,
      IdentityPerm.delUser,
      IdentityPerm.viewMembership,
      IdentityPerm.changeMembership,
      IdentityPerm.viewOrg,
      IdentityPerm.viewRole,
      IdentityPerm.viewAudit,
    ],
  },
  {
    id: BUILTIN_ROLE.orgAuditor,
    name: 'Org Auditor',
    perms: [
      'device.view_device',
      'device.view_apply',
      'device.view_request',
      IdentityPerm.viewUser,
      IdentityPerm.viewMembership,
      IdentityPerm.viewOrg,
      IdentityPerm.viewRole,
      IdentityPerm.viewAudit,
    ],
  },
  { id: BUILTIN_ROLE.orgUser, name: 'Org User', perms: ORG_USER_PERMS },
];

export const BUILTIN_ORG_IDS: ReadonlySet<string> = new Set(BUILTIN_ORGS.map((o) => o.id));
export const BUILTIN_ROLE_IDS: ReadonlySet<string> = new Set(BUILTIN_ROLES.map((r) => r.id));

export async function seedIdentity(app: FastifyInstance): Promise<void> {
  const db = app.storage.db;
  await db.insert(organisations).values(BUILTIN_ORGS).onConflictDoNothing();
  await db
    .insert(roles)
    .values(BUILTIN_ROLES.map((r) => ({ ...r, builtin: true })))
    .onConflictDoNothing();

  const [existing] = await db
    .select({ id: users.id })
    .from(users)
    .where(eq(users.username, 'admin'))
    .limit(1);
  if (existing) return;
  const given = app.config.BIANBU_ADMIN_PASSWORD;
  const password = given ?? randomPassword(20);
  const id = crypto.randomUUID();
  const inserted = await db
    .insert(users)
    .values({
      id,
      username: 'admin',
      displayName: 'Administrator',
      passwordHash: await hashPassword(password),
      currentOrgId: BUILTIN_ORG.superAdmin,
    })
    .onConflictDoNothing()
    .returning({ id: users.id });
  if (inserted.length === 0) return;
  await db
    .insert(memberships)
    .values({ userId: id, orgId: BUILTIN_ORG.superAdmin, roleId: BUILTIN_ROLE.superAdmin })
    .onConflictDoNothing();
  if (given) {
    app.log.info('administrator account "admin" created with the password from BIANBU_ADMIN_PASSWORD');
  } else {
    // Printed once, on the start that created the account; it is not stored anywhere in clear.
    app.log.warn(
      'administrator account "admin" created; its password is printed once on the standard output',
    );
    if (app.config.LOG_LEVEL !== 'silent') {
      process.stdout.write(`\n  Administrator account: admin\n  Password (shown once): ${password}\n\n`);
    }
  }
}
