// Registers the contract's calls as Fastify routes: validates the payload with the call's zod
// schema, authenticates and authorises, resolves the apply when the call needs one, wraps the answer
// in the envelope, audits state-changing calls, and answers OPTIONS with the call's metadata.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { ErrorKey, ResultCode } from '#shared/codes.ts';
import { callMetadata } from '#shared/http.ts';
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
        const ctx: CallContext = { app, req, reply, user, apply: null, ip: req.ip };
        if (call.needsApply) {
          if (!app.resolveApply) throw new AppError(503, ResultCode.Unavailable, 'apply.unavailable', 'Applies are not available');
          ctx.apply = await app.resolveApply(ctx, parsed.data);
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
          audit('ok');
          if (call.answer === 'stream') return reply.send(result);
          if (reply.sent) return reply;
          return reply.send({ code: ResultCode.Success, message: 'ok', data: result ?? null });
        } catch (err) {
          const known = err instanceof AppError;
          audit(known && err.status === 403 ? 'denied' : 'failed', { error: known ? err.key : 'server.error' });
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
