// Fixed-window counters in the database, so that the limits hold across instances. Keys name what
// is counted: `login:u:<username>`, `login:ip:<address>`, `pcode:p:<phone>`, ... Time is the
// service clock's. An attempt is reserved (counted) before it is checked, never after: a check
// followed by a later increment lets every parallel attempt through the check at once.
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

  /**
   * Reserves one attempt under every limit before the attempt is made: each counter is raised in one
   * conditional upsert that succeeds only while the key is under its limit (or its window ended), so
   * N parallel attempts cost N and no more than `max` of them ever get through — on PGlite and on
   * PostgreSQL, across instances. When a limit is reached, the attempts already reserved by this call
   * are given back and it throws 429 with Retry-After. A failed attempt keeps its reservation; a
   * successful one clears (`reset`) or gives back (`release`) what it reserved.
   */
  async reserve(limits: Limit[], now: Date): Promise<void> {
    const reserved: Limit[] = [];
    for (const l of limits) {
      const wait = await this.reserveOne(l, now);
      if (wait > 0) {
        for (const r of reserved) await this.release(r, now);
        throw tooMany(wait);
      }
      reserved.push(l);
    }
  }

  /** 0 when one attempt was reserved under the limit, else the seconds until the key may be used. */
  private async reserveOne(limit: Limit, now: Date): Promise<number> {
    if ((await this.count(limit, now, true)) !== undefined) return 0;
    return Math.max(1, await this.blockedFor(limit, now));
  }

  /**
   * Raises the key's counter by one in a single statement (a window that ended starts afresh);
   * with `underMaxOnly`, only while it is below the limit. Answers the new count, or undefined when
   * the limit held it back.
   */
  private async count(limit: Limit, now: Date, underMaxOnly: boolean): Promise<number | undefined> {
    const windowStart = new Date(now.getTime() - limit.windowMs);
    const [row] = await this.storage.query<{ count: number }>(
      `insert into auth_throttle (key, count, window_start) values ($1, 1, $2)
       on conflict (key) do update set
         count = case when auth_throttle.window_start <= $3 then 1 else auth_throttle.count + 1 end,
         window_start = case when auth_throttle.window_start <= $3 then $2 else auth_throttle.window_start end
       ${underMaxOnly ? 'where auth_throttle.window_start <= $3 or auth_throttle.count < $4' : ''}
       returning count`,
      underMaxOnly ? [limit.key, now, windowStart, limit.max] : [limit.key, now, windowStart],
    );
    return row?.count;
  }

  /** Gives back one reserved attempt of the key's current window (an attempt that succeeded). */
  async release(limit: Limit, now: Date): Promise<void> {
    await this.storage.query(
      'update auth_throttle set count = count - 1 where key = $1 and count > 0 and window_start > $2',
      [limit.key, new Date(now.getTime() - limit.windowMs)],
    );
  }

  /** Counts one event against the key whatever its count (an event that is refused anyway). */
  async hit(limit: Limit, now: Date): Promise<number> {
    return (await this.count(limit, now, false)) ?? 0;
  }

  /** Counts one event under every limit and throws 429 when any is reached (actions limited per attempt). */
  async take(limits: Limit[], now: Date): Promise<void> {
    await this.reserve(limits, now);
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
