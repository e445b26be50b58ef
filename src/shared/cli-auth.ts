// Browser sign-in of the `bianbu` cli (issue 15), as `gh auth login` and `tsh login` do it: the
// authorization code flow with PKCE (S256) of the embedded provider, returning to a loopback
// listener the cli opens for that one sign-in (RFC 8252 §7.3).
//
// How the cli uses these calls:
//   1. `cliLoginConfig` → `authorizeUrl` (may be relative to the service's URL: resolve it against
//      the URL the cli talks to) and `clientId` (`bianbu-cli`, a public client of the provider with
//      no secret, allowed to return to http://127.0.0.1:<any port>/callback or http://[::1]:<port>/callback).
//      A service signing in through an external provider has no such client and answers `resource.not_found`
//      (as an older service without the call does): the cli then says to sign in with an API key.
//   2. Listen on 127.0.0.1 port 0, make `code_verifier`, `code_challenge` = base64url(SHA-256(verifier))
//      and a random `state`; set `redirect_uri`, `state`, `code_challenge`, `code_challenge_method=S256`
//      on the authorize URL, open the browser there (and print it).
//   3. The provider's sign-in pages send the browser to `redirect_uri?code=&state=&iss=`. A callback
//      whose `state` is not the one made in step 2 is refused and the cli keeps waiting.
//   4. `cliTokenByCode {code, code_verifier, redirect_uri, iss?}` redeems the code (for the
//      `bianbu-cli` client, at the provider in-process) and answers the service's own access token:
//      opaque, stored only as its hash, expiring after BIANBU_TOKEN_TTL_HOURS, revoked by `userLogout`
//      (`bianbu logout`), by deactivation, and — with BIANBU_SINGLE_SESSION — by a later sign-in
//      elsewhere, exactly like a console sign-in (the audit log names the method `cli`). The cli keeps
//      it in its profile with `kind: "token"`.
import { z } from 'zod';
import { defineCall } from './http.ts';

/** Client id of the cli at the embedded provider. */
export const CLI_CLIENT_ID = 'bianbu-cli';
/** The path of the cli's loopback listener. */
export const CLI_CALLBACK_PATH = '/callback';

/** http://127.0.0.1:<port>/callback or http://[::1]:<port>/callback, nothing else (RFC 8252 §7.3, §8.3). */
export const LOOPBACK_REDIRECT_RE = /^http:\/\/(127\.0\.0\.1|\[::1\]):([1-9][0-9]{0,4})\/callback$/;

export const loopbackRedirectUri = z
  .string()
  .max(64)
  .refine((v) => {
    const m = LOOPBACK_REDIRECT_RE.exec(v);
    return Boolean(m && Number(m[2]) <= 65535);
  }, 'must be http://127.0.0.1:<port>/callback or http://[::1]:<port>/callback');

export const pkceVerifier = z
  .string()
  .regex(/^[A-Za-z0-9\-._~]{43,128}$/, 'must be 43–128 characters of A-Z a-z 0-9 - . _ ~');

export const cliAuthCalls = [
  defineCall({
    name: 'cliLoginConfig',
    method: 'GET',
    path: '/api/oauth2/cli-login',
    auth: 'public',
    response: z.object({
      /** The provider's authorize URL with client_id, response_type, scope and prompt already set. */
      authorizeUrl: z.string(),
      clientId: z.string(),
    }),
    summary: 'Where the cli sends the browser for a sign-in (the provider’s authorize URL for bianbu-cli)',
  }),
  defineCall({
    name: 'cliTokenByCode',
    method: 'POST',
    path: '/api/oauth2/cli-token',
    auth: 'public',
    request: z.object({
      code: z.string().min(1).max(4096),
      code_verifier: pkceVerifier,
      redirect_uri: loopbackRedirectUri,
      /** The `iss` of the authorization response (RFC 9207), when the provider sent one. */
      iss: z.string().max(2048).optional(),
    }),
    response: z.object({
      accessToken: z.string(),
      token_type: z.literal('Bearer'),
      expiresAt: z.string(),
      username: z.string(),
    }),
    summary: 'Exchange the code of a cli browser sign-in (bianbu-cli, loopback redirect) for an access token',
  }),
] as const;
