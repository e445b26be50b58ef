// The board hosts feature (issue 37, docs/board-hosts.md): board hosts dial in to every instance
// and their boards are served like the service's own; administrators create, list and revoke hosts.
// Needs the lab (app.boards) and the bus (realtime), so it starts after both.
import type { FastifyInstance } from 'fastify';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { hostCalls } from '#shared/board-hosts.ts';
import { HostLinks } from './host-links.ts';

export const hostsFeature: Feature = {
  name: 'hosts',
  setup(app: FastifyInstance) {
    app.decorate('hosts', new HostLinks(app));
  },
  calls: (app: FastifyInstance) =>
    implement(hostCalls, {
      adminHostsList: async () => ({ items: await app.hosts.repo.list() }),
      adminHostsAdd: async ({ name }, { user }) => {
        const { token } = await app.hosts.repo.create(name, user?.id ?? null);
        await app.audit.record({
          userId: user?.id,
          username: user?.username,
          action: 'host.add',
          result: 'ok',
          detail: { name },
        });
        return { host: await app.hosts.repo.one(name), token };
      },
      adminHostsRevoke: async ({ name }, { user }) => {
        await app.hosts.revoke(name);
        await app.audit.record({
          userId: user?.id,
          username: user?.username,
          action: 'host.revoke',
          result: 'ok',
          detail: { name },
        });
        return app.hosts.repo.one(name);
      },
    }),
  start: (app) => app.hosts.start(),
  stop: (app) => app.hosts.stop(),
};
