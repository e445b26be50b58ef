// The realtime feature: the bus (app.bus), the /ws STOMP endpoint (app.realtime) and the shell
// sessions (app.shells) with their two HTTP calls; the shells' sign-ins are watched for expiry
// (session-expiry.ts) so they end on time with no socket open.

import type { EventEmitter } from 'node:events';
import { wsRelay } from '#server/boards/local/pty-host/relay.ts';
import type { Feature } from '#server/feature.ts';
import { ShellManager } from '#server/shells/manager.ts';
import { driverLookup, shellRoutes } from '#server/shells/shells.routes.ts';
import { type Bus, MemoryBus, RedisBus } from './bus.ts';
import { allowedOriginsFromConfig, RealtimeHub } from './hub.ts';
import { SignInWatch } from './session-expiry.ts';

const stopListening = new WeakMap<object, () => void>();
const watches = new WeakMap<object, SignInWatch>();

/** Credential ids of the live shells this instance owns. */
function* shellCredentials(shells: ShellManager): Iterable<string> {
  for (const s of shells.stats()) {
    if (s.ended) continue;
    const id = shells.get(s.id)?.meta.credentialId;
    if (id) yield id;
  }
}

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
        trustedProxies: app.config.BIANBU_TRUSTED_PROXIES,
        now: () => app.clock.now().getTime(),
        relay:
          app.config.BIANBU_WS_RELAY === 'on'
            ? () =>
                wsRelay().catch((err) => {
                  app.log.warn({ err }, 'the WebSocket relay cannot run: shells are served by the service');
                  return null;
                })
            : undefined,
      }),
    );
    app.decorate('shells', new ShellManager(bus, driverLookup(app), app.log));
  },
  calls: (app) => shellRoutes(app),
  async start(app) {
    await app.shells.start();
    await app.realtime.start(app.server);
    const watch = new SignInWatch({
      db: () => app.storage.db,
      live: () => shellCredentials(app.shells),
      end: (ids, end) => app.realtime.endCredentials(ids, end),
      now: () => app.clock.now().getTime(),
      // As often as the hub sweeps for silent clients, within [250 ms, 5 s]; the next expiry is waited for exactly.
      intervalMs: Math.min(5000, Math.max(250, Math.floor(app.config.BIANBU_STOMP_HEARTBEAT_MS / 2))),
      onError: (err) => app.log.warn({ err }, 'checking the shells’ sign-ins failed'),
    });
    watch.start();
    watches.set(app, watch);
    // Board state changes made on this instance go to every holder's console, on every instance.
    const events = (app as { boards?: { events?: EventEmitter } }).boards?.events;
    if (events) {
      const onState = (c: { boardId: string; to: string; reason?: string; at?: string }) =>
        app.realtime.publishBoardState(c.boardId, { state: c.to, reason: c.reason, at: c.at });
      events.on('state', onState);
      const onFacts = (f: { boardId: string; state: string; attributes: Record<string, string | number> }) =>
        app.realtime.publishBoardState(f.boardId, {
          state: f.state,
          reason: 'board.facts',
          attributes: f.attributes,
        });
      events.on('facts', onFacts);
      stopListening.set(app, () => {
        events.off('state', onState);
        events.off('facts', onFacts);
      });
    }
  },
  async stop(app) {
    stopListening.get(app)?.();
    await watches.get(app)?.stop();
    await app.realtime.stop();
    await app.shells.stop();
    await app.bus.close();
  },
};
