// The snapshots feature (src/shared/snapshots.ts): snapshots of a board's whole disk, on the board of
// the caller's apply. It needs the lab, the lifecycle and the flash catalogue (quota, images).
import type { FastifyInstance } from 'fastify';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { snapshotCalls } from '#shared/snapshots.ts';
import { SnapshotService } from './snapshots.service.ts';

export const snapshotsFeature: Feature = {
  name: 'snapshots',
  setup(app: FastifyInstance) {
    app.decorate('snapshots', new SnapshotService(app));
  },
  calls: (app: FastifyInstance) => {
    const s = app.snapshots;
    return implement(snapshotCalls, {
      listSnapshots: async (_in, { apply }) => s.list(apply!),
      saveSnapshot: async ({ name }, { apply }) => s.save(apply!, name),
      restoreSnapshot: async ({ name }, { apply }) => s.restore(apply!, name),
      deleteSnapshot: async ({ name }, { apply }) => s.remove(apply!, name),
      snapshotImage: async (input, { apply, user }) => s.exportImage(user!, apply!, input),
    });
  },
};
