// Registers the contract's calls as Fastify routes: validates the payload with the call's zod
// schema, authenticates and authorises, resolves the apply when the call needs one, wraps the answer
// in the envelope, audits state-changing calls, and answers OPTIONS with the call's metadata.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { ErrorKey, type FieldIssue, ResultCode } from '#shared/codes.ts';
import { type CallDef, callMetadata } from '#shared/http.ts';
import { entityId } from '#shared/ids.ts';
import { hasPermission } from '#shared/permissions.ts';
import { authenticate } from '#server/auth/user-context.ts';
import { AppError, badRequest, forbidden, unauthorized } from '#server/errors.ts';
import type { BoundCall, CallContext } from './handlers.ts';

export function zodIssues(error: z.ZodError) {
  return error.issues.map((i) => ({
    path: i.path.length ? i.path.map(String).join('.') : '(body)',
    message: i.message,
  }));
}

/**
 * The first string of a payload (values and keys, at any depth) holding a NUL byte. PostgreSQL
 * refuses NUL in text, and no field of any call has a use for it: it is bad input, never a 500.
 */
export function nulIssue(value: unknown, at: string[] = []): FieldIssue | undefined {
  const here = () => (at.length ? at.join('.') : '(body)');
  if (typeof value === 'string')
    return value.includes('\u0000') ? { path: here(), message: 'must not contain NUL bytes' } : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulIssue(value[i], [...at, String(i)]);
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k.includes('\u0000')) return { path: here(), message: 'must not contain NUL bytes in its keys' };
      const found = nulIssue(v, [...at, k]);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * The applyId of the ApplyAccess header, validated with the same id schema as a payload's applyId,
 * for the calls that may resolve their apply from it (needsApply, and the transfers).
 */
function checkApplyHeader(call: CallDef, req: FastifyRequest): void {
  if (!call.needsApply && !call.transfer) return;
  const header = req.headers.applyaccess;
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw === undefined || raw === '') return;
  const parsed = entityId.safeParse(raw.trim().replace(/^"(.*)"$/, '$1'));
  if (!parsed.success) {
    const message = parsed.error.issues[0]?.message ?? 'invalid';
    throw badRequest(`Invalid ApplyAccess: ${message}`, ErrorKey.validation, [
      { path: 'ApplyAccess', message },
    ]);
  }
}

function payloadOf(req: FastifyRequest, kind: string): unknown {
  if (kind === 'query') return req.query ?? {};
  if (kind === 'multipart') return {};
  return req.body ?? {};
}

export function registerCalls(app: FastifyInstance, bound: BoundCall[]): void {
  const seen = new Map<string, string>();
  for (const { call, handler } of bound) {
    const key = `${call.method} ${call.path}`;
    if (seen.has(key)) throw new Error(`duplicate route ${key} (${seen.get(key)} and ${call.name})`);
    seen.set(key, call.name);

    app.route({
      method: call.method,
      url: call.path,
      bodyLimit: call.bodyLimit ?? (call.transfer ? Number.MAX_SAFE_INTEGER : undefined),
      handler: async (req, reply) => {
        // The apply the call names is looked up while the token is checked (it decides nothing yet).
        const early =
          call.needsApply && req.headers.authorization
            ? app.prefetchApply?.(req.headers, payloadOf(req, call.payload))
            : undefined;
        // A public call ignores a bad token rather than failing on it.
        const user =
          call.auth === 'public'
            ? await authenticate(app.storage.db, req.headers.authorization, app.clock.now()).catch(() => null)
            : await authenticate(app.storage.db, req.headers.authorization, app.clock.now());
        if (call.auth !== 'public' && !user) throw unauthorized();
        if (call.perms && !hasPermission(call.perms, user?.perms ?? [])) throw forbidden();

        const parsed = call.request.safeParse(payloadOf(req, call.payload));
        if (!parsed.success) {
          const fields = zodIssues(parsed.error);
          throw badRequest(`Invalid ${fields[0].path}: ${fields[0].message}`, ErrorKey.validation, fields);
        }
        const nul = nulIssue(parsed.data);
        if (nul) throw badRequest(`Invalid ${nul.path}: ${nul.message}`, ErrorKey.validation, [nul]);
        checkApplyHeader(call, req);
        const ctx: CallContext = { app, req, reply, user, apply: null, ip: req.ip };
        if (call.needsApply) {
          if (!app.resolveApply)
            throw new AppError(503, ResultCode.Unavailable, 'apply.unavailable', 'Applies are not available');
          ctx.apply = await app.resolveApply(ctx, parsed.data, early);
        }
        const audited = call.method === 'POST' && call.auth !== 'public' && !call.readOnly;
        const audit = (result: 'ok' | 'failed' | 'denied', detail?: Record<string, unknown>) => {
          if (!audited) return;
          void app.audit.record({
            userId: user?.id,
            username: user?.username,
            action: call.name,
            boardId: ctx.apply?.deviceId ?? null,
            result,
            ip: req.ip,
            detail,
          });
        };
        try {
          const result = await handler(parsed.data, ctx);
          // The answer leaves first; the audit entry is written right after, off the caller's wait.
          let sent: FastifyReply;
          if (call.answer === 'stream') sent = reply.send(result);
          else if (reply.sent) sent = reply;
          else sent = reply.send({ code: ResultCode.Success, message: 'ok', data: result ?? null });
          audit('ok');
          return sent;
        } catch (err) {
          const known = err instanceof AppError;
          audit(known && err.status === 403 ? 'denied' : 'failed', {
            error: known ? err.key : 'server.error',
          });
          throw err;
        }
      },
    });
    app.route({
      method: 'OPTIONS',
      url: call.path,
      handler: async () => ({ code: ResultCode.Success, message: 'ok', data: callMetadata(call) }),
    });
  }
}
