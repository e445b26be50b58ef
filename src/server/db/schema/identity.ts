import {
  bigserial,
  boolean,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const organisations = pgTable('organisations', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  type: text('type').notNull().default('ORG'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const roles = pgTable('roles', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  perms: text('perms').array().notNull().default([]),
  builtin: boolean('builtin').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const users = pgTable('users', {
  id: text('id').primaryKey(),
  username: text('username').notNull().unique(),
  displayName: text('display_name').notNull().default(''),
  email: text('email'),
  phone: text('phone').unique(),
  passwordHash: text('password_hash'),
  avatar: text('avatar'),
  isActive: boolean('is_active').notNull().default(true),
  currentOrgId: text('current_org_id').references(() => organisations.id),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** Issuer and subject of the external sign-in account this user was created from (0003). */
  oidcIssuer: text('oidc_issuer'),
  oidcSubject: text('oidc_subject'),
});

export const memberships = pgTable(
  'memberships',
  {
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    orgId: text('org_id')
      .notNull()
      .references(() => organisations.id, { onDelete: 'cascade' }),
    roleId: text('role_id')
      .notNull()
      .references(() => roles.id),
  },
  (t) => [primaryKey({ columns: [t.userId, t.orgId] })],
);

export const credentials = pgTable('credentials', {
  id: text('id').primaryKey(),
  tokenHash: text('token_hash').notNull().unique(),
  userId: text('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  /** `access` (sign-in) or `apikey` (scripts and the cli). */
  kind: text('kind').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  expiresAt: ts('expires_at'),
  revokedAt: ts('revoked_at'),
  /** `logout`, `displaced` (single-session sign-in elsewhere), `refreshed` (API key), `admin`. */
  revokedReason: text('revoked_reason'),
  lastUsedAt: ts('last_used_at'),
  /** A harmless excerpt shown instead of an API key after its creation (0003). */
  hint: text('hint'),
});

export const auditLog = pgTable('audit_log', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  at: ts('at').notNull().defaultNow(),
  userId: text('user_id'),
  username: text('username'),
  action: text('action').notNull(),
  target: text('target'),
  boardId: text('board_id'),
  result: text('result').notNull(),
  ip: text('ip'),
  detail: jsonb('detail'),
});

// 0003_identity.sql

export const authThrottle = pgTable('auth_throttle', {
  key: text('key').primaryKey(),
  count: integer('count').notNull(),
  windowStart: ts('window_start').notNull(),
});

export const phoneCodes = pgTable('phone_codes', {
  id: text('id').primaryKey(),
  phone: text('phone').notNull(),
  codeHash: text('code_hash').notNull(),
  createdAt: ts('created_at').notNull(),
  expiresAt: ts('expires_at').notNull(),
  consumedAt: ts('consumed_at'),
  attempts: integer('attempts').notNull().default(0),
});

export const phoneOutbox = pgTable('phone_outbox', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  at: ts('at').notNull().defaultNow(),
  channel: text('channel').notNull(),
  recipient: text('recipient').notNull(),
  body: text('body').notNull(),
});

export const sequenceCodes = pgTable('sequence_codes', {
  codeHash: text('code_hash').primaryKey(),
  userId: text('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  createdBy: text('created_by'),
  createdAt: ts('created_at').notNull(),
  expiresAt: ts('expires_at').notNull(),
  consumedAt: ts('consumed_at'),
});

export const serviceSecrets = pgTable('service_secrets', {
  name: text('name').primaryKey(),
  value: jsonb('value').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const oidcRecords = pgTable(
  'oidc_records',
  {
    model: text('model').notNull(),
    id: text('id').notNull(),
    payload: jsonb('payload').notNull(),
    grantId: text('grant_id'),
    userCode: text('user_code'),
    uid: text('uid'),
    expiresAt: ts('expires_at'),
    consumedAt: ts('consumed_at'),
  },
  (t) => [primaryKey({ columns: [t.model, t.id] })],
);
