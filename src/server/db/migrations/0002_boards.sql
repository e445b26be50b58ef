-- Boards of the lab, their state history and their metrics samples. Boards are never deleted:
-- a board removed from the lab file is retired (retired_at set) so leases, audit rows and events
-- that name it keep their meaning.
create table boards (
  id text primary key,
  name text not null,
  model text not null default '',
  attributes jsonb not null default '{}'::jsonb,
  driver text not null check (driver in ('local', 'ssh')),
  driver_options jsonb not null default '{}'::jsonb,
  -- where the board was declared: 'default' (first-start local lab), 'lab' (lab file), 'admin' (admin API)
  source text not null default 'lab',
  state text not null default 'idle'
    check (state in ('idle', 'leased', 'flashing', 'resetting', 'offline', 'maintenance')),
  state_reason text,
  state_changed_at timestamptz not null default now(),
  retired_at timestamptz,
  last_seen_at timestamptz,
  consecutive_failures integer not null default 0,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index boards_state_idx on boards (state) where retired_at is null;

create table board_events (
  id bigserial primary key,
  board_id text not null references boards (id),
  at timestamptz not null default now(),
  -- 'state' for a state change, 'retired', 'restored', 'changed', 'health' for other notable facts
  kind text not null default 'state',
  from_state text,
  to_state text,
  reason text,
  detail jsonb
);
create index board_events_board_at_idx on board_events (board_id, at);

create table board_metrics (
  board_id text not null references boards (id),
  at timestamptz not null,
  cpu_percent real not null,
  mem_used bigint not null,
  mem_total bigint not null,
  disk_used bigint not null,
  disk_total bigint not null,
  net_rx bigint not null,
  net_tx bigint not null,
  primary key (board_id, at)
);
-- pruning deletes by age across all boards
create index board_metrics_at_idx on board_metrics (at);
