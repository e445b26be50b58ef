// Who is calling: resolved once per request from the Authorization header.
import { and, eq, sql } from 'drizzle-orm';
import { type Db, preparedPer } from '#server/db/client.ts';
import { credentials, memberships, organisations, roles, users } from '#server/db/schema/identity.ts';
import { ResultCode } from '#shared/codes.ts';
import { sessionEnded } from '#server/errors.ts';
import { checkCredential, hashToken, tokenFromHeader } from './tokens.ts';

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
  return token ? (await authenticateToken(db, token, now)).user : null;
}

// One query for the credential, its user and the user's role in the current organisation: every
// call pays it, so it is prepared (parsed once by the server).
const tokenQuery = preparedPer((db) =>
  db
    .select({
      cred: credentials,
      user: users,
      perms: roles.perms,
      roleId: roles.id,
      orgType: organisations.type,
      orgId: organisations.id,
    })
    .from(credentials)
    .leftJoin(users, eq(users.id, credentials.userId))
    .leftJoin(memberships, and(eq(memberships.userId, users.id), eq(memberships.orgId, users.currentOrgId)))
    .leftJoin(roles, eq(roles.id, memberships.roleId))
    .leftJoin(organisations, eq(organisations.id, memberships.orgId))
    .where(eq(credentials.tokenHash, sql.placeholder('hash')))
    .limit(1)
    .prepare('bianbu_authenticate_token'),
);

/** The user of a token and when the token expires; throws the session codes for a bad one. */
export async function authenticateToken(
  db: Db,
  token: string,
  now = new Date(),
): Promise<{ user: AuthUser; expiresAt: Date | null }> {
  const [row] = await tokenQuery(db).execute({ hash: hashToken(token) });
  const cred = checkCredential(row?.cred, now);
  const u = row?.user;
  if (!u?.isActive) throw sessionEnded(ResultCode.IllegalToken, 'Illegal token', 'auth.token_illegal');
  // As loadAuthUser: a membership counts only with its role and organisation.
  const member = u.currentOrgId !== null && row.roleId !== null && row.orgId !== null;
  const user: AuthUser = {
    id: u.id,
    username: u.username,
    displayName: u.displayName,
    orgId: u.currentOrgId,
    orgType: member ? row.orgType : null,
    perms: member ? (row.perms ?? []) : [],
    credentialId: cred.id,
    credentialKind: cred.kind,
  };
  return { user, expiresAt: cred.expiresAt };
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
