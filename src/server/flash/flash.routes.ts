// The flashing feature: the image catalogue and flash jobs (`app.flash`). It starts after the board
// lab and the lifecycle (it needs drivers and leases) and stops before them, so a stopping service
// marks its running jobs interrupted while the boards can still boot their previous image.
import type { FastifyInstance } from 'fastify';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { flashCalls } from '#shared/flash.ts';
import { FlashService } from './flash.service.ts';
import { imageDto } from './images.ts';

export const flashFeature: Feature = {
  name: 'flash',
  setup(app: FastifyInstance) {
    app.decorate('flash', new FlashService(app));
  },
  calls: (app: FastifyInstance) => {
    const s = app.flash;
    return implement(flashCalls, {
      flashImages: async ({ deviceId }, { user }) => {
        // With a board: each image says whether it fits it (its driver's kind of image, its model).
        const board = deviceId ? await app.boards.row(deviceId) : undefined;
        await s.ready();
        const rows = await s.images.list(user!.id);
        return {
          items: rows.map((r) => imageDto(r, board)),
          quota: { usedBytes: await s.images.usedBy(user!.id), limitBytes: s.images.quotaBytes },
        };
      },
      postFlash: async (input, { user }) => s.post(user!, input),
      postMultiFlash: async (input, { user }) => s.postMulti(user!, input),
      fetchFlashJob: async ({ deviceId }, { user }) => s.latest(user!, deviceId),
      fetchMultiFlashJob: async ({ multiIds }, { user }) => s.multi(user!, multiIds),
      cancelFlashJob: async ({ jobId }, { user }) => s.cancel(user!, jobId),
      flashHistory: async ({ deviceId, limit }, { user }) => s.history(user!, deviceId, limit),
      uploadFlashImage: async (_in, { req, user }) => imageDto(await s.images.upload(req, user!)),
      retireFlashImage: async ({ tag }, { user }) => imageDto(await s.images.retire(tag, user!)),
    });
  },
  start: async (app) => {
    // Before the first call: uploads a killed service left would hold tags and quota, and their
    // temporary files disk, for good.
    await app.flash.images.recoverUploads();
    await app.flash.start();
  },
  stop: (app) => app.flash.stop(),
};
