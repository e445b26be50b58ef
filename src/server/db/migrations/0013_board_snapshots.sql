-- Snapshots of riscv64 boards' whole disks (issue 36; docs/riscv-snapshots.md). The snapshots
-- themselves are internal snapshots of the board's qcow2 overlay; a row records who saved one, on
-- which lease. `board_snapshot_charges` holds what a board's snapshots cost its holder's quota (the
-- flash images' quota: the allocated bytes of the board's overlay while it holds snapshots); it
-- counts only while its lease is live, and the lease's end removes both (the board's disk goes back
-- to its default image, every snapshot with it).
create table board_snapshots (
  board_id text not null references boards (id),
  name text not null,
  lease_id text not null references leases (id) on delete cascade,
  created_by text references users (id) on delete set null,
  created_at timestamptz not null default now(),
  -- the flash epoch of the board's disk the snapshot belongs to (0: flashes keep no snapshots yet)
  epoch integer not null default 0,
  primary key (board_id, name)
);

create table board_snapshot_charges (
  board_id text primary key references boards (id),
  lease_id text not null references leases (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  bytes bigint not null default 0,
  updated_at timestamptz not null default now()
);
create index board_snapshot_charges_user_idx on board_snapshot_charges (user_id);
