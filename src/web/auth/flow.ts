// Sign-in and sign-out actions shared by the guard, the sign-in pages, the navbar and the palette.
import { SESSION_END_CODES } from '#shared/codes.ts';
import { STORAGE } from '#shared/constants.ts';
import { userCalls } from '#shared/user.ts';
import { ApiError, call } from '#web/api/http.ts';
import { currentLanguage, t } from '#web/i18n/i18n.ts';
import { realtime } from '#web/realtime/client.ts';
import { safeRedirect } from '#web/router/access.ts';
import { routeTable } from '#web/router/table.ts';
import { flattenRoutes } from '#web/router/types.ts';
import { notify } from '#web/state/notices.ts';
import { session, setSessionToken, setUser } from '#web/state/session.ts';
import { publicSettingsState, routeSetOf } from '#web/state/settings.ts';
import {
  readCookie,
  readToken,
  removeApplyInfo,
  removeCookie,
  removeToken,
  writeCookie,
} from '#web/state/storage.ts';
import { exchangeQuery, prepareProviderUrl, takePendingSignIn } from './oidc.ts';

type CallName = (typeof userCalls)[number]['name'];
type CallByName<N extends CallName> = Extract<(typeof userCalls)[number], { name: N }>;

/** The identity calls by name, typed from the shared contract. */
export function userCall<N extends CallName>(name: N): CallByName<N> {
  const found = userCalls.find((c) => c.name === name);
  if (!found) throw new Error(`no call ${name} in the identity contract`);
  return found as CallByName<N>;
}

export function routeSet(): 'full' | 'reduced' {
  return routeSetOf(import.meta.env.VITE_ROUTE_SET as string | undefined, publicSettingsState.value);
}

/** Paths a sign-in may return to: the signed-in pages of the current route set. */
export function returnablePaths(): string[] {
  return flattenRoutes(routeTable, routeSet())
    .filter((r) => !r.node.meta.public && !r.node.redirect?.[routeSet()])
    .map((r) => r.path);
}

export function rememberRedirect(fullPath: string): void {
  if (safeRedirect(fullPath, returnablePaths())) writeCookie(STORAGE.redirectCookie, fullPath);
}

/** Where to go after sign-in: the remembered path when it is one of ours, else /mainboard. */
export function takeRedirect(): string {
  const saved = readCookie(STORAGE.redirectCookie);
  removeCookie(STORAGE.redirectCookie);
  return safeRedirect(saved, returnablePaths()) ?? '/mainboard';
}

/** Sends the browser to the provider's sign-in (or registration) page; false when none is configured. */
export async function goToProvider(kind: 'authorize' | 'register'): Promise<boolean> {
  const oidc = publicSettingsState.value?.oidc;
  const base = kind === 'authorize' ? oidc?.authorizeUrl : oidc?.registerUrl;
  if (!base) return false;
  window.location.assign(await prepareProviderUrl(base, currentLanguage()));
  return true;
}

/** Without a provider the console's own sign-in page is the way in. */
export async function startSignIn(): Promise<void> {
  if (!(await goToProvider('authorize'))) window.location.assign('/login');
}

export async function exchangeCode(search: URLSearchParams): Promise<string> {
  const query = exchangeQuery(search, takePendingSignIn());
  const answer = await call(userCall('getTokenByCode'), query, { silent: true });
  return answer.access_token || answer.accessToken;
}

/** Stores the token and answers the path to continue on. */
export function completeSignIn(token: string): string {
  setSessionToken(token);
  return takeRedirect();
}

export class VerificationFailedError extends Error {}

/** Spec section 4: an empty answer is "Verification failed, please Login again.". */
export async function loadUser(): Promise<void> {
  const info = await call(userCall('userInfo'), {}, { silent: true });
  if (!info?.username) throw new VerificationFailedError(t('auth:verifyFailed'));
  setUser({
    id: info.id,
    username: info.username,
    name: info.name,
    avatar: info.avatar,
    perms: info.perms,
    roles: info.roles,
    groupResource: info.groupResource
      ? { id: info.groupResource.id, type: info.groupResource.type, name: info.groupResource.name }
      : null,
  });
}

/** A failed user load removes the token and reloads, unless the re-login dialog already asks. */
export function onUserLoadFailed(err: unknown): void {
  if (err instanceof ApiError && SESSION_END_CODES.includes(err.code)) return;
  notify('error', err instanceof Error && err.message ? err.message : t('auth:verifyFailed'));
  removeToken();
  session.token = '';
  window.setTimeout(() => window.location.reload(), 1200);
}

/**
 * Logout (navbar, palette): the service revokes the token, the token and the apply-info cookie go,
 * and the root path loads afresh so that the state, every store, socket and timer go with it.
 */
export async function logoutAndLeave(): Promise<void> {
  // The socket goes first: the service ends it with the token (ERROR 50008), and this tab must not
  // take its own logout for a session ended elsewhere and ask to sign in again.
  void realtime.stop();
  if (readToken()) {
    try {
      await call(userCall('userLogout'), {}, { silent: true });
    } catch {
      // Signing out locally must work even when the service cannot be reached.
    }
  }
  // Only the stored token and cookie go here: emptying the live session first would let the guard
  // of the current (private) page send the browser to the provider before the root path loads.
  removeToken();
  removeApplyInfo();
  window.location.assign('/');
}

let userLoad: Promise<void> | null = null;

/** Several components may ask at once; one request answers them all. */
export function loadUserOnce(): Promise<void> {
  userLoad ??= loadUser().finally(() => {
    userLoad = null;
  });
  return userLoad;
}
