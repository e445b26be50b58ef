import type { ShellManager } from '#server/shells/manager.ts';
import type { Bus } from './bus.ts';
import type { RealtimeHub } from './hub.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Realtime fan-out between instances (in-process, or Redis pub/sub with REDIS_URL). */
    bus: Bus;
    /** The /ws STOMP endpoint: publishToUser, publishBoardState. */
    realtime: RealtimeHub;
    /** Shell sessions: open, close, closeForApply, closeForBoard. */
    shells: ShellManager;
  }
}
