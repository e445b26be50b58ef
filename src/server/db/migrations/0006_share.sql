-- Teams: share groups of an owner, their members, the owner's leases they hold, and shells shared into
-- them. A group's boards are recorded by the owner's lease, so a board leaves every group when that
-- lease ends (queries join live leases only) and is not shared again by a later lease of the same board.
create table share_groups (
  id text primary key,
  owner_id text not null references users (id) on delete cascade,
  name text not null,
  -- what members may do beyond using the boards: ["flash", "renew"]
  grants jsonb not null default '[]'::jsonb,
  created_at timestamptz not null
);
create unique index share_groups_owner_name_uq on share_groups (owner_id, name);

create table share_members (
  group_id text not null references share_groups (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  added_at timestamptz not null,
  primary key (group_id, user_id)
);
create index share_members_user_idx on share_members (user_id);

create table share_devices (
  group_id text not null references share_groups (id) on delete cascade,
  lease_id text not null references leases (id) on delete cascade,
  board_id text not null references boards (id),
  added_at timestamptz not null,
  primary key (group_id, lease_id)
);
create index share_devices_board_idx on share_devices (board_id);

-- A shell its host (the user whose apply opened it) shared into one group; guests join it read-only.
create table share_shells (
  shell_id text primary key,
  group_id text not null references share_groups (id) on delete cascade,
  board_id text not null references boards (id),
  lease_id text not null references leases (id) on delete cascade,
  host_id text not null references users (id) on delete cascade,
  host_apply_id text not null,
  shell_type text not null,
  invited_at timestamptz not null
);
create index share_shells_group_idx on share_shells (group_id);
