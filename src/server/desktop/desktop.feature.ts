// The desktop feature: the /vnc/{applyId} bridge (app.vnc, vnc-bridge.ts) and the desktopStatus call
// the console asks before opening its VNC and code panes. Starts after the realtime feature (it uses
// its bus, for the close messages shells also obey, and its Origin rule).
import { Capability } from '#server/boards/driver.ts';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { driverLookup } from '#server/shells/shells.routes.ts';
import { DesktopUnavailable, desktopCalls, VNC_LIMITS } from '#shared/desktop.ts';
import { VncBridge } from './vnc-bridge.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The /vnc/{applyId} WebSocket bridge of this instance. */
    vnc: VncBridge;
  }
}

export const desktopFeature: Feature = {
  name: 'desktop',
  setup(app) {
    app.decorate(
      'vnc',
      new VncBridge(app, {
        bus: app.bus,
        driver: driverLookup(app),
        originAllowed: (req) => app.realtime.originAllowed(req),
        trustedProxies: app.config.BIANBU_TRUSTED_PROXIES,
      }),
    );
  },
  calls: (app) =>
    implement(desktopCalls, {
      desktopStatus: async (_input, ctx) => {
        const driver = await driverLookup(app)(ctx.apply!.deviceId);
        const caps = driver.capabilities();
        const vnc = caps.has(Capability.vnc)
          ? { available: true }
          : { available: false, reason: DesktopUnavailable.noDesktop };
        // code-server is there when something answers on its port (nothing is started for it).
        let code: { available: boolean; reason?: string } = {
          available: false,
          reason: DesktopUnavailable.noCodeServer,
        };
        if (caps.has(Capability.codeServer)) {
          const s = await driver.connectPort(VNC_LIMITS.codeServerPort).catch(() => null);
          if (s) {
            s.destroy();
            code = { available: true };
          }
        }
        return { vnc, code };
      },
    }),
  async start(app) {
    await app.vnc.start(app.server);
  },
  async stop(app) {
    await app.vnc.stop();
  },
};
