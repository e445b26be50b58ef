// The audit log: every sign-in, sign-out, failed sign-in and state-changing call. Writing it never
// fails the call it records; a failure to write is logged instead.
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
  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
  ) {}

  async record(entry: AuditEntry): Promise<void> {
    try {
      await this.db.insert(auditLog).values({
        userId: entry.userId ?? null,
        username: entry.username ?? null,
        action: entry.action,
        target: entry.target ?? null,
        boardId: entry.boardId ?? null,
        result: entry.result,
        ip: entry.ip ?? null,
        detail: entry.detail ?? null,
      });
    } catch (err) {
      this.log.error({ err, action: entry.action }, 'audit write failed');
    }
  }
}
