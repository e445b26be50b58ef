// Serves the built console with an SPA fallback: a path that is not a file and not under a service
// prefix answers index.html, so deep links (/workbench, /clouddevice/public) load the console.
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { apiNotFound } from './envelope.ts';

const SERVICE_PREFIXES = ['/api/', '/api', '/idp/', '/ws', '/vnc/'];

export async function installStatic(app: FastifyInstance, webDir: string): Promise<void> {
  const root = path.resolve(webDir);
  const hasBuild = fs.existsSync(path.join(root, 'index.html'));
  if (hasBuild) {
    await app.register(fastifyStatic, { root, wildcard: false, index: false, cacheControl: false });
  } else {
    app.log.warn(`no built console at ${root}: run "npm run build" (npm start does it for you)`);
  }
  app.setNotFoundHandler((req, reply) => {
    const url = req.url;
    if (SERVICE_PREFIXES.some((p) => url === p || url.startsWith(p.endsWith('/') ? p : `${p}/`) || url.startsWith(`${p}?`))) {
      return reply.status(404).send(apiNotFound(url));
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply.status(404).send(apiNotFound(url));
    if (!hasBuild) return reply.status(503).type('text/plain').send('The console is not built: run "npm run build".');
    const rel = decodeURIComponent(url.split('?')[0]);
    if (path.extname(rel) && rel.startsWith('/assets/')) return reply.status(404).send('Not found');
    return reply
      .header('cache-control', 'no-cache')
      .type('text/html')
      .send(fs.createReadStream(path.join(root, 'index.html')));
  });
  if (hasBuild) {
    app.addHook('onSend', async (req, reply, payload) => {
      if (req.url.startsWith('/assets/')) reply.header('cache-control', 'public, max-age=31536000, immutable');
      return payload;
    });
  }
}
