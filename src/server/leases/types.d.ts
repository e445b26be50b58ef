import type { LeaseScheduler } from './leases.scheduler.ts';
import type { LeaseService } from './leases.service.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Provided by the device lifecycle feature: leases, applies, board actions and history. */
    leases: LeaseService;
    /** Provided by the device lifecycle feature: the expiry scheduler (`tick()` runs one pass now). */
    leaseScheduler: LeaseScheduler;
    /**
     * Provided by the device lifecycle feature: the user's open applies whose lease is live, newest
     * first (what GET /api/user/apply-info answers).
     */
    listAppliesOf?: (
      userId: string,
    ) => Promise<{ applyId: string; deviceId: string; serverName: string; expiresAt: string | null }[]>;
  }
}
