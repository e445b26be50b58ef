// The device lifecycle feature: lease, apply, board action, load and history calls; the decorations
// other features use (`resolveApply` for calls that need an apply, `listAppliesOf` for apply-info);
// the expiry scheduler, started once the service is ready and stopped before storage closes.
import type { FastifyInstance } from 'fastify';
import { leaseCalls } from '#shared/leases.ts';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { LeaseScheduler } from './leases.scheduler.ts';
import { LeaseService } from './leases.service.ts';

export const leasesFeature: Feature = {
  name: 'leases',
  setup(app: FastifyInstance) {
    const service = new LeaseService(app);
    app.decorate('leases', service);
    app.decorate('leaseScheduler', new LeaseScheduler(app, service, app.config.BIANBU_LEASE_TICK_MS));
    app.decorate('resolveApply', (ctx, input, early) => service.resolveApply(ctx, input, early));
    app.decorate('prefetchApply', (headers, input) => service.prefetchApply(headers, input));
    app.decorate('listAppliesOf', (userId: string) => service.listAppliesOf(userId));
    // The identity feature answers GET /api/user/apply-info through this name.
    app.decorate('userApplies', (userId: string) => service.listAppliesOf(userId));
  },
  calls: (app: FastifyInstance) => {
    const s = app.leases;
    return implement(leaseCalls, {
      fetchRequestDevice: async (_in, { user }) => s.list(user!.id),
      fetchRequestDeviceSimple: async (_in, { user }) => s.listSimple(user!.id),
      requestDevice: async (input, { user }) => s.request(user!.id, input),
      unlockRequestDevice: async (input, { user }) => s.unlock(user!.id, input),
      renameRequestDevice: async (input, { user }) => s.rename(user!.id, input),
      renewalDevice: async (input, { user }) => s.renew(user!.id, input),
      applyDevice: async ({ deviceId }, { user }) => s.apply(user!.id, deviceId),
      checkApplyId: async ({ applyId }, { user }) => s.checkApply(user!.id, applyId),
      unapplyDevice: async ({ applyId }, { user }) => s.unapply(user!.id, applyId),
      powerReset: async (_in, { apply }) => s.powerReset(apply!),
      callPlugin: async (input, { apply }) => s.callPlugin(apply!, input),
      recentCpuLoading: async (input, { user }) => s.load(user!.id, 'cpu', input),
      recentMemLoading: async (input, { user }) => s.load(user!.id, 'mem', input),
      recentDiskLoading: async (input, { user }) => s.load(user!.id, 'disk', input),
      recentNetLoading: async (input, { user }) => s.load(user!.id, 'net', input),
      applyHistory: async ({ page, pageSize }, { user }) => s.applyHistory(user!.id, page, pageSize),
      workHistory: async ({ deviceId }, { user }) => s.workHistory(user!.id, deviceId),
      recentApplies: async ({ limit }, { user }) => s.recentApplies(user!.id, limit),
    });
  },
  start(app: FastifyInstance) {
    app.leaseScheduler.start();
  },
  async stop(app: FastifyInstance) {
    await app.leaseScheduler.stop();
    await app.leases.drain();
  },
};
