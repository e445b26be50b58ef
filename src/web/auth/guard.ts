// The sign-in guard of spec section 4 as a pure decision, run on every navigation.
export type GuardAction =
  | { kind: 'allow' }
  | { kind: 'exchange' }
  | { kind: 'authorize'; remember: string | null }
  | { kind: 'loadUser'; blocking: boolean };

export interface GuardInput {
  token: string;
  userLoaded: boolean;
  /** The authorization code in the URL, if any. */
  code: string | null;
  isPublic: boolean;
  /** Path with query, remembered in the redirect cookie. */
  fullPath: string;
}

export function decideGuard(i: GuardInput): GuardAction {
  if (!i.token) {
    if (i.code) return { kind: 'exchange' };
    if (i.isPublic) return { kind: 'allow' };
    return { kind: 'authorize', remember: i.fullPath };
  }
  // A public page renders at once and learns the user in the background.
  if (!i.userLoaded) return { kind: 'loadUser', blocking: !i.isPublic };
  return { kind: 'allow' };
}
