-- Device lifecycle: leases (a user holds a board until an end) and applies (working sessions on a
-- held board). Times are written from the service's clock, never from now() here, so that tests can
-- move time and every instance agrees on what "ended" means.
create table leases (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  board_id text not null references boards (id),
  server_name text not null,
  duration_key text not null,
  filter jsonb not null default '{}'::jsonb,
  -- live until released by its holder or expired by the scheduler
  state text not null default 'live' check (state in ('live', 'released', 'expired')),
  started_at timestamptz not null,
  ends_at timestamptz not null,
  ended_at timestamptz,
  renewals integer not null default 0,
  warned_24h_at timestamptz,
  warned_1h_at timestamptz,
  -- returning the board to the pool after the lease ended: claimed by one instance, done once
  cleanup_claimed_at timestamptz,
  cleaned_at timestamptz,
  cleanup_error text
);
-- a board has at most one live lease; a user's names are unique among their live leases
create unique index leases_live_board_uq on leases (board_id) where state = 'live';
create unique index leases_live_name_uq on leases (user_id, server_name) where state = 'live';
-- the caller's lists and histories
create index leases_user_started_idx on leases (user_id, started_at desc);
-- the scheduler's and "next free" scans touch only live leases
create index leases_live_ends_idx on leases (ends_at) where state = 'live';
-- boards whose restore after a lease is pending (not handed out until it is done)
create index leases_cleanup_idx on leases (board_id) where state <> 'live' and cleaned_at is null;

create table applies (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  board_id text not null references boards (id),
  lease_id text not null references leases (id),
  state text not null default 'open' check (state in ('open', 'closed')),
  opened_at timestamptz not null,
  closed_at timestamptz,
  -- 'unapplied', 'released', 'expired'
  close_reason text
);
create index applies_user_opened_idx on applies (user_id, opened_at desc);
create index applies_user_board_idx on applies (user_id, board_id, opened_at desc);
create index applies_lease_open_idx on applies (lease_id) where state = 'open';
-- one open apply per user and lease: apply-device answers the open one again
create unique index applies_open_uq on applies (user_id, lease_id) where state = 'open';
