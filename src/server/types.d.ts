import type { AuditLog } from './auth/audit.ts';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Storage } from './db/client.ts';
import type { CallContext, EarlyApply, ResolvedApply } from './http/handlers.ts';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    storage: Storage;
    clock: Clock;
    audit: AuditLog;
    /** Provided by the device lifecycle feature: the caller's live apply for a call that needs one. */
    resolveApply?: (ctx: CallContext, input: unknown, early?: EarlyApply) => Promise<ResolvedApply>;
    /** Starts the lookup of the apply a call names, before its caller is authenticated (PostgreSQL). */
    prefetchApply?: (
      headers: Readonly<Record<string, string | string[] | undefined>>,
      input: unknown,
    ) => EarlyApply | undefined;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Provided by the identity feature: the sign-in URLs the console sends the browser to. */
    oidcPublic?: { authorizeUrl: string; registerUrl: string; clientId: string };
  }
}
