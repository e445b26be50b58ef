// Tickets and code sessions of the /code/ proxy, in this instance's memory.
// Lifecycle: the codeTicket call issues a ticket (random, one-time, CODE_LIMITS.ticketTtlMs, bound to
// the sign-in, the apply and the apply's code origin) → the code listener takes it (it is gone whatever the
// outcome) and opens a session: a random key that becomes part of the path, and a random cookie secret
// whose hash is kept → each request finds its session by key and proves the cookie → the session ends
// when the apply, guest access or sign-in ends (control messages, or a failed live check: an expired
// sign-in is found by the next request, or within 15 s while WebSockets are open), or after CODE_LIMITS.sessionIdleMs unused.
import crypto from 'node:crypto';
import type { SignIn } from './live-access.ts';

export interface CodeTicket extends SignIn {
  applyId: string;
  deviceId: string;
  codeOrigin: string;
  consoleOrigin: string;
  expiresAt: number;
}

export interface CodeSession extends SignIn {
  key: string;
  applyId: string;
  deviceId: string;
  codeOrigin: string;
  consoleOrigin: string;
  cookieHash: Buffer;
  /** Last successful live check (ms), and the one under way. */
  checkedAt: number;
  checking: Promise<void> | null;
  lastUsed: number;
}

const random = (bytes: number) => crypto.randomBytes(bytes).toString('base64url');
const hash = (s: string) => crypto.createHash('sha256').update(s).digest();

export class CodeSessions {
  private readonly tickets = new Map<string, CodeTicket>();
  readonly sessions = new Map<string, CodeSession>();

  constructor(
    private readonly limits: { ticketTtlMs: number; ticketsPerUser: number; sessionIdleMs: number },
    private readonly now: () => number,
  ) {}

  issue(t: Omit<CodeTicket, 'expiresAt'>): { ticket: string; expiresAt: number } {
    this.sweep();
    const mine = [...this.tickets].filter(([, v]) => v.userId === t.userId);
    for (const [k] of mine.slice(0, Math.max(0, mine.length - this.limits.ticketsPerUser + 1)))
      this.tickets.delete(k);
    const ticket = random(32);
    const expiresAt = this.now() + this.limits.ticketTtlMs;
    this.tickets.set(ticket, { ...t, expiresAt });
    return { ticket, expiresAt };
  }

  /** The ticket, once: a second take, or a take after it expired, answers null. */
  take(ticket: string): CodeTicket | null {
    const t = this.tickets.get(ticket);
    if (!t) return null;
    this.tickets.delete(ticket);
    return t.expiresAt > this.now() ? t : null;
  }

  open(t: CodeTicket): { session: CodeSession; cookie: string } {
    const cookie = random(32);
    const session: CodeSession = {
      key: random(18),
      userId: t.userId,
      credentialId: t.credentialId,
      credentialKind: t.credentialKind,
      applyId: t.applyId,
      deviceId: t.deviceId,
      codeOrigin: t.codeOrigin,
      consoleOrigin: t.consoleOrigin,
      cookieHash: hash(cookie),
      checkedAt: 0,
      checking: null,
      lastUsed: this.now(),
    };
    this.sessions.set(session.key, session);
    return { session, cookie };
  }

  /** The session of `key` when one of `cookies` is its cookie; null otherwise. */
  find(key: string, cookies: readonly string[]): CodeSession | null {
    const s = this.sessions.get(key);
    if (!s || !cookies.slice(0, 8).some((c) => crypto.timingSafeEqual(s.cookieHash, hash(c)))) return null;
    s.lastUsed = this.now();
    return s;
  }

  /** Drops expired tickets and idle sessions (`busy` says whether a session still has open connections). */
  sweep(busy: (s: CodeSession) => boolean = () => false): CodeSession[] {
    const now = this.now();
    for (const [k, t] of this.tickets) if (t.expiresAt <= now) this.tickets.delete(k);
    const idle: CodeSession[] = [];
    for (const s of this.sessions.values())
      if (now - s.lastUsed > this.limits.sessionIdleMs && !busy(s)) idle.push(s);
    return idle;
  }

  get ticketCount(): number {
    return this.tickets.size;
  }
}
