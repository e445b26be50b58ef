import type { BoardLab } from './lab.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The board lab: drivers, state, health and metrics of every board (src/server/boards/lab.ts). */
    boards: BoardLab;
  }
}
