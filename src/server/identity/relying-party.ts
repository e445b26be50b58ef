// The relying party (openid-client) behind GET /api/oauth2/getTokenByCode. It redeems the code the
// console brings back, with the PKCE verifier the console made (the verifier never reaches the
// provider before this moment), validates the ID token, and maps its subject to a user of ours.
//
// Against the embedded provider the requests go to /idp in-process (app.inject through the same
// route the browser uses), so it works behind any proxy, bind address or TLS terminator; against an
// external provider (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI) they go
// over the network to its discovered endpoints.
import type { FastifyInstance } from 'fastify';
import * as oidc from 'openid-client';
import { badRequest } from '#server/errors.ts';
import { IdentityErrorKey } from '#shared/user.ts';

export interface ExternalProfile {
  issuer: string;
  subject: string;
  username?: string;
  name?: string;
  email?: string;
  picture?: string;
}

export interface ExchangeInput {
  code: string;
  codeVerifier?: string;
  redirectUri: string;
  iss?: string;
}

export interface RelyingPartyOptions {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  /** Route the provider's HTTP calls in-process (embedded provider). */
  inProcess?: FastifyInstance;
}

const exchangeFailed = () =>
  badRequest('The sign-in could not be completed, please sign in again', IdentityErrorKey.exchangeFailed);

function injectFetch(app: FastifyInstance, issuer: string): oidc.CustomFetch {
  const issuerUrl = new URL(issuer);
  return async (url, options) => {
    const u = new URL(url);
    if (u.origin !== issuerUrl.origin || !u.pathname.startsWith(issuerUrl.pathname))
      throw new Error(`refusing to fetch ${u.origin}${u.pathname} outside the embedded provider`);
    const body = options.body instanceof URLSearchParams ? options.body.toString() : options.body;
    const res = await app.inject({
      method: options.method as 'GET' | 'POST',
      url: `${u.pathname}${u.search}`,
      headers: { ...options.headers, host: u.host, 'x-forwarded-proto': u.protocol.replace(':', '') },
      payload: body === undefined || body === null ? undefined : (body as string | Buffer),
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [String(v)]) headers.append(k, one);
    }
    return new Response(res.statusCode === 204 ? null : new Uint8Array(res.rawPayload), {
      status: res.statusCode,
      headers,
    });
  };
}

export class RelyingParty {
  private config: Promise<oidc.Configuration> | null = null;

  constructor(
    private readonly opts: RelyingPartyOptions,
    private readonly log: FastifyInstance['log'],
  ) {}

  get issuer(): string {
    return this.opts.issuer;
  }

  /** Discovery, cached; a failed discovery is retried on the next call. */
  configuration(): Promise<oidc.Configuration> {
    if (!this.config) {
      const { issuer, clientId, clientSecret, inProcess } = this.opts;
      const fetcher = inProcess ? injectFetch(inProcess, issuer) : undefined;
      const execute = issuer.startsWith('http:') ? [oidc.allowInsecureRequests] : [];
      this.config = oidc
        .discovery(
          new URL(issuer),
          clientId,
          { id_token_signed_response_alg: 'RS256' },
          clientSecret ? oidc.ClientSecretPost(clientSecret) : oidc.None(),
          { execute, timeout: 10, ...(fetcher ? { [oidc.customFetch]: fetcher } : {}) },
        )
        .then((c) => {
          if (fetcher) c[oidc.customFetch] = fetcher;
          return c;
        });
      this.config.catch((err) => {
        this.log.warn({ err, issuer }, 'sign-in provider discovery failed');
        this.config = null;
      });
    }
    return this.config;
  }

  async authorizationEndpoint(): Promise<string | undefined> {
    return (await this.configuration()).serverMetadata().authorization_endpoint;
  }

  async exchange(input: ExchangeInput): Promise<ExternalProfile> {
    let config: oidc.Configuration;
    try {
      config = await this.configuration();
    } catch {
      throw exchangeFailed();
    }
    const meta = config.serverMetadata();
    const callback = new URL(input.redirectUri);
    callback.searchParams.set('code', input.code);
    // RFC 9207: this service talks to exactly one provider, so mix-up (what `iss` guards against)
    // cannot happen; a console that did not forward `iss` is given the provider's own.
    if (input.iss) callback.searchParams.set('iss', input.iss);
    else if (meta.authorization_response_iss_parameter_supported)
      callback.searchParams.set('iss', meta.issuer);
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: input.codeVerifier,
        idTokenExpected: true,
      });
      const claims = tokens.claims();
      if (!claims) throw new Error('no ID token');
      let profile: Record<string, unknown> = { ...claims };
      if (!claims.preferred_username && tokens.access_token && meta.userinfo_endpoint) {
        const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
        profile = { ...info, ...claims };
      }
      const str = (k: string) => (typeof profile[k] === 'string' ? (profile[k] as string) : undefined);
      return {
        issuer: meta.issuer,
        subject: claims.sub,
        username: str('preferred_username'),
        name: str('name'),
        email: str('email'),
        picture: str('picture'),
      };
    } catch (err) {
      this.log.info(
        { err: err instanceof Error ? err.message : String(err) },
        'authorization code exchange refused',
      );
      throw exchangeFailed();
    }
  }
}
