import { describe, expect, it } from 'vitest';
import { decideGuard, type GuardInput } from '#web/auth/guard.ts';

const base: GuardInput = {
  token: '',
  userLoaded: false,
  code: null,
  isPublic: false,
  fullPath: '/workbench?x=1',
};

describe('the sign-in guard (spec section 4)', () => {
  it('exchanges an authorization code when there is no token, on any path', () => {
    expect(decideGuard({ ...base, code: 'abc' })).toEqual({ kind: 'exchange' });
    expect(decideGuard({ ...base, code: 'abc', isPublic: true })).toEqual({ kind: 'exchange' });
  });

  it('remembers the wanted path and goes to the provider without token or code on a private path', () => {
    expect(decideGuard(base)).toEqual({ kind: 'authorize', remember: '/workbench?x=1' });
  });

  it('lets a signed-out visitor see public pages', () => {
    expect(decideGuard({ ...base, isPublic: true })).toEqual({ kind: 'allow' });
  });

  it('loads the user when a token exists but no user is loaded, blocking only private pages', () => {
    expect(decideGuard({ ...base, token: 't' })).toEqual({ kind: 'loadUser', blocking: true });
    expect(decideGuard({ ...base, token: 't', isPublic: true })).toEqual({
      kind: 'loadUser',
      blocking: false,
    });
  });

  it('ignores a code once a token is stored', () => {
    expect(decideGuard({ ...base, token: 't', userLoaded: true, code: 'abc' })).toEqual({ kind: 'allow' });
  });
});
