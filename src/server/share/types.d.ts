import type { ShareService } from './share.service.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Provided by the sharing feature: groups, shared boards, revocation, joined shells. */
    share?: ShareService;
    /**
     * Provided by the sharing feature: whether `userId` may join shell `shellId` as a guest (it is
     * shared into a group they belong to, that group holds the board's live lease, and they have an
     * open apply on it). The realtime front asks before attaching a viewer that is not the host.
     */
    shellGuest?: (userId: string, shellId: string) => Promise<boolean>;
  }
}
