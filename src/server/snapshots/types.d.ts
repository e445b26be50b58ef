import type { SnapshotService } from './snapshots.service.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Board disk snapshots (src/server/snapshots/snapshots.service.ts). */
    snapshots: SnapshotService;
  }
}
