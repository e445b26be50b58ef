// Calls of the service itself: health and public settings.
import { z } from 'zod';
import { defineCall } from './http.ts';
import { idString } from './ids.ts';

export const publicSettings = z.object({
  XPACK_ENABLED: z.boolean(),
  /** Which route set the console shows: `full`, or `reduced` (spec section 2). */
  routeSet: z.enum(['full', 'reduced']),
  version: z.string(),
  docsUrl: z.string(),
  oidc: z.object({ authorizeUrl: z.string(), registerUrl: z.string(), clientId: z.string() }).nullable(),
});
export type PublicSettings = z.infer<typeof publicSettings>;

export const systemCalls = [
  defineCall({
    name: 'health',
    method: 'GET',
    path: '/api/health',
    auth: 'public',
    response: z.object({ status: z.literal('ok'), uptimeSeconds: z.number(), storage: z.string() }),
    summary: 'Liveness and the storage in use',
  }),
  defineCall({
    name: 'publicSettings',
    method: 'GET',
    path: '/api/v1/settings/public/',
    auth: 'public',
    response: publicSettings,
    summary: 'Settings the console needs before sign-in (XPACK_ENABLED, route set, sign-in URLs)',
  }),
  defineCall({
    name: 'resourcesCache',
    method: 'POST',
    path: '/api/v1/common/resources/cache/',
    request: z.object({ resources: z.array(idString({ max: 200 })).max(1000) }),
    response: z.object({ spm: z.string() }),
    summary: 'Cache a list of resource ids and answer a short key for them (spec section 7)',
  }),
] as const;
