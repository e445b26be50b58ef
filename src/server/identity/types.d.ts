import type { ApplyInfoItem } from '#shared/user.ts';
import type { IdentityService } from './identity.service.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Sign-in flows, credentials and phone/sequence codes (the identity feature). */
    identity: IdentityService;
    /**
     * Provided by the device lifecycle feature: the live applies of a user, for
     * GET /api/user/apply-info. Without it the call answers [].
     */
    userApplies?: (userId: string) => Promise<ApplyInfoItem[]>;
  }
}
