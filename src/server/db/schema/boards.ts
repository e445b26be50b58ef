// Boards, their state history and metrics samples (migration 0002_boards.sql is the source of truth;
// these Drizzle tables mirror it for typed queries).
import { bigint, bigserial, index, integer, jsonb, pgTable, primaryKey, real, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const boards = pgTable('boards', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  model: text('model').notNull().default(''),
  attributes: jsonb('attributes').$type<Record<string, string | number | boolean>>().notNull().default({}),
  driver: text('driver').$type<'local' | 'ssh' | 'qemu'>().notNull(),
  /** Driver options as declared; secrets (password, privateKey) live here and are never answered by list calls. */
  driverOptions: jsonb('driver_options').$type<Record<string, unknown>>().notNull().default({}),
  source: text('source').$type<'default' | 'lab' | 'admin'>().notNull().default('lab'),
  state: text('state').notNull().default('idle'),
  stateReason: text('state_reason'),
  stateChangedAt: ts('state_changed_at').notNull().defaultNow(),
  retiredAt: ts('retired_at'),
  lastSeenAt: ts('last_seen_at'),
  consecutiveFailures: integer('consecutive_failures').notNull().default(0),
  lastError: text('last_error'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const boardEvents = pgTable(
  'board_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    boardId: text('board_id')
      .notNull()
      .references(() => boards.id),
    at: ts('at').notNull().defaultNow(),
    kind: text('kind').notNull().default('state'),
    fromState: text('from_state'),
    toState: text('to_state'),
    reason: text('reason'),
    detail: jsonb('detail'),
  },
  (t) => [index('board_events_board_at_idx').on(t.boardId, t.at)],
);

export const boardMetrics = pgTable(
  'board_metrics',
  {
    boardId: text('board_id')
      .notNull()
      .references(() => boards.id),
    at: ts('at').notNull(),
    cpuPercent: real('cpu_percent').notNull(),
    memUsed: bigint('mem_used', { mode: 'number' }).notNull(),
    memTotal: bigint('mem_total', { mode: 'number' }).notNull(),
    diskUsed: bigint('disk_used', { mode: 'number' }).notNull(),
    diskTotal: bigint('disk_total', { mode: 'number' }).notNull(),
    netRx: bigint('net_rx', { mode: 'number' }).notNull(),
    netTx: bigint('net_tx', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.boardId, t.at] }), index('board_metrics_at_idx').on(t.at)],
);

/** An administrator's network policy for a riscv64 board (migration 0014_board_network.sql). */
export const boardNetwork = pgTable('board_network', {
  boardId: text('board_id')
    .primaryKey()
    .references(() => boards.id),
  policy: jsonb('policy').$type<{ egress: 'none' | 'nat'; allow: string[] }>().notNull(),
  changedAt: ts('changed_at').notNull().defaultNow(),
});
