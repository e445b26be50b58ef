-- Sequences (src/shared/sequences.ts): a user's named list of device actions, kept as the text they
-- wrote or recorded, optionally shared with one of their share groups; and each run of one, with every
-- board's steps, states and output as one document updated while it runs.
create table sequences (
  id text primary key,
  owner_id text not null references users (id) on delete cascade,
  name text not null,
  source text not null,
  -- the owner's share group it is shared with (members see it, run it and see its runs)
  group_id text references share_groups (id) on delete set null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index sequences_owner_name_uq on sequences (owner_id, name);
create index sequences_group_idx on sequences (group_id) where group_id is not null;

create table sequence_runs (
  id text primary key,
  -- kept when the sequence is deleted: the run's log stays readable by whoever ran it
  sequence_id text not null,
  sequence_name text not null,
  group_id text references share_groups (id) on delete set null,
  user_id text not null references users (id) on delete cascade,
  state text not null check (state in ('running', 'success', 'failure', 'cancelled')),
  params jsonb not null default '{}'::jsonb,
  boards jsonb not null default '[]'::jsonb,
  started_at timestamptz not null,
  ended_at timestamptz
);
create index sequence_runs_user_idx on sequence_runs (user_id, started_at desc);
create index sequence_runs_sequence_idx on sequence_runs (sequence_id, started_at desc);
create index sequence_runs_running_idx on sequence_runs (state) where state = 'running';
