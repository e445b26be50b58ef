// Binding handlers to the contract. A feature writes `implement(featureCalls, { name: handler })`;
// the app registers the result with `registerCalls`. The compiler checks that each handler takes the
// call's parsed request and answers its response type.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { CallDef } from '#shared/http.ts';
import type { AuthUser } from '#server/auth/user-context.ts';

export interface CallContext {
  app: FastifyInstance;
  req: FastifyRequest;
  reply: FastifyReply;
  /** The caller; null only on public calls. */
  user: AuthUser | null;
  /** Set on calls with `needsApply`: the caller's live apply, as the lifecycle module resolves it. */
  apply: ResolvedApply | null;
  ip: string;
}

export interface ResolvedApply {
  applyId: string;
  deviceId: string;
  userId: string;
  leaseId: string;
}

/**
 * An apply's row, looked up while the caller's token is checked (on PostgreSQL the two queries run
 * side by side). It decides nothing: resolveApply still checks the row against the authenticated user.
 */
export interface EarlyApply {
  readonly applyId: string;
  readonly row: Promise<unknown>;
}

export type Handler<C extends CallDef> = (
  input: z.output<C['request']>,
  ctx: CallContext,
) => Promise<z.input<C['response']> | NodeJS.ReadableStream | undefined | void>;

type CallsByName<Cs extends readonly CallDef[]> = { [C in Cs[number] as C['name']]: C };

export type HandlerMap<Cs extends readonly CallDef[]> = {
  [N in keyof CallsByName<Cs>]: CallsByName<Cs>[N] extends CallDef ? Handler<CallsByName<Cs>[N]> : never;
};

export interface BoundCall {
  call: CallDef;
  handler: Handler<CallDef>;
}

export function implement<const Cs extends readonly CallDef[]>(calls: Cs, handlers: HandlerMap<Cs>): BoundCall[] {
  return calls.map((call) => {
    const handler = (handlers as Record<string, Handler<CallDef>>)[call.name];
    if (!handler) throw new Error(`no handler for call ${call.name}`);
    return { call, handler };
  });
}
