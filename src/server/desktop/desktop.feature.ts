// The desktop feature: the /vnc/{applyId} bridge (app.vnc, vnc-bridge.ts), the /code/ proxy on its
// own listener (app.code, code-proxy.ts; on unless BIANBU_CODE_PORT=off), and the desktopStatus and
// codeTicket calls the console asks before opening its VNC and code panes. Starts after the realtime
// feature (it uses its bus, for the close messages shells also obey, and its Origin rule). The console's
// own listener refuses the code host names, so the console's cookies never live on a board's host.
import type { FastifyInstance } from 'fastify';
import { Capability } from '#server/boards/driver.ts';
import { AppError } from '#server/errors.ts';
import type { Feature } from '#server/feature.ts';
import { implement } from '#server/http/handlers.ts';
import { driverLookup } from '#server/shells/shells.routes.ts';
import { CodeReason, DesktopUnavailable, desktopCalls, VNC_LIMITS } from '#shared/desktop.ts';
import { codeHostRule, matchesCodeHost } from './code-hosts.ts';
import { CodeProxy } from './code-proxy.ts';
import { CodeServerInstall } from './code-server-install.ts';
import { VncBridge } from './vnc-bridge.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The /vnc/{applyId} WebSocket bridge of this instance. */
    vnc: VncBridge;
    /** The /code/ proxy's listener, or null with BIANBU_CODE_PORT=off. */
    code: CodeProxy | null;
  }
}

/** The code-server install a start began (code-server-install.ts), per app. */
const installs = new WeakMap<FastifyInstance, CodeServerInstall>();

/** The install this app's start began, if any (for tests and status). */
export function codeServerInstallOf(app: FastifyInstance): CodeServerInstall | undefined {
  return installs.get(app);
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
    // On by default, on a port of its own: the console's + 1, or any free one.
    const set = app.config.BIANBU_CODE_PORT;
    const codePort =
      set === 'off' ? null : (set ?? (app.config.PORT === 0 ? 0 : (app.config.PORT % 65535) + 1));
    app.decorate(
      'code',
      codePort === null
        ? null
        : new CodeProxy(app, {
            bus: app.bus,
            driver: driverLookup(app),
            port: codePort,
            anyPortIfTaken: set === undefined,
            host: app.config.HOST,
            hosts: codeHostRule({ origin: app.config.BIANBU_CODE_ORIGIN, host: app.config.BIANBU_CODE_HOST }),
            trustedProxies: app.config.BIANBU_TRUSTED_PROXIES,
          }),
    );
    const code = app.code;
    if (code)
      app.addHook('onRequest', async (req, reply) => {
        let hostname: string;
        try {
          hostname = new URL(`http://${req.host}`).hostname;
        } catch {
          return;
        }
        if (!matchesCodeHost(code.pattern, hostname)) return;
        // 421 Misdirected Request: this name belongs to boards' pages, which may read its cookies.
        return reply
          .status(421)
          .header('content-type', 'text/plain; charset=utf-8')
          .header('x-code-reason', CodeReason.wrongHost)
          .send(`${CodeReason.wrongHost}\nThe console is not served on the code window's host names\n`);
      });
  },
  calls: (app) =>
    implement(desktopCalls, {
      desktopStatus: async (_input, ctx) => {
        const driver = await driverLookup(app)(ctx.apply!.deviceId);
        const caps = driver.capabilities();
        const vnc = caps.has(Capability.vnc)
          ? { available: true }
          : { available: false, reason: DesktopUnavailable.noDesktop };
        // code-server is there when the board starts one on first use (a local board on a host with
        // the install: nothing is started by asking), or when something answers on its port.
        let code: { available: boolean; reason?: string } = {
          available: false,
          reason: DesktopUnavailable.noCodeServer,
        };
        if (caps.has(Capability.codeServer)) {
          if (driver.kind === 'local' && installs.get(app)?.state === 'installing')
            return { vnc, code: { available: false, reason: DesktopUnavailable.codeInstalling } };
          let there = driver.startsCodeServer?.() ?? false;
          if (!there) {
            // A driver that starts nothing connects to its board's own code port (an ssh board's
            // declared codeServerPort), else the default one.
            const s = await (driver.connectCode
              ? driver.connectCode()
              : driver.connectPort(VNC_LIMITS.codeServerPort)
            ).catch(() => null);
            s?.destroy();
            there = s !== null;
          }
          if (!there && driver.kind === 'qemu')
            code = { available: false, reason: DesktopUnavailable.codeNoRiscvBuild };
          if (there)
            code = !app.code
              ? { available: false, reason: DesktopUnavailable.codeProxyOff }
              : !app.code.hasOwnHost(ctx.req)
                ? { available: false, reason: DesktopUnavailable.codeNoOwnHost }
                : { available: true };
        }
        return { vnc, code };
      },
      codeTicket: async (_input, ctx) => {
        if (!app.code)
          throw new AppError(503, 50300, CodeReason.proxyOff, 'The code proxy is off on this service');
        return app.code.ticket(ctx);
      },
    }),
  async start(app) {
    await app.vnc.start(app.server);
    await app.code?.start();
    if (app.code) {
      const install = new CodeServerInstall(app);
      installs.set(app, install);
      install.start();
    }
  },
  async stop(app) {
    installs.get(app)?.stop();
    await app.code?.stop();
    await app.vnc.stop();
  },
};
