// Who may reach a board's desktop or code-server outside the call registration path (a WebSocket, an
// iframe on the code origin): the sign-in checked again, the caller's live apply resolved by the
// lifecycle feature, and the control messages that end such a session. The /code/ proxy uses these;
// the /vnc/ bridge does the same steps inline.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { recheckCredential } from '#server/auth/tokens.ts';
import { type AuthUser, loadAuthUser } from '#server/auth/user-context.ts';
import { AppError } from '#server/errors.ts';
import type { CallContext, ResolvedApply } from '#server/http/handlers.ts';
import type { BusMessage } from '#server/realtime/bus.ts';

/** The sign-in a session was opened with. */
export interface SignIn {
  userId: string;
  credentialId: string;
  credentialKind: AuthUser['credentialKind'];
}

/** The user of a sign-in that is still live (not revoked, expired or deactivated); throws its session code. */
export async function liveUser(app: FastifyInstance, s: SignIn): Promise<AuthUser> {
  const db = app.storage.db;
  await recheckCredential(db, s.credentialId, app.clock.now());
  const user = await loadAuthUser(db, s.userId, s.credentialId, s.credentialKind);
  if (!user) throw new AppError(200, 50008, 'session.ended', 'The sign-in ended');
  return user;
}

/** The caller's live apply `applyId` as the lifecycle feature resolves it for calls; throws its not-found keys. */
export async function liveApply(
  app: FastifyInstance,
  user: AuthUser,
  ip: string,
  applyId: string,
): Promise<ResolvedApply> {
  if (!app.resolveApply) throw new AppError(503, 50300, 'apply.unavailable', 'Applies are not available');
  const req = { headers: { applyaccess: applyId }, ip, body: { applyId } } as unknown as FastifyRequest;
  const ctx: CallContext = { app, req, reply: null as unknown as FastifyReply, user, apply: null, ip };
  return app.resolveApply(ctx, { applyId });
}

/** What a control message (rt.ctl) does to a session on a board. */
export type ControlCut =
  /** The session is over: the apply ended, the guest was removed, or the sign-in ended (`signIn`). */
  | { kind: 'end'; reason: string; signIn: boolean }
  /** Its connections are cut (the board reset or flashed), the apply may live on. */
  | { kind: 'cut'; reason: string };

export function controlCut(
  m: BusMessage,
  s: { applyId: string; deviceId: string; userId: string; credentialId: string },
  fallbackReason: string,
): ControlCut | null {
  const h = m.h;
  const reason = String(h.reason ?? fallbackReason);
  if (h.t === 'closeApply' && h.applyId === s.applyId) return { kind: 'end', reason, signIn: false };
  if (h.t === 'closeBoard' && h.deviceId === s.deviceId) return { kind: 'cut', reason };
  if (h.t === 'kickGuest' && h.deviceId === s.deviceId && h.userId === s.userId)
    return { kind: 'end', reason, signIn: false };
  if (h.t === 'endSessions') {
    const ids = Array.isArray(h.ids) ? h.ids.map(String) : [];
    if (h.userId === s.userId || ids.includes(s.credentialId))
      return { kind: 'end', reason: 'session.ended', signIn: true };
  }
  return null;
}
