// Storage of each user's workbench keymap (table user_keymaps, migration 0008_keymap.sql). Every
// query is keyed by the caller's own user id; a save replaces the row in one upsert statement.
import type { Storage } from '#server/db/client.ts';
import { defaultKeymap, type KeymapAnswer, type KeymapSettings, keymapSettings } from '#shared/keymap.ts';

interface Row {
  preset: string;
  overrides: unknown;
  updated_at: Date | string;
}

function answerOf(row: Row | undefined): KeymapAnswer {
  if (!row) return { ...defaultKeymap(), updatedAt: null };
  // Rows are written only after validation; a row an older version wrote that no longer parses
  // (an action renamed away) reads as the default rather than breaking the console.
  const parsed = keymapSettings.safeParse({ preset: row.preset, overrides: row.overrides });
  const settings = parsed.success ? parsed.data : defaultKeymap();
  return { ...settings, updatedAt: new Date(row.updated_at).toISOString() };
}

export async function readKeymap(storage: Pick<Storage, 'query'>, userId: string): Promise<KeymapAnswer> {
  const [row] = await storage.query<Row>(
    'select preset, overrides, updated_at from user_keymaps where user_id = $1',
    [userId],
  );
  return answerOf(row);
}

export async function writeKeymap(
  storage: Pick<Storage, 'query'>,
  userId: string,
  settings: KeymapSettings,
  now: Date,
): Promise<KeymapAnswer> {
  const [row] = await storage.query<Row>(
    `insert into user_keymaps (user_id, preset, overrides, updated_at) values ($1, $2, $3::jsonb, $4)
     on conflict (user_id) do update set preset = excluded.preset, overrides = excluded.overrides,
       updated_at = excluded.updated_at
     returning preset, overrides, updated_at`,
    [userId, settings.preset, JSON.stringify(settings.overrides), now.toISOString()],
  );
  return answerOf(row);
}
