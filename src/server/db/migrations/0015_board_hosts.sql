-- Board hosts (issue 37): processes on other machines that run boards' drivers and dial in to the
-- service. An administrator creates one (its credential is shown once: only its hash is kept) and can
-- revoke it; a board a host declares belongs to that host alone.
create table if not exists board_hosts (
  id text primary key,
  name text not null unique,
  -- sha256 of the secret part of the credential, hex.
  token_hash text not null,
  created_at timestamptz not null default now(),
  created_by text,
  revoked_at timestamptz,
  -- The last time any instance heard from it, and what it said of itself.
  last_seen_at timestamptz,
  version text,
  address text
);

-- Which instance holds a live link to which host, refreshed every few seconds: a host whose every
-- link is gone or stale has its boards shown offline, by whichever instance notices first.
create table if not exists board_host_links (
  host_id text not null references board_hosts(id),
  instance_id text not null,
  since timestamptz not null default now(),
  seen_at timestamptz not null default now(),
  primary key (host_id, instance_id)
);

-- The service instances board hosts should dial (those started with BIANBU_INSTANCE_URL), so a host
-- holds a link to every instance and any instance reaches any board directly.
create table if not exists service_instances (
  id text primary key,
  url text not null,
  started_at timestamptz not null default now(),
  seen_at timestamptz not null default now()
);

-- The host that owns a board (null: this service's own boards, run in-process).
alter table boards add column if not exists host_id text references board_hosts(id);
