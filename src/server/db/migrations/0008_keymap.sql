-- Each user's workbench keymap (src/shared/keymap.ts): the preset and the user's own chords over it.
-- One row per user, replaced whole by one upsert, gone with the user. No row: the default keymap.
create table user_keymaps (
  user_id text primary key references users (id) on delete cascade,
  preset text not null,
  overrides jsonb not null default '{}'::jsonb,
  updated_at timestamptz not null
);
