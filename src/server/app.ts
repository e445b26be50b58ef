// The Fastify app factory: tests build the real app with it (in-process, `app.inject` or a real
// socket on port 0); main.ts builds it from the environment and listens.
import fs from 'node:fs';
import path from 'node:path';
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import Fastify, { type FastifyInstance } from 'fastify';
import { AuditLog } from './auth/audit.ts';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import { migrate, openStorage, type Storage } from './db/client.ts';
import type { Feature } from './feature.ts';
import { features as defaultFeatures } from './features.ts';
import { registerCalls } from './http/register.ts';
import { trustProxyOption } from './http/trusted-proxies.ts';
import { installEnvelope } from './plugins/envelope.ts';
import { installStatic } from './plugins/static.ts';
import { secureDataDir } from './system/data-dir.ts';

export interface BuildOptions {
  config: Config;
  /** Use this storage instead of opening one from the config (tests share or pre-seed one). */
  storage?: Storage;
  clock?: Clock;
  features?: Feature[];
  /** Pretty logs on a terminal; JSON otherwise. */
  logger?: boolean | object;
}

export async function buildApp(opts: BuildOptions): Promise<FastifyInstance> {
  const { config } = opts;
  const app = Fastify({
    logger: opts.logger ?? { level: config.LOG_LEVEL },
    bodyLimit: config.BIANBU_BODY_LIMIT,
    // X-Forwarded-* only from the configured proxies; from anyone else the socket is the client.
    trustProxy: trustProxyOption(config.BIANBU_TRUSTED_PROXIES),
    forceCloseConnections: true,
    // Starting brings up storage, migrations and the board lab; on a busy host that can pass
    // Fastify's 10 s default, which would abort a start that is merely slow.
    pluginTimeout: 60_000,
    // HTTPS served by the service itself (board hosts' links are then TLS end to end).
    ...(config.BIANBU_TLS_CERT && config.BIANBU_TLS_KEY
      ? { https: { cert: fs.readFileSync(config.BIANBU_TLS_CERT), key: fs.readFileSync(config.BIANBU_TLS_KEY) } }
      : {}),
  });
  // The data dir is private to the service (0711 itself, everything else 0600/0700, boards' own
  // files aside); PGlite creates its files 0666 whatever the umask, hence again once it is open.
  const secureData = (when: string) => {
    const { changed } = secureDataDir(config.dataDir, {
      pluginsDir: config.BIANBU_PLUGINS_DIR,
      warn: (msg, detail) => app.log.warn(detail, msg),
    });
    if (changed) app.log.info({ changed, when }, 'data directory entries made private');
  };
  secureData('start');
  const ownPglite = !opts.storage && !config.DATABASE_URL;
  const storage =
    opts.storage ??
    (await openStorage({ databaseUrl: config.DATABASE_URL, pgliteDir: path.join(config.dataDir, 'pglite') }));
  const applied = await migrate(storage);
  if (applied.length) app.log.info({ applied }, 'migrations applied');
  if (ownPglite) secureData('database opened');

  app.decorate('config', config);
  app.decorate('storage', storage);
  app.decorate('clock', opts.clock ?? systemClock);
  app.decorate('audit', new AuditLog(storage.db, app.log));

  installEnvelope(app);
  await app.register(formbody, { bodyLimit: config.BIANBU_BODY_LIMIT });
  await app.register(multipart, { limits: { fileSize: Number.MAX_SAFE_INTEGER, files: 32, fields: 32 } });

  const features = opts.features ?? defaultFeatures;
  for (const f of features) await f.setup?.(app);
  registerCalls(
    app,
    features.flatMap((f) => f.calls?.(app) ?? []),
  );
  await installStatic(app, config.BIANBU_WEB_DIR);

  app.addHook('onReady', async () => {
    for (const f of features) await f.start?.(app);
  });
  app.addHook('onClose', async () => {
    for (const f of [...features].reverse()) await f.stop?.(app);
    if (!opts.storage) await storage.close();
    if (ownPglite) {
      try {
        secureData('stop');
      } catch (err) {
        app.log.warn({ err }, 'data directory modes not checked at stop');
      }
    }
  });
  return app;
}
