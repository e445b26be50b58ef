// Service secrets (key pairs, cookie keys) live in the database so that every instance sharing it
// uses the same ones: a browser may fetch the public key from one instance and post to another.
// The first instance to start makes them; a concurrent start keeps whichever row was written first.
import type { Storage } from '#server/db/client.ts';

export async function loadOrCreateSecret<T>(storage: Storage, name: string, make: () => T): Promise<T> {
  const existing = await storage.query<{ value: T }>('select value from service_secrets where name = $1', [
    name,
  ]);
  if (existing[0]) return existing[0].value;
  await storage.query(
    'insert into service_secrets (name, value) values ($1, $2) on conflict (name) do nothing',
    [name, JSON.stringify(make())],
  );
  const [row] = await storage.query<{ value: T }>('select value from service_secrets where name = $1', [
    name,
  ]);
  return row.value;
}
