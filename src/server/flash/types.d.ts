import type { FlashService } from './flash.service.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Flash jobs and the image catalogue (src/server/flash/flash.service.ts). */
    flash: FlashService;
  }
}
