// The realtime feature: the bus (app.bus), the /ws STOMP endpoint (app.realtime) and the shell
// sessions (app.shells) with their two HTTP calls.
import type { EventEmitter } from 'node:events';
import type { Feature } from '#server/feature.ts';
import { ShellManager } from '#server/shells/manager.ts';
import { driverLookup, shellRoutes } from '#server/shells/shells.routes.ts';
import { type Bus, MemoryBus, RedisBus } from './bus.ts';
import { allowedOriginsFromConfig, RealtimeHub } from './hub.ts';

const stopListening = new WeakMap<object, () => void>();

export const realtimeFeature: Feature = {
  name: 'realtime',
  async setup(app) {
    const onError = (err: unknown) => app.log.error({ err }, 'realtime bus error');
    let bus: Bus;
    if (app.config.REDIS_URL) {
      const redis = new RedisBus(app.config.REDIS_URL, onError);
      await redis.ready();
      bus = redis;
    } else {
      bus = new MemoryBus(onError);
    }
    app.decorate('bus', bus);
    app.decorate(
      'realtime',
      new RealtimeHub(app, bus, {
        heartbeatMs: app.config.BIANBU_STOMP_HEARTBEAT_MS,
        allowedOrigins: allowedOriginsFromConfig(
          app.config.BIANBU_PUBLIC_URL,
          app.config.BIANBU_ALLOWED_ORIGINS,
        ),
        now: () => app.clock.now().getTime(),
      }),
    );
    app.decorate('shells', new ShellManager(bus, driverLookup(app), app.log));
  },
  calls: (app) => shellRoutes(app),
  async start(app) {
    await app.shells.start();
    await app.realtime.start(app.server);
    // Board state changes made on this instance go to every holder's console, on every instance.
    const events = (app as { boards?: { events?: EventEmitter } }).boards?.events;
    if (events) {
      const onState = (c: { boardId: string; to: string; reason?: string; at?: string }) =>
        app.realtime.publishBoardState(c.boardId, { state: c.to, reason: c.reason, at: c.at });
      events.on('state', onState);
      stopListening.set(app, () => events.off('state', onState));
    }
  },
  async stop(app) {
    stopListening.get(app)?.();
    await app.realtime.stop();
    await app.shells.stop();
    await app.bus.close();
  },
};
