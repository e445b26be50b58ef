import { bigserial, boolean, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

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
