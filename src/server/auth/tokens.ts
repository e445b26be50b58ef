// Opaque credentials: a random token is shown to its owner once; only its SHA-256 hash is stored.
// Access tokens expire; API keys do not, but both can be revoked. The reason of a revocation decides
// the code a later use answers: displaced by a newer sign-in → 50012, anything else → 50008; an
// expired token answers 50014. The revoking functions answer the credentials they revoked so the
// caller can end what was opened with them (open realtime connections, their shells) at once.
import crypto from 'node:crypto';
import { and, eq, isNull, type SQL, sql } from 'drizzle-orm';
import { ResultCode } from '#shared/codes.ts';
import { type Db, preparedPer } from '#server/db/client.ts';
import { credentials, users } from '#server/db/schema/identity.ts';
import { sessionEnded } from '#server/errors.ts';

export type CredentialKind = 'access' | 'apikey';

export const hashToken = (token: string) => crypto.createHash('sha256').update(token).digest('hex');

export function newToken(kind: CredentialKind): string {
  return `${kind === 'apikey' ? 'bbk_' : 'bbt_'}${crypto.randomBytes(32).toString('base64url')}`;
}

export interface IssueOptions {
  ttlMs?: number;
  now?: Date;
}

/** A harmless excerpt of a token (prefix and last four characters) to recognise it later. */
export const tokenHint = (token: string) => `${token.slice(0, 8)}…${token.slice(-4)}`;

export async function issueCredential(
  db: Db,
  userId: string,
  kind: CredentialKind,
  opts: IssueOptions = {},
): Promise<string> {
  const token = newToken(kind);
  const now = opts.now ?? new Date();
  await db.insert(credentials).values({
    id: crypto.randomUUID(),
    tokenHash: hashToken(token),
    userId,
    kind,
    createdAt: now,
    expiresAt: opts.ttlMs ? new Date(now.getTime() + opts.ttlMs) : null,
    hint: tokenHint(token),
  });
  return token;
}

/** Strips the quotes some clients keep around a stored token, and an optional `Bearer ` scheme. */
export function tokenFromHeader(header: string | undefined): string | null {
  if (!header) return null;
  let v = header
    .trim()
    .replace(/^"+|"+$/g, '')
    .replace(/^'+|'+$/g, '');
  if (/^bearer\s+/i.test(v)) v = v.replace(/^bearer\s+/i, '').replace(/^"+|"+$/g, '');
  return v.length > 0 && v.length <= 512 ? v : null;
}

/** How a session ended, as every client is told: the envelope code, a stable key and a message. */
export interface SessionEnd {
  code: number;
  key: string;
  message: string;
}

/** Why a credential stopped working, besides a revocation reason (logout, admin, refreshed, displaced). */
export const EXPIRED = 'expired';
export const DEACTIVATED = 'deactivated';

/** The session code a revocation reason (or `expired`) answers by, over HTTP and over /ws alike. */
export function sessionEndOf(reason: string | null): SessionEnd {
  if (reason === 'displaced')
    return {
      code: ResultCode.OtherClientLoggedIn,
      key: 'auth.token_displaced',
      message: 'Logged in elsewhere',
    };
  if (reason === EXPIRED)
    return { code: ResultCode.TokenExpired, key: 'auth.token_expired', message: 'Token expired' };
  return { code: ResultCode.IllegalToken, key: 'auth.token_illegal', message: 'Illegal token' };
}

const fail = (end: SessionEnd) => sessionEnded(end.code, end.message, end.key);

/** Resolves a token to its user id, or throws the session code the console acts on. */
export async function verifyCredential(
  db: Db,
  token: string,
  now = new Date(),
): Promise<{ userId: string; kind: CredentialKind; id: string; expiresAt: Date | null }> {
  const [row] = await db
    .select()
    .from(credentials)
    .where(eq(credentials.tokenHash, hashToken(token)))
    .limit(1);
  return checkCredential(row, now);
}

/** A credential row as the caller's: throws the session codes when it is missing, revoked or expired. */
export function checkCredential(
  row: typeof credentials.$inferSelect | null | undefined,
  now: Date,
): { userId: string; kind: CredentialKind; id: string; expiresAt: Date | null } {
  if (!row) throw fail(sessionEndOf(null));
  if (row.revokedAt) throw fail(sessionEndOf(row.revokedReason));
  if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) throw fail(sessionEndOf(EXPIRED));
  return { userId: row.userId, kind: row.kind as CredentialKind, id: row.id, expiresAt: row.expiresAt };
}

/**
 * Checks again a credential already resolved (a long-lived realtime connection, before it subscribes):
 * one query, throwing the same session codes as `verifyCredential`, and 50008 for an inactive user.
 */
export async function recheckCredential(db: Db, id: string, now = new Date()): Promise<void> {
  const [row] = await recheckQuery(db).execute({ id });
  if (!row || !row.isActive) throw fail(sessionEndOf(null));
  if (row.revokedAt) throw fail(sessionEndOf(row.revokedReason));
  if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) throw fail(sessionEndOf(EXPIRED));
}

/** Every realtime subscription rechecks its sign-in. */
const recheckQuery = preparedPer((db) =>
  db
    .select({
      revokedAt: credentials.revokedAt,
      revokedReason: credentials.revokedReason,
      expiresAt: credentials.expiresAt,
      isActive: users.isActive,
    })
    .from(credentials)
    .innerJoin(users, eq(users.id, credentials.userId))
    .where(eq(credentials.id, sql.placeholder('id')))
    .limit(1)
    .prepare('bianbu_recheck_credential'),
);

/** A credential a revocation just ended. */
export interface RevokedCredential {
  id: string;
  userId: string;
  kind: CredentialKind;
  reason: string;
}

/** Marks every still-live credential matching `where` revoked, with the reason a later use answers by. */
async function revokeWhere(
  db: Db,
  where: SQL | undefined,
  reason: string,
  now: Date,
): Promise<RevokedCredential[]> {
  const rows = await db
    .update(credentials)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(where, isNull(credentials.revokedAt)))
    .returning({ id: credentials.id, userId: credentials.userId, kind: credentials.kind });
  return rows.map((r) => ({ id: r.id, userId: r.userId, kind: r.kind as CredentialKind, reason }));
}

export function revokeCredential(
  db: Db,
  token: string,
  reason: string,
  now = new Date(),
): Promise<RevokedCredential[]> {
  return revokeWhere(db, eq(credentials.tokenHash, hashToken(token)), reason, now);
}

/** Revokes every live credential of a kind of a user (single-session sign-in, API key refresh). */
export function revokeAllOfKind(
  db: Db,
  userId: string,
  kind: CredentialKind,
  reason: string,
  now = new Date(),
): Promise<RevokedCredential[]> {
  return revokeWhere(db, and(eq(credentials.userId, userId), eq(credentials.kind, kind)), reason, now);
}

export function revokeCredentialById(
  db: Db,
  id: string,
  reason: string,
  now = new Date(),
): Promise<RevokedCredential[]> {
  return revokeWhere(db, eq(credentials.id, id), reason, now);
}

/** Every live credential of a user, of any kind (deactivation). */
export function revokeAllOfUser(
  db: Db,
  userId: string,
  reason: string,
  now = new Date(),
): Promise<RevokedCredential[]> {
  return revokeWhere(db, eq(credentials.userId, userId), reason, now);
}
