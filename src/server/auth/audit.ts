// The audit log: every sign-in, sign-out, failed sign-in and state-changing call. Writing it never
// fails the call it records; a failure to write is logged instead.
import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '#server/db/client.ts';
import { auditLog } from '#server/db/schema/identity.ts';

export interface AuditEntry {
  userId?: string | null;
  username?: string | null;
  action: string;
  target?: string | null;
  boardId?: string | null;
  result: 'ok' | 'failed' | 'denied';
  ip?: string | null;
  detail?: Record<string, unknown> | null;
}

export class AuditLog {
  /** Built once and prepared: every state-changing call writes one entry. */
  private readonly insert;

  constructor(
    db: Db,
    private readonly log: FastifyBaseLogger,
  ) {
    const p = (name: string) => sql.placeholder(name);
    this.insert = db
      .insert(auditLog)
      .values({
        userId: p('userId'),
        username: p('username'),
        action: p('action'),
        target: p('target'),
        boardId: p('boardId'),
        result: p('result'),
        ip: p('ip'),
        detail: sql`${p('detail')}::jsonb`,
      })
      .prepare('bianbu_audit_insert');
  }

  async record(entry: AuditEntry): Promise<void> {
    try {
      await this.insert.execute({
        userId: entry.userId ?? null,
        username: entry.username ?? null,
        action: entry.action,
        target: entry.target ?? null,
        boardId: entry.boardId ?? null,
        result: entry.result,
        ip: entry.ip ?? null,
        detail: entry.detail ? JSON.stringify(entry.detail) : null,
      });
    } catch (err) {
      this.log.error({ err, action: entry.action }, 'audit write failed');
    }
  }
}
