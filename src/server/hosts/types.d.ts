import type { HostLinks } from './host-links.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Board hosts' links to this instance (src/server/hosts/host-links.ts). */
    hosts: HostLinks;
  }
}
