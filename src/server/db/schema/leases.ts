// Leases and applies (migration 0004_leases.sql is the source of truth; these Drizzle tables mirror
// it for typed queries).
import { integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { boards } from './boards.ts';
import { users } from './identity.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const leases = pgTable('leases', {
  id: text('id').primaryKey(),
  userId: text('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  boardId: text('board_id')
    .notNull()
    .references(() => boards.id),
  serverName: text('server_name').notNull(),
  durationKey: text('duration_key').notNull(),
  filter: jsonb('filter').$type<Record<string, unknown>>().notNull().default({}),
  state: text('state').$type<'live' | 'released' | 'expired'>().notNull().default('live'),
  startedAt: ts('started_at').notNull(),
  endsAt: ts('ends_at').notNull(),
  endedAt: ts('ended_at'),
  renewals: integer('renewals').notNull().default(0),
  warned24hAt: ts('warned_24h_at'),
  warned1hAt: ts('warned_1h_at'),
  cleanupClaimedAt: ts('cleanup_claimed_at'),
  cleanedAt: ts('cleaned_at'),
  cleanupError: text('cleanup_error'),
});

export const applies = pgTable('applies', {
  id: text('id').primaryKey(),
  userId: text('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  boardId: text('board_id')
    .notNull()
    .references(() => boards.id),
  leaseId: text('lease_id')
    .notNull()
    .references(() => leases.id),
  state: text('state').$type<'open' | 'closed'>().notNull().default('open'),
  openedAt: ts('opened_at').notNull(),
  closedAt: ts('closed_at'),
  closeReason: text('close_reason'),
});
