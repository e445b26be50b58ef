// Opaque credentials: a random token is shown to its owner once; only its SHA-256 hash is stored.
// Access tokens expire; API keys do not, but both can be revoked. The reason of a revocation decides
// the code a later use answers: displaced by a newer sign-in → 50012, anything else → 50008.
import crypto from 'node:crypto';
import { and, eq, isNull, type SQL } from 'drizzle-orm';
import { ResultCode } from '#shared/codes.ts';
import type { Db } from '#server/db/client.ts';
import { credentials } from '#server/db/schema/identity.ts';
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

/** Resolves a token to its user id, or throws the session code the console acts on. */
export async function verifyCredential(
  db: Db,
  token: string,
  now = new Date(),
): Promise<{ userId: string; kind: CredentialKind; id: string }> {
  const [row] = await db
    .select()
    .from(credentials)
    .where(eq(credentials.tokenHash, hashToken(token)))
    .limit(1);
  if (!row) throw sessionEnded(ResultCode.IllegalToken, 'Illegal token', 'auth.token_illegal');
  if (row.revokedAt) {
    if (row.revokedReason === 'displaced')
      throw sessionEnded(ResultCode.OtherClientLoggedIn, 'Logged in elsewhere', 'auth.token_displaced');
    throw sessionEnded(ResultCode.IllegalToken, 'Illegal token', 'auth.token_illegal');
  }
  if (row.expiresAt && row.expiresAt.getTime() <= now.getTime())
    throw sessionEnded(ResultCode.TokenExpired, 'Token expired', 'auth.token_expired');
  return { userId: row.userId, kind: row.kind as CredentialKind, id: row.id };
}

/** Marks every still-live credential matching `where` revoked, with the reason a later use answers by. */
async function revokeWhere(db: Db, where: SQL | undefined, reason: string, now: Date): Promise<void> {
  await db
    .update(credentials)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(where, isNull(credentials.revokedAt)));
}

export function revokeCredential(db: Db, token: string, reason: string, now = new Date()): Promise<void> {
  return revokeWhere(db, eq(credentials.tokenHash, hashToken(token)), reason, now);
}

/** Revokes every live credential of a kind of a user (single-session sign-in, API key refresh). */
export function revokeAllOfKind(
  db: Db,
  userId: string,
  kind: CredentialKind,
  reason: string,
  now = new Date(),
): Promise<void> {
  return revokeWhere(db, and(eq(credentials.userId, userId), eq(credentials.kind, kind)), reason, now);
}

export function revokeCredentialById(db: Db, id: string, reason: string, now = new Date()): Promise<void> {
  return revokeWhere(db, eq(credentials.id, id), reason, now);
}

/** Every live credential of a user, of any kind (deactivation). */
export function revokeAllOfUser(db: Db, userId: string, reason: string, now = new Date()): Promise<void> {
  return revokeWhere(db, eq(credentials.userId, userId), reason, now);
}
