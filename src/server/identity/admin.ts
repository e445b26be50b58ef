// Administration of users, organisations, roles and memberships. Global administrators (a role
// holding `*`, or membership of SuperAdmin / SystemAdmin as current organisation) act on everything;
// an organisation admin acts only inside their current organisation, never on an account that holds
// global powers, and never grants a role with permissions they do not hold themselves. Anything
// outside the caller's reach answers "not found", exactly like something that does not exist.
import crypto from 'node:crypto';
import { and, count, desc, eq, gte, ilike, inArray, lte, or, type SQL, sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { revokeAllOfKind, revokeAllOfUser } from '#server/auth/tokens.ts';
import type { AuthUser } from '#server/auth/user-context.ts';
import {
  auditLog,
  memberships,
  organisations,
  phoneOutbox,
  roles,
  users,
} from '#server/db/schema/identity.ts';
import { badRequest, conflict, forbidden, notFound } from '#server/errors.ts';
import { endRevokedSessions, endUserEverywhere } from '#server/realtime/session-end.ts';
import { hasPermission, isSuperAdminOrg } from '#shared/permissions.ts';
import type {
  AdminOrg,
  AdminRole,
  AdminUser,
  AuditEntryView,
  Membership,
  OutboxEntry,
} from '#shared/user.ts';
import { BUILTIN_ORG, BUILTIN_ROLE, IdentityErrorKey } from '#shared/user.ts';
import {
  adminUserOf,
  createUser,
  findUserById,
  findUserByPhone,
  isUniqueViolation,
  orgById,
  roleById,
  type UserRow,
} from './identity.repo.ts';
import { hashPassword, randomPassword } from './passwords.ts';
import { BUILTIN_ORG_IDS, BUILTIN_ROLE_IDS } from './seed.ts';

export function isGlobalAdmin(u: AuthUser): boolean {
  return u.perms.includes('*') || isSuperAdminOrg(u.orgId);
}

function requireGlobal(u: AuthUser): void {
  if (!isGlobalAdmin(u)) throw forbidden();
}

/** The organisation a scoped (non-global) admin acts in. */
function scopeOrg(u: AuthUser): string {
  if (!u.orgId) throw forbidden();
  return u.orgId;
}

/** Whether an account holds global powers (so only global admins may touch it). */
async function isPowerful(app: FastifyInstance, userId: string): Promise<boolean> {
  const rows = await app.storage.db
    .select({ orgId: memberships.orgId, perms: roles.perms })
    .from(memberships)
    .innerJoin(roles, eq(roles.id, memberships.roleId))
    .where(eq(memberships.userId, userId));
  return rows.some((r) => isSuperAdminOrg(r.orgId) || r.perms.includes('*'));
}

async function isMember(app: FastifyInstance, userId: string, orgId: string): Promise<boolean> {
  const [m] = await app.storage.db
    .select({ u: memberships.userId })
    .from(memberships)
    .where(and(eq(memberships.userId, userId), eq(memberships.orgId, orgId)))
    .limit(1);
  return Boolean(m);
}

/** The target user if the caller may manage them; otherwise 404, as for a user that does not exist. */
export async function manageableUser(
  app: FastifyInstance,
  caller: AuthUser,
  userId: string,
): Promise<UserRow> {
  const user = await findUserById(app.storage.db, userId);
  if (!user) throw notFound();
  if (isGlobalAdmin(caller)) return user;
  if (!(await isMember(app, userId, scopeOrg(caller))) || (await isPowerful(app, userId))) throw notFound();
  return user;
}

async function grantableRole(app: FastifyInstance, caller: AuthUser, roleId: string) {
  const role = await roleById(app.storage.db, roleId);
  if (!role) throw notFound('No such role');
  if (isGlobalAdmin(caller)) return role;
  if (role.perms.includes('*') || !role.perms.every((p) => hasPermission(p, caller.perms)))
    throw forbidden('You may grant only roles whose permissions you hold yourself');
  return role;
}

function usersInOrg(orgId: string): SQL {
  return inArray(
    users.id,
    sql`(select ${memberships.userId} from ${memberships} where ${memberships.orgId} = ${orgId})`,
  );
}

export async function listUsers(
  app: FastifyInstance,
  caller: AuthUser,
  q: { search?: string; orgId?: string; page: number; pageSize: number },
): Promise<{ total: number; items: AdminUser[] }> {
  const db = app.storage.db;
  const orgId = isGlobalAdmin(caller) ? q.orgId : scopeOrg(caller);
  const conds: SQL[] = [];
  if (orgId) conds.push(usersInOrg(orgId));
  if (q.search) {
    const like = `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    conds.push(
      or(
        ilike(users.username, like),
        ilike(users.displayName, like),
        ilike(users.email, like),
        ilike(users.phone, like),
      ) as SQL,
    );
  }
  const where = conds.length ? and(...conds) : undefined;
  const [{ n }] = await db.select({ n: count() }).from(users).where(where);
  const rows = await db
    .select()
    .from(users)
    .where(where)
    .orderBy(users.username)
    .limit(q.pageSize)
    .offset((q.page - 1) * q.pageSize);
  return { total: Number(n), items: await Promise.all(rows.map((u) => adminUserOf(db, u))) };
}

export async function createUserAsAdmin(
  app: FastifyInstance,
  caller: AuthUser,
  input: {
    username: string;
    name?: string;
    email?: string;
    phone?: string;
    password?: string;
    orgId?: string;
    roleId?: string;
  },
): Promise<{ user: AdminUser; password: string | null }> {
  const global = isGlobalAdmin(caller);
  const orgId = global ? (input.orgId ?? BUILTIN_ORG.default) : scopeOrg(caller);
  if (!global && input.orgId && input.orgId !== orgId) throw notFound('No such organisation');
  if (!(await orgById(app.storage.db, orgId))) throw notFound('No such organisation');
  const role = await grantableRole(app, caller, input.roleId ?? BUILTIN_ROLE.orgUser);
  const password = input.password ?? randomPassword();
  const user = await createUser(app.storage.db, {
    username: input.username,
    displayName: input.name,
    email: input.email ?? null,
    phone: input.phone ?? null,
    passwordHash: await hashPassword(password),
    orgId,
    roleId: role.id,
  });
  return { user: await adminUserOf(app.storage.db, user), password: input.password ? null : password };
}

export async function updateUserAsAdmin(
  app: FastifyInstance,
  caller: AuthUser,
  input: {
    id: string;
    name?: string;
    email?: string | null;
    phone?: string | null;
    password?: string;
    isActive?: boolean;
  },
): Promise<AdminUser> {
  const db = app.storage.db;
  const user = await manageableUser(app, caller, input.id);
  if (input.isActive === false && user.id === caller.id)
    throw badRequest('You cannot deactivate your own account');
  if (input.phone) {
    const other = await findUserByPhone(db, input.phone);
    if (other && other.id !== user.id)
      throw conflict('This phone number belongs to another account', IdentityErrorKey.phoneTaken);
  }
  const now = app.clock.now();
  const set: Partial<typeof users.$inferInsert> = {};
  if (input.name !== undefined) set.displayName = input.name || user.username;
  if (input.email !== undefined) set.email = input.email;
  if (input.phone !== undefined) set.phone = input.phone;
  if (input.password !== undefined) set.passwordHash = await hashPassword(input.password);
  if (input.isActive !== undefined) set.isActive = input.isActive;
  if (Object.keys(set).length) {
    try {
      await db.update(users).set(set).where(eq(users.id, user.id));
    } catch (err) {
      if (isUniqueViolation(err))
        throw conflict('This phone number belongs to another account', IdentityErrorKey.phoneTaken);
      throw err;
    }
  }
  // A changed password ends the sessions signed in with the old one; deactivation ends everything:
  // open realtime connections and shells at once, and the user's leases.
  if (input.isActive === false) {
    await revokeAllOfUser(db, user.id, 'admin', now);
    await endUserEverywhere(app, user.id);
  } else if (input.password !== undefined)
    endRevokedSessions(app, await revokeAllOfKind(db, user.id, 'access', 'admin', now));
  const after = await findUserById(db, user.id);
  return adminUserOf(db, after ?? user);
}

async function orgView(app: FastifyInstance, o: typeof organisations.$inferSelect): Promise<AdminOrg> {
  const [{ n }] = await app.storage.db
    .select({ n: count() })
    .from(memberships)
    .where(eq(memberships.orgId, o.id));
  return { id: o.id, name: o.name, type: o.type, builtin: BUILTIN_ORG_IDS.has(o.id), members: Number(n) };
}

export async function listOrgs(app: FastifyInstance, caller: AuthUser): Promise<AdminOrg[]> {
  const db = app.storage.db;
  const rows = isGlobalAdmin(caller)
    ? await db.select().from(organisations).orderBy(organisations.id)
    : await db
        .select()
        .from(organisations)
        .where(eq(organisations.id, scopeOrg(caller)));
  return Promise.all(rows.map((o) => orgView(app, o)));
}

function slugId(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return `${base || 'org'}-${crypto.randomBytes(3).toString('hex')}`;
}

export async function createOrg(
  app: FastifyInstance,
  caller: AuthUser,
  input: { id?: string; name: string },
): Promise<AdminOrg> {
  requireGlobal(caller);
  const id = input.id ?? slugId(input.name);
  const rows = await app.storage.db
    .insert(organisations)
    .values({ id, name: input.name, type: 'ORG' })
    .onConflictDoNothing()
    .returning();
  if (!rows[0]) throw conflict('An organisation with this id exists', IdentityErrorKey.orgExists);
  return orgView(app, rows[0]);
}

export async function updateOrg(
  app: FastifyInstance,
  caller: AuthUser,
  input: { id: string; name: string },
): Promise<AdminOrg> {
  requireGlobal(caller);
  const rows = await app.storage.db
    .update(organisations)
    .set({ name: input.name })
    .where(eq(organisations.id, input.id))
    .returning();
  if (!rows[0]) throw notFound('No such organisation');
  return orgView(app, rows[0]);
}

export async function deleteOrg(app: FastifyInstance, caller: AuthUser, id: string): Promise<void> {
  requireGlobal(caller);
  const org = await orgById(app.storage.db, id);
  if (!org) throw notFound('No such organisation');
  if (BUILTIN_ORG_IDS.has(id))
    throw conflict('Built-in organisations are kept', IdentityErrorKey.builtinProtected);
  if ((await orgView(app, org)).members > 0)
    throw conflict('The organisation still has members', IdentityErrorKey.inUse);
  await app.storage.db.delete(organisations).where(eq(organisations.id, id));
}

const roleView = (r: typeof roles.$inferSelect): AdminRole => ({
  id: r.id,
  name: r.name,
  perms: r.perms,
  builtin: r.builtin || BUILTIN_ROLE_IDS.has(r.id),
});

export async function listRoles(app: FastifyInstance): Promise<AdminRole[]> {
  return (await app.storage.db.select().from(roles).orderBy(roles.id)).map(roleView);
}

export async function createRole(
  app: FastifyInstance,
  caller: AuthUser,
  input: { id?: string; name: string; perms: string[] },
): Promise<AdminRole> {
  requireGlobal(caller);
  const rows = await app.storage.db
    .insert(roles)
    .values({ id: input.id ?? slugId(input.name), name: input.name, perms: [...new Set(input.perms)] })
    .onConflictDoNothing()
    .returning();
  if (!rows[0]) throw conflict('A role with this id exists', IdentityErrorKey.roleExists);
  return roleView(rows[0]);
}

export async function updateRole(
  app: FastifyInstance,
  caller: AuthUser,
  input: { id: string; name?: string; perms?: string[] },
): Promise<AdminRole> {
  requireGlobal(caller);
  if (input.id === BUILTIN_ROLE.superAdmin)
    throw conflict('The super admin role is kept as is', IdentityErrorKey.builtinProtected);
  const set: Partial<typeof roles.$inferInsert> = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.perms !== undefined) set.perms = [...new Set(input.perms)];
  const rows = Object.keys(set).length
    ? await app.storage.db.update(roles).set(set).where(eq(roles.id, input.id)).returning()
    : await app.storage.db.select().from(roles).where(eq(roles.id, input.id));
  if (!rows[0]) throw notFound('No such role');
  return roleView(rows[0]);
}

export async function deleteRole(app: FastifyInstance, caller: AuthUser, id: string): Promise<void> {
  requireGlobal(caller);
  const role = await roleById(app.storage.db, id);
  if (!role) throw notFound('No such role');
  if (role.builtin || BUILTIN_ROLE_IDS.has(id))
    throw conflict('Built-in roles are kept', IdentityErrorKey.builtinProtected);
  const [{ n }] = await app.storage.db
    .select({ n: count() })
    .from(memberships)
    .where(eq(memberships.roleId, id));
  if (Number(n) > 0) throw conflict('Memberships still use this role', IdentityErrorKey.inUse);
  await app.storage.db.delete(roles).where(eq(roles.id, id));
}

export async function listMemberships(
  app: FastifyInstance,
  caller: AuthUser,
  q: { userId?: string; orgId?: string },
): Promise<Membership[]> {
  const orgId = isGlobalAdmin(caller) ? q.orgId : scopeOrg(caller);
  const conds: SQL[] = [];
  if (orgId) conds.push(eq(memberships.orgId, orgId));
  if (q.userId) conds.push(eq(memberships.userId, q.userId));
  return app.storage.db
    .select({
      userId: memberships.userId,
      username: users.username,
      orgId: memberships.orgId,
      roleId: memberships.roleId,
    })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(conds.length ? and(...conds) : undefined)
    .orderBy(memberships.orgId, users.username)
    .limit(5000);
}

export async function setMembership(
  app: FastifyInstance,
  caller: AuthUser,
  input: { userId: string; orgId: string; roleId: string },
): Promise<Membership> {
  const db = app.storage.db;
  if (!isGlobalAdmin(caller) && input.orgId !== scopeOrg(caller)) throw notFound('No such organisation');
  const user = await manageableUser(app, caller, input.userId);
  if (!(await orgById(db, input.orgId))) throw notFound('No such organisation');
  const role = await grantableRole(app, caller, input.roleId);
  await db
    .insert(memberships)
    .values({ userId: user.id, orgId: input.orgId, roleId: role.id })
    .onConflictDoUpdate({ target: [memberships.userId, memberships.orgId], set: { roleId: role.id } });
  if (!user.currentOrgId)
    await db.update(users).set({ currentOrgId: input.orgId }).where(eq(users.id, user.id));
  return { userId: user.id, username: user.username, orgId: input.orgId, roleId: role.id };
}

export async function removeMembership(
  app: FastifyInstance,
  caller: AuthUser,
  input: { userId: string; orgId: string },
): Promise<void> {
  const db = app.storage.db;
  if (!isGlobalAdmin(caller) && input.orgId !== scopeOrg(caller)) throw notFound('No such organisation');
  if (input.userId === caller.id) throw badRequest('You cannot remove your own membership');
  const user = await manageableUser(app, caller, input.userId);
  const removed = await db
    .delete(memberships)
    .where(and(eq(memberships.userId, user.id), eq(memberships.orgId, input.orgId)))
    .returning({ orgId: memberships.orgId });
  if (!removed.length) throw notFound('No such membership');
  if (user.currentOrgId === input.orgId) {
    const [next] = await db
      .select({ orgId: memberships.orgId })
      .from(memberships)
      .where(eq(memberships.userId, user.id))
      .limit(1);
    await db
      .update(users)
      .set({ currentOrgId: next?.orgId ?? null })
      .where(eq(users.id, user.id));
  }
}

export async function listOutbox(
  app: FastifyInstance,
  caller: AuthUser,
  q: { phone?: string; page: number; pageSize: number },
): Promise<{ total: number; items: OutboxEntry[] }> {
  requireGlobal(caller);
  const db = app.storage.db;
  const where = q.phone ? eq(phoneOutbox.recipient, q.phone) : undefined;
  const [{ n }] = await db.select({ n: count() }).from(phoneOutbox).where(where);
  const rows = await db
    .select()
    .from(phoneOutbox)
    .where(where)
    .orderBy(desc(phoneOutbox.id))
    .limit(q.pageSize)
    .offset((q.page - 1) * q.pageSize);
  return { total: Number(n), items: rows.map((r) => ({ ...r, at: r.at.toISOString() })) };
}

export async function listAudit(
  app: FastifyInstance,
  caller: AuthUser,
  q: {
    userId?: string;
    action?: string;
    result?: string;
    since?: string;
    until?: string;
    page: number;
    pageSize: number;
  },
): Promise<{ total: number; items: AuditEntryView[] }> {
  const db = app.storage.db;
  const conds: SQL[] = [];
  if (!isGlobalAdmin(caller))
    conds.push(
      inArray(
        auditLog.userId,
        sql`(select ${memberships.userId} from ${memberships} where ${memberships.orgId} = ${scopeOrg(caller)})`,
      ),
    );
  if (q.userId) conds.push(eq(auditLog.userId, q.userId));
  if (q.action) conds.push(eq(auditLog.action, q.action));
  if (q.result) conds.push(eq(auditLog.result, q.result));
  if (q.since) conds.push(gte(auditLog.at, new Date(q.since)));
  if (q.until) conds.push(lte(auditLog.at, new Date(q.until)));
  const where = conds.length ? and(...conds) : undefined;
  const [{ n }] = await db.select({ n: count() }).from(auditLog).where(where);
  const rows = await db
    .select()
    .from(auditLog)
    .where(where)
    .orderBy(desc(auditLog.id))
    .limit(q.pageSize)
    .offset((q.page - 1) * q.pageSize);
  return {
    total: Number(n),
    items: rows.map((r) => ({ ...r, at: r.at.toISOString(), detail: r.detail ?? null })),
  };
}
