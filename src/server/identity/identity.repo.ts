// Queries on accounts, organisations, roles and memberships, shared by the sign-in flows, the
// embedded provider and the administration calls.
import crypto from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '#server/db/client.ts';
import { memberships, organisations, roles, users } from '#server/db/schema/identity.ts';
import { conflict } from '#server/errors.ts';
import type { AdminUser, OrgRef, UserInfo } from '#shared/user.ts';
import { BUILTIN_ORG, BUILTIN_ROLE, IdentityErrorKey } from '#shared/user.ts';

export type UserRow = typeof users.$inferSelect;

export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  const [u] = await db.select().from(users).where(eq(users.id, id)).limit(1);
  return u;
}

/** Usernames are unique without regard to case; sign-in finds them the same way. */
export async function findUserByUsername(db: Db, username: string): Promise<UserRow | undefined> {
  const [u] = await db
    .select()
    .from(users)
    .where(sql`lower(${users.username}) = lower(${username})`)
    .limit(1);
  return u;
}

export async function findUserByPhone(db: Db, phone: string): Promise<UserRow | undefined> {
  const [u] = await db.select().from(users).where(eq(users.phone, phone)).limit(1);
  return u;
}

export async function findUserBySubject(
  db: Db,
  issuer: string,
  subject: string,
): Promise<UserRow | undefined> {
  const [u] = await db
    .select()
    .from(users)
    .where(and(eq(users.oidcIssuer, issuer), eq(users.oidcSubject, subject)))
    .limit(1);
  return u;
}

export interface NewUser {
  username: string;
  displayName?: string;
  email?: string | null;
  phone?: string | null;
  passwordHash?: string | null;
  orgId?: string;
  roleId?: string;
  oidcIssuer?: string;
  oidcSubject?: string;
}

/** Creates a user and their membership; a taken username or phone answers 409. */
export async function createUser(db: Db, input: NewUser): Promise<UserRow> {
  if (await findUserByUsername(db, input.username))
    throw conflict('This username is already taken', IdentityErrorKey.usernameTaken);
  if (input.phone && (await findUserByPhone(db, input.phone)))
    throw conflict('This phone number belongs to another account', IdentityErrorKey.phoneTaken);
  const orgId = input.orgId ?? BUILTIN_ORG.default;
  const id = crypto.randomUUID();
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx
        .insert(users)
        .values({
          id,
          username: input.username,
          displayName: input.displayName || input.username,
          email: input.email ?? null,
          phone: input.phone ?? null,
          passwordHash: input.passwordHash ?? null,
          currentOrgId: orgId,
          oidcIssuer: input.oidcIssuer ?? null,
          oidcSubject: input.oidcSubject ?? null,
        })
        .returning();
      await tx
        .insert(memberships)
        .values({ userId: id, orgId, roleId: input.roleId ?? BUILTIN_ROLE.orgUser });
      return row;
    });
  } catch (err) {
    // Two concurrent creations of one name: the unique index decides, the loser hears 409.
    if (isUniqueViolation(err))
      throw conflict('This username is already taken', IdentityErrorKey.usernameTaken);
    throw err;
  }
}

export function isUniqueViolation(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    if ((e as { code?: string }).code === '23505') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** A free username made from a wanted one (external sign-in, phone sign-up). */
export async function freeUsername(db: Db, wanted: string): Promise<string> {
  const base =
    wanted
      .normalize('NFKC')
      .replace(/[^A-Za-z0-9_.@-]/g, '_')
      .replace(/^[.@-]+/, '')
      .slice(0, 48) || 'user';
  const padded = base.length < 2 ? `${base}_user` : base;
  if (!(await findUserByUsername(db, padded))) return padded;
  for (;;) {
    const candidate = `${padded}_${crypto.randomBytes(3).toString('hex')}`;
    if (!(await findUserByUsername(db, candidate))) return candidate;
  }
}

export async function orgsOfUser(db: Db, userId: string): Promise<(OrgRef & { roleId: string })[]> {
  return db
    .select({
      id: organisations.id,
      type: organisations.type,
      name: organisations.name,
      roleId: memberships.roleId,
    })
    .from(memberships)
    .innerJoin(organisations, eq(organisations.id, memberships.orgId))
    .where(eq(memberships.userId, userId))
    .orderBy(organisations.id);
}

export async function userInfoOf(db: Db, user: UserRow, perms: string[]): Promise<UserInfo> {
  const orgs = await orgsOfUser(db, user.id);
  const current = orgs.find((o) => o.id === user.currentOrgId) ?? null;
  return {
    id: user.id,
    username: user.username,
    name: user.displayName || user.username,
    avatar: user.avatar ?? '',
    email: user.email,
    phone: user.phone,
    perms,
    roles: current ? [current.roleId] : [],
    groupResource: current ? { id: current.id, type: current.type, name: current.name } : null,
    orgs: orgs.map(({ id, type, name }) => ({ id, type, name })),
  };
}

export async function adminUserOf(db: Db, user: UserRow): Promise<AdminUser> {
  const ms = await db
    .select({ orgId: memberships.orgId, roleId: memberships.roleId })
    .from(memberships)
    .where(eq(memberships.userId, user.id))
    .orderBy(memberships.orgId);
  return {
    id: user.id,
    username: user.username,
    name: user.displayName || user.username,
    email: user.email,
    phone: user.phone,
    avatar: user.avatar ?? '',
    isActive: user.isActive,
    currentOrgId: user.currentOrgId,
    hasPassword: Boolean(user.passwordHash),
    createdAt: user.createdAt.toISOString(),
    memberships: ms,
  };
}

export async function roleById(db: Db, id: string) {
  const [r] = await db.select().from(roles).where(eq(roles.id, id)).limit(1);
  return r;
}

export async function orgById(db: Db, id: string) {
  const [o] = await db.select().from(organisations).where(eq(organisations.id, id)).limit(1);
  return o;
}
