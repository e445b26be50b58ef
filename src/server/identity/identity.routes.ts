// The identity feature: seeds accounts on first start, mounts the embedded OpenID provider (unless
// an external one is configured), and implements every call of src/shared/user.ts and of
// src/shared/cli-auth.ts (the cli's browser sign-in).
import fs from 'node:fs';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { revokeCredentialById } from '#server/auth/tokens.ts';
import { loadAuthUser } from '#server/auth/user-context.ts';
import { memberships, users } from '#server/db/schema/identity.ts';
import { AppError, badRequest, forbidden, notFound } from '#server/errors.ts';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { endRevokedSessions } from '#server/realtime/session-end.ts';
import { CLI_CLIENT_ID, cliAuthCalls } from '#shared/cli-auth.ts';
import { IdentityErrorKey, userCalls } from '#shared/user.ts';
import {
  createOrg,
  createRole,
  createUserAsAdmin,
  deleteOrg,
  deleteRole,
  isGlobalAdmin,
  listAudit,
  listMemberships,
  listOrgs,
  listOutbox,
  listRoles,
  listUsers,
  manageableUser,
  removeMembership,
  setMembership,
  updateOrg,
  updateRole,
  updateUserAsAdmin,
} from './admin.ts';
import {
  AVATAR_MAX_BYTES,
  AVATAR_NAME,
  AVATAR_URL_PREFIX,
  avatarDir,
  avatarTooLarge,
  checkAvatar,
  removeAvatar,
  storeAvatar,
} from './avatar.ts';
import {
  createUser,
  findUserById,
  findUserBySubject,
  findUserByUsername,
  freeUsername,
  type UserRow,
  userInfoOf,
} from './identity.repo.ts';
import { IdentityService } from './identity.service.ts';
import {
  CONSOLE_CLIENT_ID,
  consoleRedirectAllowed,
  type EmbeddedIdp,
  mountEmbeddedIdp,
  publicUrlOf,
} from './idp.ts';
import { keymapHandlers } from './keymap.routes.ts';
import { loadLoginKey } from './login-key.ts';
import { LogOutboxSender } from './phone-sender.ts';
import { type ExternalProfile, RelyingParty } from './relying-party.ts';
import { seedIdentity } from './seed.ts';
import { Throttle } from './throttle.ts';

interface IdentityState {
  idp: EmbeddedIdp | null;
  rp: RelyingParty;
  /** The cli's client at the embedded provider; null with an external provider. */
  cliRp: RelyingParty | null;
  oidcPublic: FastifyInstance['oidcPublic'];
  timers: NodeJS.Timeout[];
}

const states = new WeakMap<FastifyInstance, IdentityState>();

function stateOf(app: FastifyInstance): IdentityState {
  const s = states.get(app);
  if (!s) throw new Error('identity feature not set up');
  return s;
}

function requestOrigin(req: FastifyRequest): string {
  return `${req.protocol}://${req.host}`;
}

async function setup(app: FastifyInstance): Promise<void> {
  const throttle = new Throttle(app.storage);
  const sender = new LogOutboxSender(app.storage.db, app.log, () => app.clock.now());
  const identity = await IdentityService.create(app, await loadLoginKey(app.storage), throttle, sender);
  app.decorate('identity', identity);
  await seedIdentity(app);

  const cfg = app.config;
  const state: IdentityState = {
    idp: null,
    rp: null as unknown as RelyingParty,
    cliRp: null,
    oidcPublic: undefined,
    timers: [],
  };
  states.set(app, state);
  app.decorate('oidcPublic', { getter: () => state.oidcPublic });

  if (cfg.OIDC_ISSUER) {
    if (!cfg.OIDC_CLIENT_ID) throw new Error('OIDC_CLIENT_ID is required with OIDC_ISSUER');
    state.rp = new RelyingParty(
      { issuer: cfg.OIDC_ISSUER, clientId: cfg.OIDC_CLIENT_ID, clientSecret: cfg.OIDC_CLIENT_SECRET },
      app.log,
    );
    const publish = async () => {
      const endpoint = await state.rp.authorizationEndpoint();
      if (!endpoint) return;
      const q = new URLSearchParams({
        client_id: cfg.OIDC_CLIENT_ID ?? '',
        response_type: 'code',
        scope: 'openid profile email',
      });
      if (cfg.OIDC_REDIRECT_URI) q.set('redirect_uri', cfg.OIDC_REDIRECT_URI);
      const authorizeUrl = `${endpoint}${endpoint.includes('?') ? '&' : '?'}${q}`;
      state.oidcPublic = {
        authorizeUrl,
        registerUrl: cfg.OIDC_REGISTER_URL ?? `${authorizeUrl}&prompt=create`,
        clientId: cfg.OIDC_CLIENT_ID ?? '',
      };
    };
    // An unreachable provider must not stop the service: keep trying until its discovery answers.
    await publish().catch(() => {
      const timer = setInterval(() => {
        publish()
          .then(() => clearInterval(timer))
          .catch(() => {});
      }, 30_000);
      timer.unref();
      state.timers.push(timer);
    });
    return;
  }

  state.idp = await mountEmbeddedIdp(app, identity);
  state.rp = new RelyingParty(
    { issuer: state.idp.issuer, clientId: CONSOLE_CLIENT_ID, inProcess: app },
    app.log,
  );
  state.cliRp = new RelyingParty(
    { issuer: state.idp.issuer, clientId: CLI_CLIENT_ID, inProcess: app },
    app.log,
  );
  // prompt=login: the console's own token is the session; signing out of the console must not be
  // undone by a lingering provider session on the next visit.
  const q = new URLSearchParams({
    client_id: CONSOLE_CLIENT_ID,
    response_type: 'code',
    scope: 'openid profile',
    prompt: 'login',
  });
  if (cfg.BIANBU_PUBLIC_URL) q.set('redirect_uri', `${publicUrlOf(cfg)}/mainboard`);
  const base = cfg.BIANBU_PUBLIC_URL ? publicUrlOf(cfg) : '';
  state.oidcPublic = {
    authorizeUrl: `${base}/idp/auth?${q}`,
    registerUrl: `${base}/idp/auth?${q}&screen=register`,
    clientId: CONSOLE_CLIENT_ID,
  };

  const prune = setInterval(() => {
    throttle.prune(app.clock.now()).catch((err) => app.log.warn({ err }, 'pruning throttle rows failed'));
  }, 3_600_000);
  prune.unref();
  state.timers.push(prune);
}

/** The redirect_uri the code was issued for: validated, never taken on trust. */
function exchangeRedirect(app: FastifyInstance, req: FastifyRequest, given: string | undefined): string {
  const cfg = app.config;
  const notAllowed = () =>
    badRequest('This redirect_uri is not allowed', IdentityErrorKey.redirectNotAllowed);
  if (cfg.OIDC_ISSUER && cfg.OIDC_REDIRECT_URI) {
    if (given && given !== cfg.OIDC_REDIRECT_URI) throw notAllowed();
    return cfg.OIDC_REDIRECT_URI;
  }
  const origin = cfg.BIANBU_PUBLIC_URL ? publicUrlOf(cfg) : requestOrigin(req);
  const value = given ?? `${origin}/mainboard`;
  if (!consoleRedirectAllowed(value, cfg.BIANBU_PUBLIC_URL, requestOrigin(req))) throw notAllowed();
  return value;
}

async function userForProfile(
  app: FastifyInstance,
  profile: ExternalProfile,
  embedded: boolean,
): Promise<UserRow | undefined> {
  const db = app.storage.db;
  if (embedded) return findUserById(db, profile.subject);
  const linked = await findUserBySubject(db, profile.issuer, profile.subject);
  if (linked) return linked;
  // Never linked to an existing local account by name: the external provider's usernames are not ours.
  const wanted = profile.username ?? profile.email?.split('@')[0] ?? `user_${profile.subject.slice(0, 8)}`;
  return createUser(db, {
    username: await freeUsername(db, wanted),
    displayName: profile.name ?? profile.username,
    email: profile.email ?? null,
    oidcIssuer: profile.issuer,
    oidcSubject: profile.subject,
  });
}

async function boardCount(app: FastifyInstance): Promise<number> {
  const [reg] = await app.storage.query<{ t: string | null }>(
    "select to_regclass('public.boards')::text as t",
  );
  if (!reg?.t) return 0;
  try {
    const [row] = await app.storage.query<{ n: number | string }>(
      'select count(*) as n from boards where retired_at is null',
    );
    return Number(row.n);
  } catch {
    const [row] = await app.storage.query<{ n: number | string }>('select count(*) as n from boards');
    return Number(row.n);
  }
}

function calls(app: FastifyInstance) {
  const db = () => app.storage.db;
  const needUser = <T>(u: T | null): T => {
    if (!u) throw forbidden();
    return u;
  };
  const sessionOnly = (kind: string) => {
    if (kind !== 'access') throw forbidden('API keys cannot manage API keys; sign in to do that');
  };

  const exchangeFailed = () =>
    badRequest('The sign-in could not be completed, please sign in again', IdentityErrorKey.exchangeFailed);

  /**
   * A code exchanged for a session of `method`: a failure (the exchange, no such user, an inactive
   * one) is audited and answered as exchange_failed; a success answers the user and their new token.
   */
  const sessionFromCode = async (
    method: 'cli' | 'oidc',
    ip: string,
    userOf: () => Promise<UserRow | undefined>,
  ): Promise<{ user: UserRow; token: string }> => {
    let user: UserRow | undefined;
    try {
      user = await userOf();
    } catch (err) {
      await app.audit.record({ action: 'login', result: 'failed', ip, detail: { method } });
      throw err;
    }
    if (!user?.isActive) {
      await app.audit.record({
        userId: user?.id,
        username: user?.username,
        action: 'login',
        result: 'failed',
        ip,
        detail: { method },
      });
      throw exchangeFailed();
    }
    return { user, token: await app.identity.issueSession(user, method, ip) };
  };

  const cliCalls = implement(cliAuthCalls, {
    cliLoginConfig: async () => {
      if (!stateOf(app).cliRp)
        throw notFound(
          'This service signs in through an external provider: sign in to the cli with an API key',
        );
      // prompt=login as for the console: a lingering provider session never signs the cli in unseen.
      const q = new URLSearchParams({
        client_id: CLI_CLIENT_ID,
        response_type: 'code',
        scope: 'openid profile',
        prompt: 'login',
      });
      const base = app.config.BIANBU_PUBLIC_URL ? publicUrlOf(app.config) : '';
      return { authorizeUrl: `${base}/idp/auth?${q}`, clientId: CLI_CLIENT_ID };
    },
    cliTokenByCode: async (input, { ip }) => {
      const rp = stateOf(app).cliRp;
      if (!rp) throw notFound();
      // The provider checks that the code was issued to bianbu-cli for this very redirect_uri and
      // challenge; the schema has already kept the redirect_uri to a loopback /callback.
      const { user, token } = await sessionFromCode('cli', ip, async () => {
        const profile = await rp.exchange({
          code: input.code,
          codeVerifier: input.code_verifier,
          redirectUri: input.redirect_uri,
          iss: input.iss,
        });
        return findUserById(db(), profile.subject);
      });
      const ttlMs = app.config.BIANBU_TOKEN_TTL_HOURS * 3_600_000;
      return {
        accessToken: token,
        token_type: 'Bearer' as const,
        expiresAt: new Date(app.clock.now().getTime() + ttlMs).toISOString(),
        username: user.username,
      };
    },
  });

  const mainCalls = implement(userCalls, {
    getTokenByCode: async (input, { req, ip }) => {
      const state = stateOf(app);
      const redirectUri = exchangeRedirect(app, req, input.redirect_uri);
      const { token } = await sessionFromCode('oidc', ip, async () => {
        const profile = await state.rp.exchange({
          code: input.code,
          codeVerifier: input.code_verifier,
          redirectUri,
          iss: input.iss,
        });
        return userForProfile(app, profile, state.idp !== null);
      });
      return {
        access_token: token,
        accessToken: token,
        token_type: 'Bearer' as const,
        expires_in: Math.round(app.config.BIANBU_TOKEN_TTL_HOURS * 3600),
      };
    },
    userPublicKey: async () => ({ publicKey: app.identity.loginKey.publicKeyPem }),
    userLogin: async ({ username, password }, { ip }) => ({
      accessToken: await app.identity.passwordLogin(username, password, ip),
    }),
    userPhoneCode: async ({ phone }, { ip }) => app.identity.sendPhoneCode(phone, ip),
    userPhoneLogin: async ({ phone, code }, { ip }) => ({
      accessToken: await app.identity.phoneLogin(phone, code, ip),
    }),
    rainierLogin: async ({ sequenceCode }, { ip }) => ({
      accessToken: await app.identity.sequenceLogin(sequenceCode, ip),
    }),
    userInfo: async (_input, { user }) => {
      const me = needUser(user);
      const row = await findUserById(db(), me.id);
      if (!row) throw notFound();
      return userInfoOf(db(), row, me.perms);
    },
    userSwitchOrg: async ({ orgId }, { user }) => {
      const me = needUser(user);
      const [m] = await db()
        .select({ orgId: memberships.orgId })
        .from(memberships)
        .where(and(eq(memberships.userId, me.id), eq(memberships.orgId, orgId)))
        .limit(1);
      if (!m) throw notFound('No such organisation', IdentityErrorKey.notMember);
      await db().update(users).set({ currentOrgId: orgId }).where(eq(users.id, me.id));
      const fresh = await loadAuthUser(db(), me.id, me.credentialId, me.credentialKind);
      const row = await findUserById(db(), me.id);
      if (!fresh || !row) throw notFound();
      return userInfoOf(db(), row, fresh.perms);
    },
    userLogout: async (_input, { user }) => {
      const me = needUser(user);
      // The token's open realtime connections and its shells end with it, on every instance.
      endRevokedSessions(app, await revokeCredentialById(db(), me.credentialId, 'logout', app.clock.now()));
      return null;
    },
    userApplyInfo: async (_input, { user }) => {
      const me = needUser(user);
      return app.userApplies ? app.userApplies(me.id) : [];
    },
    apikeyGet: async (_input, { user }) => {
      const me = needUser(user);
      sessionOnly(me.credentialKind);
      return app.identity.currentApiKey(me.id);
    },
    apikeyRefresh: async (_input, { user, ip }) => {
      const me = needUser(user);
      sessionOnly(me.credentialKind);
      const answer = await app.identity.newApiKey(me.id);
      await app.audit.record({
        userId: me.id,
        username: me.username,
        action: 'apikeyRefresh',
        result: 'ok',
        ip,
      });
      return answer;
    },
    userAvatarUpload: async (_input, { user, req }) => {
      const me = needUser(user);
      let buf: Buffer;
      try {
        const file = await req.file({ limits: { fileSize: AVATAR_MAX_BYTES, files: 1 } });
        if (file?.fieldname !== 'avatar')
          throw badRequest('Send the image in the field "avatar"', IdentityErrorKey.avatarMissing);
        buf = await file.toBuffer();
      } catch (err) {
        if (err instanceof AppError) throw err;
        const code = (err as { code?: string }).code;
        if (code === 'FST_REQ_FILE_TOO_LARGE') throw avatarTooLarge();
        throw badRequest(
          'Send the image as multipart/form-data in the field "avatar"',
          IdentityErrorKey.avatarMissing,
        );
      }
      const { ext } = checkAvatar(buf);
      const name = await storeAvatar(app.config.dataDir, me.id, buf, ext);
      const url = `${AVATAR_URL_PREFIX}${name}`;
      const before = await app.identity.setAvatar(me.id, url);
      await removeAvatar(app.config.dataDir, before).catch((err) =>
        app.log.warn({ err }, 'removing the old avatar failed'),
      );
      return { files: { avatar: url } };
    },
    userAvatarImage: async (_input, { req, reply }) => {
      const { file } = req.params as { file: string };
      if (!AVATAR_NAME.test(file)) throw notFound();
      const full = path.join(avatarDir(app.config.dataDir), file);
      try {
        await fs.promises.access(full);
      } catch {
        throw notFound();
      }
      reply
        .type(file.endsWith('.png') ? 'image/png' : 'image/jpeg')
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox");
      return fs.createReadStream(full);
    },
    licenseDetail: async () => {
      const cfg = app.config;
      if (!cfg.XPACK_ENABLED)
        throw notFound('The licence is managed when XPACK is enabled', IdentityErrorKey.licenseDisabled);
      const today = app.clock.now().toISOString().slice(0, 10);
      return {
        date_expired: cfg.BIANBU_LICENSE_EXPIRES,
        corporation: cfg.BIANBU_LICENSE_CORPORATION,
        asset_count: cfg.BIANBU_LICENSE_ASSETS,
        current_asset_count: await boardCount(app),
        is_valid: cfg.BIANBU_LICENSE_EXPIRES >= today,
      };
    },

    adminSequenceCodeCreate: async (input, { user, ip }) => {
      const me = needUser(user);
      let target = await findUserByUsername(db(), input.username);
      if (!target) {
        if (!input.createIfMissing) throw notFound('No such user');
        target = await createUser(db(), {
          username: input.username,
          displayName: input.name,
          orgId: isGlobalAdmin(me) ? undefined : (me.orgId ?? undefined),
        });
      } else {
        target = await manageableUser(app, me, target.id);
      }
      if (!target.isActive) throw notFound('No such user');
      const { sequenceCode, expiresAt } = await app.identity.mintSequenceCode(
        target.id,
        input.ttlSeconds,
        me.id,
      );
      await app.audit.record({
        userId: me.id,
        username: me.username,
        action: 'sequence_code_minted',
        target: target.username,
        result: 'ok',
        ip,
      });
      return {
        sequenceCode,
        expiresAt: expiresAt.toISOString(),
        userId: target.id,
        username: target.username,
      };
    },
    adminUserList: async (q, { user }) => listUsers(app, needUser(user), q),
    adminUserCreate: async (input, { user }) => createUserAsAdmin(app, needUser(user), input),
    adminUserUpdate: async (input, { user }) => updateUserAsAdmin(app, needUser(user), input),
    adminUserDeactivate: async ({ id }, { user }) =>
      updateUserAsAdmin(app, needUser(user), { id, isActive: false }),
    adminOrgList: async (_q, { user }) => listOrgs(app, needUser(user)),
    adminOrgCreate: async (input, { user }) => createOrg(app, needUser(user), input),
    adminOrgUpdate: async (input, { user }) => updateOrg(app, needUser(user), input),
    adminOrgDelete: async ({ id }, { user }) => {
      await deleteOrg(app, needUser(user), id);
      return null;
    },
    adminRoleList: async () => listRoles(app),
    adminRoleCreate: async (input, { user }) => createRole(app, needUser(user), input),
    adminRoleUpdate: async (input, { user }) => updateRole(app, needUser(user), input),
    adminRoleDelete: async ({ id }, { user }) => {
      await deleteRole(app, needUser(user), id);
      return null;
    },
    adminMembershipList: async (q, { user }) => listMemberships(app, needUser(user), q),
    adminMembershipSet: async (input, { user }) => setMembership(app, needUser(user), input),
    adminMembershipRemove: async (input, { user }) => {
      await removeMembership(app, needUser(user), input);
      return null;
    },
    adminPhoneOutbox: async (q, { user }) => listOutbox(app, needUser(user), q),
    adminAuditList: async (q, { user }) => listAudit(app, needUser(user), q),
  });
  return [...mainCalls, ...cliCalls];
}

export const identityFeature: Feature = {
  name: 'identity',
  setup,
  calls: (app) => [...calls(app), ...keymapHandlers(app)],
  stop: (app) => {
    const s = states.get(app);
    if (!s) return;
    s.idp?.stop();
    for (const t of s.timers) clearInterval(t);
  },
};
