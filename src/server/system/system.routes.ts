import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { systemCalls } from '#shared/system.ts';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';

const startedAt = Date.now();

/** Resource-id lists cached under a short key (spec section 7), bounded in count. */
const resourceCache = new Map<string, string[]>();
const RESOURCE_CACHE_MAX = 1000;

export const systemFeature: Feature = {
  name: 'system',
  calls: (app: FastifyInstance) =>
    implement(systemCalls, {
      health: async () => ({
        status: 'ok' as const,
        uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
        storage: app.storage.kind,
      }),
      publicSettings: async () => ({
        XPACK_ENABLED: app.config.XPACK_ENABLED,
        routeSet: app.config.BIANBU_ROUTE_SET,
        version: process.env.npm_package_version ?? '0.1.0',
        docsUrl: app.config.BIANBU_DOCS_URL,
        oidc: app.oidcPublic ?? null,
      }),
      resourcesCache: async ({ resources }) => {
        const spm = crypto.randomBytes(8).toString('hex');
        if (resourceCache.size >= RESOURCE_CACHE_MAX) {
          const oldest = resourceCache.keys().next().value;
          if (oldest) resourceCache.delete(oldest);
        }
        resourceCache.set(spm, resources);
        return { spm };
      },
    }),
};
