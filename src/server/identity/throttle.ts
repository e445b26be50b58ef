// Fixed-window counters in the database, so that the limits hold across instances. Keys name what
// is counted: `login:u:<username>`, `login:ip:<address>`, `pcode:p:<phone>`, ... Time is the
// service clock's.
import type { Storage } from '#server/db/client.ts';
import { tooMany } from '#server/errors.ts';

export interface Limit {
  key: string;
  max: number;
  windowMs: number;
}

export class Throttle {
  constructor(private readonly storage: Storage) {}

  /** Seconds until the key may be used again, or 0 when it is under its limit. */
  async blockedFor(limit: Limit, now: Date): Promise<number> {
    const [row] = await this.storage.query<{ count: number; window_start: Date | string }>(
      'select count, window_start from auth_throttle where key = $1',
      [limit.key],
    );
    if (!row) return 0;
    const start = new Date(row.window_start).getTime();
    const end = start + limit.windowMs;
    if (end <= now.getTime() || row.count < limit.max) return 0;
    return Math.ceil((end - now.getTime()) / 1000);
  }

  /** Throws 429 with Retry-After when any of the limits is reached. */
  async check(limits: Limit[], now: Date): Promise<void> {
    let wait = 0;
    for (const l of limits) wait = Math.max(wait, await this.blockedFor(l, now));
    if (wait > 0) throw tooMany(wait);
  }

  /** Counts one event against the key; a window that ended starts afresh. Answers the new count. */
  async hit(limit: Limit, now: Date): Promise<number> {
    const windowStart = new Date(now.getTime() - limit.windowMs);
    const [row] = await this.storage.query<{ count: number }>(
      `insert into auth_throttle (key, count, window_start) values ($1, 1, $2)
       on conflict (key) do update set
         count = case when auth_throttle.window_start <= $3 then 1 else auth_throttle.count + 1 end,
         window_start = case when auth_throttle.window_start <= $3 then $2 else auth_throttle.window_start end
       returning count`,
      [limit.key, now, windowStart],
    );
    return row.count;
  }

  /** Counts one event and throws 429 when it goes over the limit (for actions limited per attempt). */
  async take(limits: Limit[], now: Date): Promise<void> {
    await this.check(limits, now);
    for (const l of limits) await this.hit(l, now);
  }

  async reset(key: string): Promise<void> {
    await this.storage.query('delete from auth_throttle where key = $1', [key]);
  }

  /** Drops rows whose window ended long ago. */
  async prune(now: Date, olderThanMs = 86_400_000): Promise<void> {
    await this.storage.query('delete from auth_throttle where window_start < $1', [
      new Date(now.getTime() - olderThanMs),
    ]);
  }
}
