-- Flashing: the image catalogue and flash jobs. An image file lives under <data>/images (or at a
-- path the lab file names); its row holds what was measured of it (size, sha256) when it was added.
create table flash_images (
  tag text primary key,
  name text not null,
  os_version text not null default '',
  description text not null default '',
  -- board models it fits; empty: every model
  models jsonb not null default '[]'::jsonb,
  format text not null check (format in ('tar', 'tar.gz')),
  size bigint not null,
  sha256 text not null,
  -- host path of the file
  path text not null,
  -- 'builtin' (built at first start), 'lab' (lab file), 'admin' (uploaded public), 'user' (uploaded private)
  source text not null check (source in ('builtin', 'lab', 'admin', 'user')),
  owner_id text references users (id) on delete cascade,
  created_at timestamptz not null,
  retired_at timestamptz
);
create index flash_images_owner_idx on flash_images (owner_id) where owner_id is not null;

create table flash_jobs (
  id text primary key,
  -- several boards flashed at once share a multi id
  multi_id text,
  board_id text not null references boards (id),
  server_name text not null default '',
  user_id text not null references users (id) on delete cascade,
  image_tag text not null,
  image_name text not null,
  state text not null default 'PENDING'
    check (state in ('PENDING', 'RUNNING', 'SUCCESS', 'FAILURE', 'CANCELLED')),
  stage text not null default 'queued'
    check (stage in ('queued', 'transfer', 'write', 'verify', 'boot', 'done')),
  percent real not null default 0,
  bytes_done bigint not null default 0,
  bytes_total bigint not null default 0,
  speed_bps bigint not null default 0,
  error_key text,
  error_message text,
  log jsonb not null default '[]'::jsonb,
  created_at timestamptz not null,
  started_at timestamptz,
  ended_at timestamptz
);
-- at most one job per board that has not ended
create unique index flash_jobs_board_active_uq on flash_jobs (board_id) where state in ('PENDING', 'RUNNING');
create index flash_jobs_board_created_idx on flash_jobs (board_id, created_at desc);
create index flash_jobs_multi_idx on flash_jobs (multi_id) where multi_id is not null;

-- The image a board was flashed with shows as its `os` attribute until its default image is
-- restored; `declared_os` keeps what the lab declared meanwhile.
alter table boards add column image_os text;
alter table boards add column declared_os text;
