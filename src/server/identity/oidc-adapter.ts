// Storage of the embedded OpenID provider (sessions, interactions, authorization codes, grants,
// access tokens) in the service's database, one row per record, so that every instance sharing the
// database shares sign-in state and nothing lives only in one process's memory. Expiry is the
// provider's (wall-clock seconds); expired rows are ignored on read and pruned periodically.
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Storage } from '#server/db/client.ts';

interface Row {
  payload: AdapterPayload;
  expires_at: Date | string | null;
  consumed_at: Date | string | null;
}

export function dbAdapterFactory(storage: Storage): (model: string) => Adapter {
  return (model: string) => new DbAdapter(storage, model);
}

class DbAdapter implements Adapter {
  constructor(
    private readonly storage: Storage,
    private readonly model: string,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000) : null;
    await this.storage.query(
      `insert into oidc_records (model, id, payload, grant_id, user_code, uid, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7)
       on conflict (model, id) do update set payload = excluded.payload, grant_id = excluded.grant_id,
         user_code = excluded.user_code, uid = excluded.uid, expires_at = excluded.expires_at`,
      [
        this.model,
        id,
        JSON.stringify(payload),
        payload.grantId ?? null,
        payload.userCode ?? null,
        payload.uid ?? null,
        expiresAt,
      ],
    );
  }

  private async one(where: string, value: string): Promise<AdapterPayload | undefined> {
    const [row] = await this.storage.query<Row>(
      `select payload, expires_at, consumed_at from oidc_records
       where model = $1 and ${where} = $2 and (expires_at is null or expires_at > $3) limit 1`,
      [this.model, value, new Date()],
    );
    if (!row) return undefined;
    const payload =
      typeof row.payload === 'string' ? (JSON.parse(row.payload) as AdapterPayload) : row.payload;
    if (row.consumed_at) payload.consumed = Math.floor(new Date(row.consumed_at).getTime() / 1000);
    return payload;
  }

  find(id: string) {
    return this.one('id', id);
  }

  findByUserCode(userCode: string) {
    return this.one('user_code', userCode);
  }

  findByUid(uid: string) {
    return this.one('uid', uid);
  }

  async consume(id: string): Promise<void> {
    await this.storage.query('update oidc_records set consumed_at = $3 where model = $1 and id = $2', [
      this.model,
      id,
      new Date(),
    ]);
  }

  async destroy(id: string): Promise<void> {
    await this.storage.query('delete from oidc_records where model = $1 and id = $2', [this.model, id]);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.storage.query('delete from oidc_records where grant_id = $1', [grantId]);
  }
}

export async function pruneOidcRecords(storage: Storage): Promise<void> {
  await storage.query('delete from oidc_records where expires_at is not null and expires_at < $1', [
    new Date(),
  ]);
}
