// Single sign-on from the browser (authorization code + PKCE), as src/shared/user.ts describes it:
// the verifier and state stay in sessionStorage until the code comes back, then travel once with the
// exchange. Only the service talks to the provider's token endpoint.
import { pkceChallenge, randomToken } from './crypto.ts';

const PENDING_KEY = 'bianbu.oidc.pending';

export interface PendingSignIn {
  verifier: string;
  state: string;
  redirectUri: string;
}

/** Adds PKCE, state, language and redirect_uri to the provider URL and remembers the verifier. */
export async function prepareProviderUrl(
  base: string,
  lang: string,
  origin = window.location.origin,
): Promise<string> {
  const url = new URL(base, origin);
  const verifier = randomToken(32);
  const state = randomToken(16);
  url.searchParams.set('code_challenge', await pkceChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', state);
  url.searchParams.set('ui_locales', lang);
  let redirectUri = url.searchParams.get('redirect_uri');
  if (!redirectUri) {
    redirectUri = `${origin}/mainboard`;
    url.searchParams.set('redirect_uri', redirectUri);
  }
  sessionStorage.setItem(
    PENDING_KEY,
    JSON.stringify({ verifier, state, redirectUri } satisfies PendingSignIn),
  );
  return url.toString();
}

/** Reads and forgets the pending sign-in: a code is exchanged at most once. */
export function takePendingSignIn(): PendingSignIn | null {
  const raw = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (!raw) return null;
  try {
    const p = JSON.parse(raw) as PendingSignIn;
    return typeof p.verifier === 'string' && typeof p.state === 'string' ? p : null;
  } catch {
    return null;
  }
}

export class StateMismatchError extends Error {}

/** The query of the exchange call from the URL the provider sent the browser back to. */
export function exchangeQuery(
  search: URLSearchParams,
  pending: PendingSignIn | null,
): { code: string; code_verifier?: string; redirect_uri?: string; iss?: string } {
  const code = search.get('code') ?? '';
  const state = search.get('state');
  const iss = search.get('iss') ?? undefined;
  if (pending) {
    if (state !== pending.state) throw new StateMismatchError('state does not match the pending sign-in');
    return {
      code,
      code_verifier: pending.verifier,
      redirect_uri: pending.redirectUri,
      ...(iss ? { iss } : {}),
    };
  }
  return { code, ...(iss ? { iss } : {}) };
}
