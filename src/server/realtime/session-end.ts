// Ending a sign-in reaches what was opened with it, at once and on every instance: the identity
// feature calls these right after it revokes credentials (logout, API key refresh, displacement by a
// newer sign-in, a password or an account changed by an admin). The realtime connections
// authenticated with the credentials get an ERROR with the session code and close, and the shells
// opened with them close (src/shared/realtime.ts). Deactivation ends everything of the user, and
// their leases through the lease lifecycle (applies and shells closed, the board restored), as at a
// lease's end. Each collaborator is optional: an app without realtime or leases skips that part.
import type { FastifyInstance } from 'fastify';
import { DEACTIVATED, type RevokedCredential, sessionEndOf } from '#server/auth/tokens.ts';

/** The connections and shells of just-revoked credentials end, each with its revocation's code. */
export function endRevokedSessions(app: FastifyInstance, revoked: readonly RevokedCredential[]): void {
  if (revoked.length === 0 || !app.hasDecorator('realtime')) return;
  const byReason = new Map<string, string[]>();
  for (const r of revoked) {
    const ids = byReason.get(r.reason) ?? [];
    ids.push(r.id);
    byReason.set(r.reason, ids);
  }
  for (const [reason, ids] of byReason) app.realtime.endCredentials(ids, sessionEndOf(reason));
}

/**
 * A deactivated user: every connection and shell of theirs ends, on every instance, and each of their
 * live leases ends as a release does. Lease failures are logged, never thrown: the account is
 * deactivated either way, and the expiry scheduler still ends a lease left behind.
 */
export async function endUserEverywhere(app: FastifyInstance, userId: string): Promise<void> {
  if (app.hasDecorator('realtime')) app.realtime.endUser(userId, sessionEndOf(DEACTIVATED));
  if (!app.hasDecorator('leases')) return;
  const { items } = await app.leases.list(userId);
  for (const lease of items) {
    try {
      await app.leases.unlock(userId, { deviceId: lease.deviceId, serverName: lease.serverName });
    } catch (err) {
      app.log.warn({ err, userId, leaseId: lease.leaseId }, 'ending a deactivated user’s lease failed');
    }
  }
}
