import type { AuditLog } from './auth/audit.ts';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Storage } from './db/client.ts';
import type { CallContext, ResolvedApply } from './http/handlers.ts';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    storage: Storage;
    clock: Clock;
    audit: AuditLog;
    /** Provided by the device lifecycle feature: the caller's live apply for a call that needs one. */
    resolveApply?: (ctx: CallContext, input: unknown) => Promise<ResolvedApply>;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Provided by the identity feature: the sign-in URLs the console sends the browser to. */
    oidcPublic?: { authorizeUrl: string; registerUrl: string; clientId: string };
  }
}
