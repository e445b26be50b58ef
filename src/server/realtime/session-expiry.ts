// Sign-ins end on time whether or not a socket is open. A realtime connection watches its own
// credential's expiry (connection.ts), but a shell lives on after its console tab is closed, and
// nothing else would notice its sign-in expiring until the lease ends. So each instance watches the
// credentials its own shells were opened with: it reads their expiry (and whether they were revoked
// or their user deactivated) from storage once, checks them on every tick of the service clock and
// at the next expiry, and ends an expired one through the bus as any other ended sign-in
// (`endSessions`): every instance closes the connections and shells of that credential, the shells
// with reason `session.ended`.
//
// Multi-instance: each instance watches only the shells it owns, so every shell is watched exactly
// once wherever it runs; the end travels to all instances, and ending twice is harmless (an ended
// shell or a closed connection ignores it). Storage is read by primary key, for credentials not seen
// yet and again every `recheckMs`, which also catches a revocation whose bus message was lost.
import { eq, inArray } from 'drizzle-orm';
import { EXPIRED, type SessionEnd, sessionEndOf } from '#server/auth/tokens.ts';
import type { Db } from '#server/db/client.ts';
import { credentials, users } from '#server/db/schema/identity.ts';

export interface SignInWatchOptions {
  db: () => Db;
  /** Credential ids of the live shells this instance owns. */
  live: () => Iterable<string>;
  /** Ends sign-ins on every instance (the hub's endCredentials). */
  end: (ids: string[], end: SessionEnd) => void;
  /** The service clock (ms). */
  now: () => number;
  intervalMs: number;
  recheckMs?: number;
  onError?: (err: unknown) => void;
}

interface Known {
  expiresAt: number | null;
  checkedAt: number;
  /** Already ended (by this watch): not ended again. */
  ended: boolean;
}

/** setTimeout's longest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class SignInWatch {
  private readonly known = new Map<string, Known>();
  private ticker: NodeJS.Timeout | null = null;
  private next: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;

  constructor(private readonly o: SignInWatchOptions) {}

  start(): void {
    this.stopped = false;
    this.ticker = setInterval(() => void this.check(), this.o.intervalMs);
    this.ticker.unref();
  }

  /** Stops ticking and waits for a pass still reading storage (storage may close next). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    if (this.next) clearTimeout(this.next);
    this.ticker = this.next = null;
    await this.running;
  }

  /** One pass (ticks never overlap: a pass still reading storage is awaited instead). */
  check(): Promise<void> {
    this.running ??= this.pass()
      .catch((err) => this.o.onError?.(err))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async pass(): Promise<void> {
    const live = new Set(this.o.live());
    for (const id of this.known.keys()) if (!live.has(id)) this.known.delete(id);
    if (live.size === 0) return;
    const now = this.o.now();
    const recheckMs = this.o.recheckMs ?? 60_000;
    const stale = [...live].filter((id) => {
      const k = this.known.get(id);
      return !k || (!k.ended && now - k.checkedAt >= recheckMs);
    });
    if (stale.length) await this.read(stale, now);
    if (this.stopped) return;
    const expired: string[] = [];
    for (const [id, k] of this.known) {
      if (!k.ended && k.expiresAt !== null && this.o.now() >= k.expiresAt) {
        k.ended = true;
        expired.push(id);
      }
    }
    if (expired.length) this.o.end(expired, sessionEndOf(EXPIRED));
    this.armNext();
  }

  /** Reads the credentials' state; revoked ones (or of a deactivated user) end at once. */
  private async read(ids: string[], now: number): Promise<void> {
    const rows = await this.o
      .db()
      .select({
        id: credentials.id,
        expiresAt: credentials.expiresAt,
        revokedAt: credentials.revokedAt,
        revokedReason: credentials.revokedReason,
        isActive: users.isActive,
      })
      .from(credentials)
      .innerJoin(users, eq(users.id, credentials.userId))
      .where(inArray(credentials.id, ids));
    const found = new Map(rows.map((r) => [r.id, r]));
    const gone = new Map<string, string[]>();
    for (const id of ids) {
      const r = found.get(id);
      const k: Known = { expiresAt: r?.expiresAt?.getTime() ?? null, checkedAt: now, ended: false };
      this.known.set(id, k);
      const reason = !r || !r.isActive ? '' : r.revokedAt ? (r.revokedReason ?? '') : null;
      if (reason === null) continue;
      k.ended = true;
      gone.set(reason, [...(gone.get(reason) ?? []), id]);
    }
    for (const [reason, list] of gone) this.o.end(list, sessionEndOf(reason || null));
  }

  /** Wakes at the next known expiry when it comes before the next tick. */
  private armNext(): void {
    if (this.next) clearTimeout(this.next);
    this.next = null;
    let soonest = Number.POSITIVE_INFINITY;
    for (const k of this.known.values())
      if (!k.ended && k.expiresAt !== null) soonest = Math.min(soonest, k.expiresAt);
    const wait = soonest - this.o.now();
    if (this.stopped || !Number.isFinite(wait) || wait >= this.o.intervalMs) return;
    this.next = setTimeout(() => void this.check(), Math.min(Math.max(0, wait), MAX_TIMER_MS));
    this.next.unref();
  }
}
