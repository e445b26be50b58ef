// The waiting line for boards: join, list, cancel (src/shared/queue.ts), hooked into the lease
// lifecycle (freed boards, direct requests, the scheduler's ticks) once both are set up.
import type { FastifyInstance } from 'fastify';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { queueCalls } from '#shared/queue.ts';
import { QueueService } from './queue.service.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Provided by the queue feature: the waiting line for boards. */
    leaseQueue: QueueService;
  }
}

export const queueFeature: Feature = {
  name: 'queue',
  setup(app: FastifyInstance) {
    const service = new QueueService(app, app.leases);
    service.install();
    app.decorate('leaseQueue', service);
  },
  calls: (app: FastifyInstance) => {
    const q = app.leaseQueue;
    return implement(queueCalls, {
      joinQueue: async (input, { user }) => q.join(user!.id, input),
      fetchQueue: async (_in, { user }) => q.list(user!.id),
      cancelQueue: async ({ entryId }, { user }) => q.cancel(user!.id, entryId),
    });
  },
};
