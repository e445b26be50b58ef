// The embedded OpenID Connect provider (oidc-provider), mounted at /idp inside Fastify. It is on
// unless an external provider is configured (OIDC_ISSUER). Accounts are the service's users table;
// its records (sessions, interactions, codes, grants) live in the database (oidc-adapter.ts); its
// signing keys and cookie keys are made once and kept in the database for every instance.
//
// Lifecycle of a sign-in: the console sends the browser to /idp/auth (PKCE S256 required) →
// the provider redirects to our interaction page /idp/interaction/:uid (sign-in or registration
// form, rendered here) → the form posts back, we check the password (same limits as the password
// call) and finish the interaction → the provider redirects to the console's redirect_uri with
// ?code= → the console calls /api/oauth2/getTokenByCode, whose relying party redeems the code at
// /idp/token in-process.
//
// The cli (`bianbu login`) is a second, native client (`bianbu-cli`, public, PKCE): the same pages,
// returning to its loopback listener on any port (RFC 8252 §7.3; src/shared/cli-auth.ts), its code
// redeemed by /api/oauth2/cli-token.
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { AppError } from '#server/errors.ts';
import { CLI_CALLBACK_PATH, CLI_CLIENT_ID, LOOPBACK_REDIRECT_RE } from '#shared/cli-auth.ts';
import type { Language } from '#shared/constants.ts';
import { PASSWORD_MIN, USERNAME_RE } from '#shared/user.ts';
import { createUser, findUserById, type UserRow } from './identity.repo.ts';
import type { IdentityService } from './identity.service.ts';
import { languageOf, PAGE_HEADERS, renderError, renderRegister, renderSignIn, t } from './idp-pages.ts';
import { dbAdapterFactory, pruneOidcRecords } from './oidc-adapter.ts';
import { hashPassword } from './passwords.ts';
import { loadOrCreateSecret } from './secrets.ts';

export const CONSOLE_CLIENT_ID = 'bianbu-console';
export const IDP_PREFIX = '/idp';
/** The console paths a sign-in may return to: matched exactly, never by prefix. */
export const CONSOLE_RETURN_PATHS = ['/mainboard', '/'] as const;
const SCOPES = 'openid profile email phone';

/** The console's public origin: BIANBU_PUBLIC_URL, else localhost on the configured port (development). */
export function publicUrlOf(config: FastifyInstance['config']): string {
  if (config.BIANBU_PUBLIC_URL) return config.BIANBU_PUBLIC_URL.replace(/\/+$/, '');
  return `http://localhost:${config.PORT || 8080}`;
}

/**
 * Whether a redirect target is one of the console's sign-in return URLs: with BIANBU_PUBLIC_URL
 * exactly `${publicUrl}/mainboard` or `${publicUrl}/`; without it (development) the same two paths
 * on the origin the request itself came to.
 */
export function consoleRedirectAllowed(
  value: string,
  publicUrl: string | undefined,
  requestOrigin: string | undefined,
): boolean {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return false;
  }
  if (u.search || u.hash || u.username || u.password) return false;
  if (!(CONSOLE_RETURN_PATHS as readonly string[]).includes(u.pathname)) return false;
  if (u.href !== value && `${u.origin}${u.pathname}` !== value) return false;
  const origin = publicUrl ? new URL(publicUrl).origin : requestOrigin;
  return origin !== undefined && u.origin === origin;
}

/**
 * The origin the provider believes it is served from: BIANBU_PUBLIC_URL when it is configured;
 * otherwise the request's own scheme and host as Fastify sees them, which are the socket's and the
 * Host header's unless the socket peer is a trusted proxy (BIANBU_TRUSTED_PROXIES), whose
 * X-Forwarded-Proto and -Host then count.
 */
export function providerOrigin(
  req: Pick<FastifyRequest, 'protocol' | 'host'>,
  publicUrl: string | undefined,
): { protocol: string; host: string } {
  if (publicUrl) {
    const u = new URL(publicUrl);
    return { protocol: u.protocol.replace(/:$/, ''), host: u.host };
  }
  return { protocol: req.protocol, host: req.host };
}

/**
 * Overwrites the forwarded headers of a request bound for the provider with what this service
 * decided (origin above, client address from Fastify's trust-aware `req.ip`). The provider (koa, with
 * `proxy` on) reads only these: a client's own X-Forwarded-* never reach it.
 */
function pinForwardedHeaders(req: FastifyRequest, publicUrl: string | undefined): void {
  const { protocol, host } = providerOrigin(req, publicUrl);
  const ip = req.ip;
  const headers = req.raw.headers;
  delete headers.forwarded;
  headers['x-forwarded-proto'] = protocol;
  headers['x-forwarded-host'] = host;
  headers['x-forwarded-for'] = ip;
}

export interface EmbeddedIdp {
  provider: Provider;
  issuer: string;
  stop(): void;
}

async function signingKeys(app: FastifyInstance) {
  return loadOrCreateSecret(app.storage, 'idp-jwks', () => {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = privateKey.export({ format: 'jwk' });
    return {
      keys: [{ ...jwk, kid: crypto.randomBytes(12).toString('base64url'), use: 'sig', alg: 'RS256' }],
    };
  });
}

export async function mountEmbeddedIdp(
  app: FastifyInstance,
  identity: IdentityService,
): Promise<EmbeddedIdp> {
  const publicUrl = publicUrlOf(app.config);
  const issuer = `${publicUrl}${IDP_PREFIX}`;
  const jwks = await signingKeys(app);
  const cookieKeys = await loadOrCreateSecret(app.storage, 'idp-cookie-keys', () => [
    crypto.randomBytes(32).toString('base64url'),
  ]);

  const configuration: Configuration = {
    adapter: dbAdapterFactory(app.storage),
    clients: [
      {
        client_id: CONSOLE_CLIENT_ID,
        client_name: 'Bianbu Cloud console',
        token_endpoint_auth_method: 'none',
        application_type: 'web',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: CONSOLE_RETURN_PATHS.map((p) => `${publicUrl}${p}`),
      },
      {
        // Native and public: the provider's own loopback rule lets it return to these on any port.
        client_id: CLI_CLIENT_ID,
        client_name: 'bianbu cli',
        token_endpoint_auth_method: 'none',
        application_type: 'native',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: [`http://127.0.0.1${CLI_CALLBACK_PATH}`, `http://[::1]${CLI_CALLBACK_PATH}`],
      },
    ],
    jwks: jwks as Configuration['jwks'],
    cookies: { keys: cookieKeys },
    pkce: { required: () => true },
    scopes: ['openid', 'profile', 'email', 'phone'],
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name', 'picture'],
      email: ['email'],
      phone: ['phone_number'],
    },
    conformIdTokenClaims: false,
    extraParams: ['screen'],
    features: { devInteractions: { enabled: false }, revocation: { enabled: true } },
    ttl: {
      AuthorizationCode: 60,
      AccessToken: 600,
      IdToken: 600,
      Interaction: 1800,
      Session: 86_400,
      Grant: 86_400 * 30,
    },
    interactions: { url: (_ctx, interaction) => `${IDP_PREFIX}/interaction/${interaction.uid}` },
    async findAccount(_ctx, sub) {
      const user = await findUserById(app.storage.db, sub);
      if (!user?.isActive) return undefined;
      return {
        accountId: user.id,
        claims: async () => ({
          sub: user.id,
          preferred_username: user.username,
          name: user.displayName || user.username,
          ...(user.avatar ? { picture: new URL(user.avatar, publicUrl).href } : {}),
          ...(user.email ? { email: user.email } : {}),
          ...(user.phone ? { phone_number: user.phone } : {}),
        }),
      };
    },
    // The console and the cli are first-party clients: their users are never asked to consent.
    async loadExistingGrant(ctx: KoaContextWithOIDC) {
      const clientId = ctx.oidc.client?.clientId;
      const session = ctx.oidc.session;
      if (!clientId || !session?.accountId) return undefined;
      const grantId =
        (ctx.oidc.result?.consent as { grantId?: string } | undefined)?.grantId ??
        session.grantIdFor(clientId);
      if (grantId) {
        const found = await ctx.oidc.provider.Grant.find(grantId);
        if (found) return found;
      }
      if (clientId !== CONSOLE_CLIENT_ID && clientId !== CLI_CLIENT_ID) return undefined;
      const grant = new ctx.oidc.provider.Grant({ clientId, accountId: session.accountId });
      grant.addOIDCScope(SCOPES);
      await grant.save();
      return grant;
    },
    async renderError(ctx, out, err) {
      const lang = languageOf(ctx.get('cookie'), undefined, ctx.get('accept-language'));
      if (!(err instanceof Error && 'expose' in err && err.expose))
        app.log.warn({ err }, 'sign-in provider error');
      ctx.set(PAGE_HEADERS);
      ctx.body = renderError(lang, `${t(lang, 'error.generic')} (${out.error})`);
    },
  };

  const provider = new Provider(issuer, configuration);
  // koa reads the scheme, host and client address from X-Forwarded-*, which pinForwardedHeaders
  // writes for every /idp request: behind a TLS proxy the provider still knows it is https.
  provider.proxy = true;
  provider.on('server_error', (_ctx, err) => app.log.error({ err }, 'sign-in provider failure'));

  // Exact matching against the registered URLs when the public URL is configured; in development,
  // the two console paths on whatever origin the authorize request came to (the console and the
  // provider are served from one origin, so this is still same-origin and exact).
  // The cli's client keeps the provider's native-client rule (registered loopback URIs, any port),
  // narrowed to exactly /callback on 127.0.0.1 or [::1].
  const publicConfigured = app.config.BIANBU_PUBLIC_URL;
  const nativeRule = provider.Client.prototype.redirectUriAllowed;
  provider.Client.prototype.redirectUriAllowed = function redirectUriAllowed(value: string) {
    if (this.clientId === CLI_CLIENT_ID) return LOOPBACK_REDIRECT_RE.test(value) && nativeRule.call(this, value);
    if (this.clientId !== CONSOLE_CLIENT_ID) return false;
    const ctx = Provider.ctx;
    // Koa's ctx.origin is not reliable here (null); build it from protocol and host (pinned above).
    return consoleRedirectAllowed(value, publicConfigured, ctx ? `${ctx.protocol}://${ctx.host}` : undefined);
  };

  const callback = provider.callback();
  app.addHook('onRequest', async (req) => {
    if (
      req.url === IDP_PREFIX ||
      req.url.startsWith(`${IDP_PREFIX}/`) ||
      req.url.startsWith(`${IDP_PREFIX}?`)
    )
      pinForwardedHeaders(req, publicConfigured);
  });
  await app.register(async (scope) => {
    // The provider parses its own request bodies: Fastify must leave the stream unread here.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    scope.route({
      method: ['GET', 'POST', 'OPTIONS', 'DELETE', 'PUT'],
      url: `${IDP_PREFIX}/*`,
      handler: (req, reply) => {
        reply.hijack();
        const raw = req.raw as typeof req.raw & { originalUrl?: string };
        raw.originalUrl = raw.url;
        raw.url = (raw.url ?? '/').slice(IDP_PREFIX.length) || '/';
        void callback(raw, reply.raw);
      },
    });
  });

  registerInteractions(app, provider, identity);

  const pruneTimer = setInterval(() => {
    pruneOidcRecords(app.storage).catch((err) => app.log.warn({ err }, 'pruning provider records failed'));
  }, 3_600_000);
  pruneTimer.unref();
  return { provider, issuer, stop: () => clearInterval(pruneTimer) };
}

function sendPage(reply: FastifyReply, status: number, html: string) {
  return reply.status(status).headers(PAGE_HEADERS).send(html);
}

function retrySeconds(err: AppError): number {
  return Number(err.headers?.['retry-after'] ?? 60);
}

function registerInteractions(app: FastifyInstance, provider: Provider, identity: IdentityService): void {
  const base = `${IDP_PREFIX}/interaction/:uid`;
  const langOf = (req: FastifyRequest) =>
    languageOf(
      req.headers.cookie,
      (req.query as Record<string, unknown>)?.lang,
      req.headers['accept-language'],
    );
  const rememberLang = (reply: FastifyReply, lang: Language, req: FastifyRequest) => {
    if ((req.query as Record<string, unknown>)?.lang === lang)
      reply.header('set-cookie', `lang=${lang}; Path=/; Max-Age=31536000; SameSite=Lax`);
  };

  async function details(req: FastifyRequest, reply: FastifyReply) {
    try {
      const d = await provider.interactionDetails(req.raw, reply.raw);
      if (d.uid !== (req.params as { uid: string }).uid) return undefined;
      return d;
    } catch {
      return undefined;
    }
  }

  async function finishLogin(req: FastifyRequest, reply: FastifyReply, user: UserRow) {
    reply.hijack();
    await provider.interactionFinished(
      req.raw,
      reply.raw,
      { login: { accountId: user.id, amr: ['pwd'] } },
      { mergeWithLastSubmission: false },
    );
  }

  app.get(base, async (req, reply) => {
    const lang = langOf(req);
    rememberLang(reply, lang, req);
    const d = await details(req, reply);
    if (!d) return sendPage(reply, 400, renderError(lang, t(lang, 'error.sessionExpired')));
    const { uid } = req.params as { uid: string };
    if (d.prompt.name === 'consent') {
      // Only the console's first-party grant reaches here (loadExistingGrant covers it); approve it.
      const grant = new provider.Grant({
        clientId: String(d.params.client_id),
        accountId: d.session?.accountId ?? '',
      });
      grant.addOIDCScope(SCOPES);
      const grantId = await grant.save();
      reply.hijack();
      await provider.interactionFinished(
        req.raw,
        reply.raw,
        { consent: { grantId } },
        { mergeWithLastSubmission: true },
      );
      return;
    }
    const screen = (req.query as Record<string, unknown>).screen ?? d.params.screen;
    if (screen === 'register') {
      if (!app.config.BIANBU_OPEN_REGISTRATION)
        return sendPage(
          reply,
          403,
          renderSignIn({ lang, uid, error: t(lang, 'error.registrationClosed'), registerAllowed: false }),
        );
      return sendPage(reply, 200, renderRegister({ lang, uid }));
    }
    return sendPage(
      reply,
      200,
      renderSignIn({
        lang,
        uid,
        username: typeof d.params.login_hint === 'string' ? d.params.login_hint : '',
        registerAllowed: app.config.BIANBU_OPEN_REGISTRATION,
      }),
    );
  });

  app.post(`${base}/login`, async (req, reply) => {
    const lang = langOf(req);
    const { uid } = req.params as { uid: string };
    const d = await details(req, reply);
    if (d?.prompt.name !== 'login')
      return sendPage(reply, 400, renderError(lang, t(lang, 'error.sessionExpired')));
    const body = (req.body ?? {}) as Record<string, unknown>;
    const username = typeof body.username === 'string' ? body.username.trim().slice(0, 64) : '';
    const password = typeof body.password === 'string' ? body.password.trim().slice(0, 256) : '';
    let user: UserRow;
    try {
      user = await identity.checkPassword(username, password, req.ip, 'idp');
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const error =
        err.status === 429
          ? t(lang, 'error.tooMany', { seconds: retrySeconds(err) })
          : t(lang, 'error.badCredentials');
      if (err.headers) reply.headers(err.headers);
      return sendPage(
        reply,
        err.status === 429 ? 429 : 400,
        renderSignIn({ lang, uid, username, error, registerAllowed: app.config.BIANBU_OPEN_REGISTRATION }),
      );
    }
    await finishLogin(req, reply, user);
  });

  app.post(`${base}/register`, async (req, reply) => {
    const lang = langOf(req);
    const { uid } = req.params as { uid: string };
    const d = await details(req, reply);
    if (d?.prompt.name !== 'login')
      return sendPage(reply, 400, renderError(lang, t(lang, 'error.sessionExpired')));
    if (!app.config.BIANBU_OPEN_REGISTRATION)
      return sendPage(
        reply,
        403,
        renderSignIn({ lang, uid, error: t(lang, 'error.registrationClosed'), registerAllowed: false }),
      );
    const body = (req.body ?? {}) as Record<string, unknown>;
    const str = (k: string, max: number) =>
      typeof body[k] === 'string' ? (body[k] as string).trim().slice(0, max) : '';
    const values = { username: str('username', 64), name: str('name', 101), email: str('email', 254) };
    const password = typeof body.password === 'string' ? body.password : '';
    const password2 = typeof body.password2 === 'string' ? body.password2 : '';
    const problem = !USERNAME_RE.test(values.username)
      ? 'error.usernameInvalid'
      : values.name.length > 100
        ? 'error.nameTooLong'
        : values.email && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(values.email)
          ? 'error.emailInvalid'
          : password.trim().length < PASSWORD_MIN || password.length > 256
            ? 'error.passwordShort'
            : password !== password2
              ? 'error.passwordMismatch'
              : null;
    if (problem) return sendPage(reply, 400, renderRegister({ lang, uid, values, error: t(lang, problem) }));
    try {
      await identity.throttle.take(
        [{ key: `register:ip:${req.ip}`, max: 10, windowMs: 3_600_000 }],
        app.clock.now(),
      );
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      if (err.headers) reply.headers(err.headers);
      return sendPage(
        reply,
        429,
        renderRegister({
          lang,
          uid,
          values,
          error: t(lang, 'error.tooMany', { seconds: retrySeconds(err) }),
        }),
      );
    }
    let user: UserRow;
    try {
      user = await createUser(app.storage.db, {
        username: values.username,
        displayName: values.name || values.username,
        email: values.email || null,
        passwordHash: await hashPassword(password.trim()),
      });
    } catch (err) {
      if (err instanceof AppError && err.status === 409)
        return sendPage(
          reply,
          409,
          renderRegister({ lang, uid, values, error: t(lang, 'error.usernameTaken') }),
        );
      throw err;
    }
    await app.audit.record({
      userId: user.id,
      username: user.username,
      action: 'register',
      result: 'ok',
      ip: req.ip,
    });
    await finishLogin(req, reply, user);
  });

  app.get(`${base}/abort`, async (req, reply) => {
    const lang = langOf(req);
    const d = await details(req, reply);
    if (!d) return sendPage(reply, 400, renderError(lang, t(lang, 'error.sessionExpired')));
    reply.hijack();
    await provider.interactionFinished(
      req.raw,
      reply.raw,
      { error: 'access_denied', error_description: 'End-User aborted interaction' },
      { mergeWithLastSubmission: false },
    );
  });
}
