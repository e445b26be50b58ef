-- The waiting line for boards: a lease request that found no free board waits here until a matching
-- board frees (granted: a lease is written for it then), the user leaves (cancelled) or it waited its
-- longest (expired). Times come from the service's clock, as for leases.
create table lease_queue (
  id text primary key,
  -- first come, first served: joined_at, then seq for entries written in the same instant
  seq bigserial not null,
  user_id text not null references users (id) on delete cascade,
  filter jsonb not null default '{}'::jsonb,
  -- the filter normalised (key order, letter case, list order): "the same filter" for order and uniqueness
  filter_key text not null,
  server_name text not null,
  duration_key text not null,
  state text not null default 'waiting' check (state in ('waiting', 'granted', 'cancelled', 'expired')),
  joined_at timestamptz not null,
  expires_at timestamptz not null,
  ended_at timestamptz,
  lease_id text references leases (id),
  board_id text references boards (id)
);
-- one waiting entry per user and filter
create unique index lease_queue_waiting_uq on lease_queue (user_id, filter_key) where state = 'waiting';
-- the line itself, and the expiry scan
create index lease_queue_line_idx on lease_queue (joined_at, seq) where state = 'waiting';
create index lease_queue_expiry_idx on lease_queue (expires_at) where state = 'waiting';
create index lease_queue_user_idx on lease_queue (user_id, joined_at desc);
