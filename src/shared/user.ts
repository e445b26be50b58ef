// Identity and access: sign-in (single sign-on, password, phone code, third-party sequence code),
// the current user, API keys, avatar, licence detail and the administration of users, organisations,
// roles, memberships, the phone-code outbox and the audit log.
//
// How the console drives single sign-on (authorization code + PKCE, the verifier never leaves the
// browser until the exchange):
//   1. GET /api/v1/settings/public/ → `oidc.authorizeUrl` (may be relative to the console's origin:
//      resolve it against `location.origin`) and `oidc.registerUrl`.
//   2. Make `code_verifier` (43–128 chars of [A-Za-z0-9-._~], e.g. 32 random bytes base64url),
//      `code_challenge` = base64url(SHA-256(verifier)), a random `state`. Copy the authorize URL and
//      set `code_challenge`, `code_challenge_method=S256`, `state`, `ui_locales` (the `lang` cookie);
//      keep its `redirect_uri` if present, else set `redirect_uri=${location.origin}/mainboard`.
//      Keep {verifier, state, redirect_uri} in sessionStorage, then send the browser there.
//   3. Back on the console with `?code=&state=` (and `iss`): compare `state` with the stored one, then
//      GET /api/oauth2/getTokenByCode?code=…&code_verifier=…&redirect_uri=… (add `iss` when present).
//      The answer's `access_token` (also `accessToken`) is the service's own token.
// The register page is `registerUrl`, the same flow with a sign-up screen first: prepare it exactly
// like the authorize URL.
import { z } from 'zod';
import { defineCall } from './http.ts';
import { idString } from './ids.ts';

/** Stable error keys of this feature (the console words them via locales/<lng>/errors.json). */
export const IdentityErrorKey = {
  badCredentials: 'auth.bad_credentials',
  undecryptable: 'auth.payload_undecryptable',
  codeInvalid: 'auth.code_invalid',
  sequenceInvalid: 'auth.sequence_invalid',
  exchangeFailed: 'auth.oidc_exchange_failed',
  redirectNotAllowed: 'auth.redirect_not_allowed',
  avatarMissing: 'avatar.missing',
  avatarNotImage: 'avatar.not_image',
  avatarTooLarge: 'avatar.too_large',
  avatarTooSmall: 'avatar.too_small',
  licenseDisabled: 'license.disabled',
  usernameTaken: 'user.username_taken',
  phoneTaken: 'user.phone_taken',
  orgExists: 'org.exists',
  roleExists: 'role.exists',
  builtinProtected: 'rbac.builtin_protected',
  inUse: 'rbac.in_use',
  notMember: 'org.not_member',
} as const;
export type IdentityErrorKey = (typeof IdentityErrorKey)[keyof typeof IdentityErrorKey];

/** Permission entries of this feature (spec section 6 form `app.action_resource`). */
export const IdentityPerm = {
  viewUser: 'rbac.view_user',
  addUser: 'rbac.add_user',
  changeUser: 'rbac.change_user',
  delUser: 'rbac.del_user',
  viewOrg: 'rbac.view_organization',
  addOrg: 'rbac.add_organization',
  changeOrg: 'rbac.change_organization',
  delOrg: 'rbac.del_organization',
  viewRole: 'rbac.view_role',
  addRole: 'rbac.add_role',
  changeRole: 'rbac.change_role',
  delRole: 'rbac.del_role',
  viewMembership: 'rbac.view_membership',
  changeMembership: 'rbac.change_membership',
  addSequenceCode: 'rbac.add_sequencecode',
  viewOutbox: 'settings.view_outbox',
  viewAudit: 'audit.view_log',
  changeLicense: 'settings.change_license',
} as const;

/** Ids of the organisations and roles created on first start. */
export const BUILTIN_ORG = {
  root: 'ROOT',
  superAdmin: 'SuperAdmin',
  systemAdmin: 'SystemAdmin',
  vipDeveloper: 'VIP_Developer',
  default: 'Default',
} as const;
export const BUILTIN_ROLE = {
  superAdmin: 'superadmin',
  orgAdmin: 'org_admin',
  orgAuditor: 'org_auditor',
  orgUser: 'org_user',
} as const;

export const PHONE_CODE_TTL_SECONDS = 300;
export const PHONE_CODE_RESEND_SECONDS = 60;
export const SEQUENCE_CODE_DEFAULT_TTL_SECONDS = 120;
export const SEQUENCE_CODE_MAX_TTL_SECONDS = 600;

const phone = z
  .string()
  .trim()
  .regex(/^\+?[0-9]{6,20}$/, 'must be a phone number of 6 to 20 digits, optionally with a leading +');
/** Usernames: 2–64 letters, digits or _ . @ -, not starting with . @ - (the provider's sign-up form too). */
export const USERNAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.@-]{1,63}$/;
export const PASSWORD_MIN = 8;
const username = z
  .string()
  .trim()
  .regex(USERNAME_RE, 'must be 2–64 letters, digits or _ . @ - (not starting with . @ -)');
const password = z.string().min(PASSWORD_MIN, 'must be at least 8 characters').max(256);
const id = idString({ max: 100, trim: true });
const base64 = z
  .string()
  .trim()
  .min(1)
  .max(4096)
  .regex(/^[A-Za-z0-9+/_-]+=*$/, 'must be base64');
const page = z.coerce.number().int().min(1).default(1);
const pageSize = z.coerce.number().int().min(1).max(200).default(20);
const permEntry = z
  .string()
  .trim()
  .regex(/^(\*|[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)$/, 'must be `*` or of the form app.action_resource');

export const accessTokenAnswer = z.object({ accessToken: z.string() });

export const orgRef = z.object({ id: z.string(), type: z.string(), name: z.string() });
export type OrgRef = z.infer<typeof orgRef>;

export const userInfo = z.object({
  id: z.string(),
  username: z.string(),
  /** Display name. */
  name: z.string(),
  /** URL of the avatar image, '' when none was uploaded. */
  avatar: z.string(),
  email: z.string().nullable(),
  phone: z.string().nullable(),
  /** Permission entries held in the current organisation (`*` = all). */
  perms: z.array(z.string()),
  /** Role ids held in the current organisation. */
  roles: z.array(z.string()),
  /** The current organisation; type `ROOT` marks the root organisation. */
  groupResource: orgRef.nullable(),
  /** Every organisation the user belongs to (for an organisation switcher). */
  orgs: z.array(orgRef),
});
export type UserInfo = z.infer<typeof userInfo>;

/** One of the caller's live applies; the device lifecycle feature supplies them. */
export const applyInfoItem = z.object({
  applyId: z.string(),
  deviceId: z.string(),
  serverName: z.string(),
  expiresAt: z.string().nullable().optional(),
});
export type ApplyInfoItem = z.infer<typeof applyInfoItem>;

export const apiKeyAnswer = z.object({
  /** The whole key: present only in the answer that created it (shown once). */
  apiKey: z.string().nullable(),
  /** A recognisable, harmless excerpt of the key (`bbk_AbCd…wxyz`). */
  hint: z.string(),
  createdAt: z.string(),
});
export type ApiKeyAnswer = z.infer<typeof apiKeyAnswer>;

export const licenseDetail = z.object({
  /** YYYY-MM-DD. */
  date_expired: z.string(),
  corporation: z.string(),
  asset_count: z.number().int(),
  current_asset_count: z.number().int(),
  is_valid: z.boolean(),
});
export type LicenseDetail = z.infer<typeof licenseDetail>;

export const adminUser = z.object({
  id: z.string(),
  username: z.string(),
  name: z.string(),
  email: z.string().nullable(),
  phone: z.string().nullable(),
  avatar: z.string(),
  isActive: z.boolean(),
  currentOrgId: z.string().nullable(),
  hasPassword: z.boolean(),
  createdAt: z.string(),
  memberships: z.array(z.object({ orgId: z.string(), roleId: z.string() })),
});
export type AdminUser = z.infer<typeof adminUser>;

export const adminOrg = z.object({
  id: z.string(),
  name: z.string(),
  type: z.string(),
  builtin: z.boolean(),
  members: z.number(),
});
export type AdminOrg = z.infer<typeof adminOrg>;
export const adminRole = z.object({
  id: z.string(),
  name: z.string(),
  perms: z.array(z.string()),
  builtin: z.boolean(),
});
export type AdminRole = z.infer<typeof adminRole>;
export const membership = z.object({
  userId: z.string(),
  username: z.string(),
  orgId: z.string(),
  roleId: z.string(),
});
export type Membership = z.infer<typeof membership>;

export const auditEntry = z.object({
  id: z.number(),
  at: z.string(),
  userId: z.string().nullable(),
  username: z.string().nullable(),
  action: z.string(),
  target: z.string().nullable(),
  boardId: z.string().nullable(),
  result: z.string(),
  ip: z.string().nullable(),
  detail: z.unknown().nullable(),
});
export type AuditEntryView = z.infer<typeof auditEntry>;

export const outboxEntry = z.object({
  id: z.number(),
  at: z.string(),
  channel: z.string(),
  recipient: z.string(),
  body: z.string(),
});
export type OutboxEntry = z.infer<typeof outboxEntry>;

const pageOf = <T extends z.ZodType>(item: T) => z.object({ total: z.number().int(), items: z.array(item) });

export const userCalls = [
  defineCall({
    name: 'getTokenByCode',
    method: 'GET',
    path: '/api/oauth2/getTokenByCode',
    auth: 'public',
    request: z.object({
      code: z.string().min(1).max(4096),
      /** PKCE verifier the console made for this sign-in (kept in sessionStorage until now). */
      code_verifier: z
        .string()
        .regex(/^[A-Za-z0-9\-._~]{43,128}$/, 'must be 43–128 characters of A-Z a-z 0-9 - . _ ~')
        .optional(),
      /** The redirect_uri the authorize request carried (exact match; same-origin `/` or `/mainboard`). */
      redirect_uri: z.string().max(2048).optional(),
      /** The `iss` of the authorization response (RFC 9207), when the provider sent one. */
      iss: z.string().max(2048).optional(),
    }),
    response: z.object({
      access_token: z.string(),
      accessToken: z.string(),
      token_type: z.literal('Bearer'),
      expires_in: z.number(),
    }),
    summary: 'Exchange an authorization code of the sign-in provider for the service’s access token',
  }),
  defineCall({
    name: 'userPublicKey',
    method: 'GET',
    path: '/api/user/public-key',
    auth: 'public',
    response: z.object({ publicKey: z.string() }),
    summary: 'RSA public key (SPKI PEM) for RSA-OAEP SHA-256 encryption of username and password',
  }),
  defineCall({
    name: 'userLogin',
    method: 'POST',
    path: '/api/user/login',
    auth: 'public',
    request: z.object({ username: base64, password: base64 }),
    response: accessTokenAnswer,
    summary: 'Password sign-in; username and password each RSA-OAEP (SHA-256) encrypted, base64',
  }),
  defineCall({
    name: 'userPhoneCode',
    method: 'POST',
    path: '/api/user/phone-code',
    auth: 'public',
    payload: 'form',
    request: z.object({ phone }),
    response: z.object({ expiresInSeconds: z.number(), resendAfterSeconds: z.number() }),
    summary: 'Send a one-time sign-in code to a phone (valid 5 minutes, single use)',
  }),
  defineCall({
    name: 'userPhoneLogin',
    method: 'POST',
    path: '/api/user/phone-login',
    auth: 'public',
    payload: 'form',
    request: z.object({
      phone,
      code: z
        .string()
        .trim()
        .regex(/^\d{6}$/, 'must be 6 digits'),
    }),
    response: accessTokenAnswer,
    summary: 'Sign in with a phone number and the one-time code sent to it',
  }),
  defineCall({
    name: 'rainierLogin',
    method: 'POST',
    path: '/api/thridparty/rainier_login',
    auth: 'public',
    request: z.object({ sequenceCode: z.string().trim().min(16).max(256) }),
    response: accessTokenAnswer,
    summary: 'Sign in with a single-use sequence code minted by a trusted system',
  }),
  defineCall({
    name: 'userInfo',
    method: 'GET',
    path: '/api/user/info',
    response: userInfo,
    summary: 'The signed-in user: username, id, perms, current organisation, name, avatar',
  }),
  defineCall({
    name: 'userSwitchOrg',
    method: 'POST',
    path: '/api/user/switch-org',
    request: z.object({ orgId: id }),
    response: userInfo,
    summary: 'Make another of the caller’s organisations the current one (perms follow it)',
  }),
  defineCall({
    name: 'userLogout',
    method: 'POST',
    path: '/api/user/logout',
    summary: 'Revoke the token of this call',
  }),
  defineCall({
    name: 'userApplyInfo',
    method: 'GET',
    path: '/api/user/apply-info',
    response: z.array(applyInfoItem),
    summary: 'The caller’s live applies ([] when none)',
  }),
  defineCall({
    name: 'apikeyGet',
    method: 'GET',
    path: '/api/apikey/get-key',
    response: apiKeyAnswer,
    summary: 'The caller’s API key: made and shown in full on first call, afterwards only its hint',
  }),
  defineCall({
    name: 'apikeyRefresh',
    method: 'GET',
    path: '/api/apikey/refresh-key',
    response: apiKeyAnswer,
    summary: 'Replace the caller’s API key (the old one stops working at once); the new one is shown once',
  }),
  defineCall({
    name: 'userAvatarUpload',
    method: 'POST',
    path: '/api/user/avatar',
    payload: 'multipart',
    response: z.object({ files: z.object({ avatar: z.string() }) }),
    summary: 'Upload the caller’s avatar (field `avatar`, png or jpeg, ≤ 10240 KB, ≥ 150×150 px)',
  }),
  defineCall({
    name: 'userAvatarImage',
    method: 'GET',
    path: '/api/user/avatar/:file',
    auth: 'public',
    answer: 'stream',
    summary: 'A stored avatar image (its unguessable name is the URL answered by the upload)',
  }),
  defineCall({
    name: 'licenseDetail',
    method: 'GET',
    path: '/api/v1/xpack/license/detail',
    perms: [IdentityPerm.changeLicense],
    response: licenseDetail,
    summary: 'Licence detail (when XPACK is enabled): expiry, corporation, licensed and current board count',
  }),

  // Administration.
  defineCall({
    name: 'adminSequenceCodeCreate',
    method: 'POST',
    path: '/api/admin/sequence-codes/create',
    perms: [IdentityPerm.addSequenceCode],
    request: z.object({
      username,
      /** Create the account (in the default organisation) when it does not exist. */
      createIfMissing: z.boolean().default(false),
      name: z.string().trim().max(100).optional(),
      ttlSeconds: z
        .number()
        .int()
        .min(10)
        .max(SEQUENCE_CODE_MAX_TTL_SECONDS)
        .default(SEQUENCE_CODE_DEFAULT_TTL_SECONDS),
    }),
    response: z.object({
      sequenceCode: z.string(),
      expiresAt: z.string(),
      userId: z.string(),
      username: z.string(),
    }),
    summary: 'Mint a single-use, short-lived sequence code that signs a given user in through /thridparty',
  }),
  defineCall({
    name: 'adminUserList',
    method: 'GET',
    path: '/api/admin/users',
    perms: [IdentityPerm.viewUser],
    request: z.object({
      search: z.string().trim().max(100).optional(),
      orgId: id.optional(),
      page,
      pageSize,
    }),
    response: pageOf(adminUser),
    summary: 'Users (organisation admins see the members of their current organisation)',
  }),
  defineCall({
    name: 'adminUserCreate',
    method: 'POST',
    path: '/api/admin/users/create',
    perms: [IdentityPerm.addUser],
    request: z.object({
      username,
      name: z.string().trim().max(100).optional(),
      email: z.email().optional(),
      phone: phone.optional(),
      /** Omitted: a random one is made and answered once in `password`. */
      password: password.optional(),
      orgId: id.optional(),
      roleId: id.optional(),
    }),
    response: z.object({ user: adminUser, password: z.string().nullable() }),
    summary:
      'Create a user in an organisation with a role (default: the caller’s organisation, role org_user)',
  }),
  defineCall({
    name: 'adminUserUpdate',
    method: 'POST',
    path: '/api/admin/users/update',
    perms: [IdentityPerm.changeUser],
    request: z.object({
      id,
      name: z.string().trim().max(100).optional(),
      email: z.email().nullable().optional(),
      phone: phone.nullable().optional(),
      password: password.optional(),
      isActive: z.boolean().optional(),
    }),
    response: adminUser,
    summary:
      'Change a user’s name, email, phone, password or active flag (deactivating revokes their tokens)',
  }),
  defineCall({
    name: 'adminUserDeactivate',
    method: 'POST',
    path: '/api/admin/users/deactivate',
    perms: [IdentityPerm.delUser],
    request: z.object({ id }),
    response: adminUser,
    summary: 'Deactivate a user: sign-in refused, every token and API key revoked',
  }),
  defineCall({
    name: 'adminOrgList',
    method: 'GET',
    path: '/api/admin/orgs',
    perms: [IdentityPerm.viewOrg],
    response: z.array(adminOrg),
    summary: 'Organisations',
  }),
  defineCall({
    name: 'adminOrgCreate',
    method: 'POST',
    path: '/api/admin/orgs/create',
    perms: [IdentityPerm.addOrg],
    request: z.object({
      id: z
        .string()
        .trim()
        .regex(/^[A-Za-z0-9_-]{2,64}$/, 'must be 2–64 letters, digits, _ or -')
        .optional(),
      name: z.string().trim().min(1).max(100),
    }),
    response: adminOrg,
    summary: 'Create an organisation',
  }),
  defineCall({
    name: 'adminOrgUpdate',
    method: 'POST',
    path: '/api/admin/orgs/update',
    perms: [IdentityPerm.changeOrg],
    request: z.object({ id, name: z.string().trim().min(1).max(100) }),
    response: adminOrg,
    summary: 'Rename an organisation',
  }),
  defineCall({
    name: 'adminOrgDelete',
    method: 'POST',
    path: '/api/admin/orgs/delete',
    perms: [IdentityPerm.delOrg],
    request: z.object({ id }),
    summary: 'Delete an organisation without members (built-in ones are kept)',
  }),
  defineCall({
    name: 'adminRoleList',
    method: 'GET',
    path: '/api/admin/roles',
    perms: [IdentityPerm.viewRole],
    response: z.array(adminRole),
    summary: 'Roles and their permission entries',
  }),
  defineCall({
    name: 'adminRoleCreate',
    method: 'POST',
    path: '/api/admin/roles/create',
    perms: [IdentityPerm.addRole],
    request: z.object({
      id: z
        .string()
        .trim()
        .regex(/^[A-Za-z0-9_-]{2,64}$/, 'must be 2–64 letters, digits, _ or -')
        .optional(),
      name: z.string().trim().min(1).max(100),
      perms: z.array(permEntry).max(500),
    }),
    response: adminRole,
    summary: 'Create a role',
  }),
  defineCall({
    name: 'adminRoleUpdate',
    method: 'POST',
    path: '/api/admin/roles/update',
    perms: [IdentityPerm.changeRole],
    request: z.object({
      id,
      name: z.string().trim().min(1).max(100).optional(),
      perms: z.array(permEntry).max(500).optional(),
    }),
    response: adminRole,
    summary: 'Rename a role or change its permission entries (the super admin role is kept as is)',
  }),
  defineCall({
    name: 'adminRoleDelete',
    method: 'POST',
    path: '/api/admin/roles/delete',
    perms: [IdentityPerm.delRole],
    request: z.object({ id }),
    summary: 'Delete a role no membership uses (built-in ones are kept)',
  }),
  defineCall({
    name: 'adminMembershipList',
    method: 'GET',
    path: '/api/admin/memberships',
    perms: [IdentityPerm.viewMembership],
    request: z.object({ userId: id.optional(), orgId: id.optional() }),
    response: z.array(membership),
    summary: 'Memberships (user, organisation, role), filtered by user or organisation',
  }),
  defineCall({
    name: 'adminMembershipSet',
    method: 'POST',
    path: '/api/admin/memberships/set',
    perms: [IdentityPerm.changeMembership],
    request: z.object({ userId: id, orgId: id, roleId: id }),
    response: membership,
    summary: 'Put a user in an organisation with a role, or change their role there',
  }),
  defineCall({
    name: 'adminMembershipRemove',
    method: 'POST',
    path: '/api/admin/memberships/remove',
    perms: [IdentityPerm.changeMembership],
    request: z.object({ userId: id, orgId: id }),
    summary: 'Take a user out of an organisation',
  }),
  defineCall({
    name: 'adminPhoneOutbox',
    method: 'GET',
    path: '/api/admin/phone-outbox',
    perms: [IdentityPerm.viewOutbox],
    request: z.object({ phone: phone.optional(), page, pageSize }),
    response: pageOf(outboxEntry),
    summary: 'Messages the default phone-code sender delivered (newest first)',
  }),
  defineCall({
    name: 'adminAuditList',
    method: 'GET',
    path: '/api/admin/audit',
    perms: [IdentityPerm.viewAudit],
    request: z.object({
      userId: id.optional(),
      action: z.string().trim().max(100).optional(),
      result: z.enum(['ok', 'failed', 'denied']).optional(),
      since: z.iso.datetime({ offset: true }).optional(),
      until: z.iso.datetime({ offset: true }).optional(),
      page,
      pageSize,
    }),
    response: pageOf(auditEntry),
    summary: 'The audit log, newest first (organisation admins see their organisation’s members)',
  }),
] as const;
