-- A riscv64 board's network policy as an administrator chose it (issue 36): it overrides the lab
-- file's and the host's default, and stays across restarts and lab file changes until dropped.
create table if not exists board_network (
  board_id text primary key references boards(id),
  -- {"egress": "none" | "nat", "allow": ["198.51.100.0/24", ...]} (src/shared/board-network.ts)
  policy jsonb not null,
  changed_at timestamptz not null default now()
);
