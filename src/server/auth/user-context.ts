// Who is calling: resolved once per request from the Authorization header.
import { and, eq } from 'drizzle-orm';
import type { Db } from '#server/db/client.ts';
import { memberships, organisations, roles, users } from '#server/db/schema/identity.ts';
import { ResultCode } from '#shared/codes.ts';
import { sessionEnded } from '#server/errors.ts';
import { tokenFromHeader, verifyCredential } from './tokens.ts';

export interface AuthUser {
  id: string;
  username: string;
  displayName: string;
  orgId: string | null;
  orgType: string | null;
  perms: string[];
  credentialId: string;
  credentialKind: 'access' | 'apikey';
}

/**
 * Null when no token was sent; throws the spec's session codes for a bad one. `now` is the service
 * clock's time (expiry is judged by it so tests can move time). A token of a deactivated or deleted
 * user is refused like a revoked one.
 */
export async function authenticate(
  db: Db,
  authorization: string | undefined,
  now = new Date(),
): Promise<AuthUser | null> {
  const token = tokenFromHeader(authorization);
  if (!token) return null;
  const cred = await verifyCredential(db, token, now);
  const user = await loadAuthUser(db, cred.userId, cred.id, cred.kind);
  if (!user) throw sessionEnded(ResultCode.IllegalToken, 'Illegal token', 'auth.token_illegal');
  return user;
}

export async function loadAuthUser(
  db: Db,
  userId: string,
  credentialId = '',
  credentialKind: 'access' | 'apikey' = 'access',
): Promise<AuthUser | null> {
  const [u] = await db.select().from(users).where(eq(users.id, userId)).limit(1);
  if (!u?.isActive) return null;
  let perms: string[] = [];
  let orgType: string | null = null;
  if (u.currentOrgId) {
    const [m] = await db
      .select({ perms: roles.perms, orgType: organisations.type })
      .from(memberships)
      .innerJoin(roles, eq(roles.id, memberships.roleId))
      .innerJoin(organisations, eq(organisations.id, memberships.orgId))
      .where(and(eq(memberships.userId, u.id), eq(memberships.orgId, u.currentOrgId)))
      .limit(1);
    perms = m?.perms ?? [];
    orgType = m?.orgType ?? null;
  }
  return {
    id: u.id,
    username: u.username,
    displayName: u.displayName,
    orgId: u.currentOrgId,
    orgType,
    perms,
    credentialId,
    credentialKind,
  };
}
