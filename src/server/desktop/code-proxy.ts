// The /code/ reverse proxy to boards' code-servers, on a listener of its own and on host names of its
// own (code-hosts.ts: never the console's, a subdomain per apply where a wildcard allows), so that the
// board's JavaScript never runs on the console's origin nor shares its cookies. Protocol, tickets and
// refusals: src/shared/desktop.ts ("The code window").
//
// Lifecycle of a request: Host one of the code hosts (else 421) → path /code/{applyId}/{key}/{rest} →
// session by key, proven by its cookie, on the session's own host →
// sign-in and apply checked live (cached CODE_LIMITS.liveCheckMs) → HTTP: sent to the board's port
// through the apply's BoardAgent (kept-alive relays from `driver.connectCode` — which starts a local
// board's code-server on first use — or `driver.connectPort`, at most
// connectionsPerApply), bodies streamed both ways with backpressure, head and idle timeouts; upgrade:
// Origin must be the code origin, a WebSocket to the board over a fresh relay, messages relayed with
// bounded buffers. Everything of an apply is cut (HTTP 410 or an aborted body, WebSocket 4410 with
// the reason) by the control messages that close shells (closeApply / closeBoard / kickGuest /
// endSessions), when a live check fails, when the sign-in expires, and when the service stops.
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { WebSocket, WebSocketServer } from 'ws';
import type { BoardDriver } from '#server/boards/driver.ts';
import { AppError } from '#server/errors.ts';
import type { CallContext } from '#server/http/handlers.ts';
import { clientAddress, type ProxyTrust, proxyTrust, publicHost } from '#server/http/trusted-proxies.ts';
import type { Bus, BusMessage } from '#server/realtime/bus.ts';
import { CONTROL_CHANNEL } from '#server/shells/bus-protocol.ts';
import {
  CODE_COOKIE,
  CODE_LIMITS,
  CODE_PATH,
  CODE_TICKET_PARAM,
  CodeReason,
  VNC_LIMITS,
  VncClose,
} from '#shared/desktop.ts';
import {
  type ApplyOpen,
  BoardAgent,
  type CodeLimits,
  codeRouteOf,
  forwardHttp,
  type Pair,
  Refusal,
  type Route,
  refusalOf,
  refuseHttp,
  sendable,
  socketLike,
} from './code-exchange.ts';
import { codeCsp, cookieValues, headersToBoard } from './code-headers.ts';
import {
  type CodeHostRule,
  codeCookieAttributes,
  codeOriginOf,
  effectiveRule,
  LOOPBACK_CODE_PATTERN,
  matchesCodeHost,
} from './code-hosts.ts';
import { type CodeSession, CodeSessions } from './code-sessions.ts';

export { codeRouteOf } from './code-exchange.ts';

import { controlCut, liveApply, liveUser } from './live-access.ts';

export interface CodeProxyOptions {
  bus: Bus;
  driver(deviceId: string): BoardDriver | Promise<BoardDriver>;
  port: number;
  /** When `port` is taken, listen on any free port instead of failing (the default port, unset). */
  anyPortIfTaken?: boolean;
  host: string;
  /** BIANBU_CODE_ORIGIN / BIANBU_CODE_HOST (codeHostRule); null: the loopback default only. */
  hosts?: CodeHostRule | null;
  trustedProxies?: readonly string[];
  limits?: Partial<CodeLimits>;
  /** The board's code-server port (VNC_LIMITS.codeServerPort). */
  boardPort?: number;
}

/** How often idle sessions are swept, browsers pinged, and sessions with open WebSockets re-checked. */
const TICK_MS = 15_000;

export class CodeProxy {
  readonly server: Server;
  readonly sessions: CodeSessions;
  private readonly applies = new Map<string, ApplyOpen>();
  private readonly wss: WebSocketServer;
  private readonly limits: CodeLimits;
  private readonly trusted: ProxyTrust;
  private readonly boardPort: number;
  private offCtl: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly alive = new WeakSet<WebSocket>();

  constructor(
    private readonly app: FastifyInstance,
    private readonly opts: CodeProxyOptions,
  ) {
    this.limits = { ...CODE_LIMITS, ...opts.limits };
    this.trusted = proxyTrust(opts.trustedProxies ?? []);
    this.boardPort = opts.boardPort ?? VNC_LIMITS.codeServerPort;
    this.sessions = new CodeSessions(this.limits, () => this.app.clock.now().getTime());
    this.wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      maxPayload: this.limits.maxMessageBytes,
      // The board chose the subprotocol before the browser's side is accepted (see onUpgrade).
      handleProtocols: (_p, req) =>
        (req as IncomingMessage & { boardProtocol?: string }).boardProtocol || false,
    });
    this.server = http.createServer({ requestTimeout: 0, headersTimeout: 20_000 }, (req, res) => {
      void this.onRequest(req, res);
    });
    this.server.on('upgrade', (req, socket, head) => {
      void this.onUpgrade(req, socket, head);
    });
    this.server.on('clientError', (_err, socket) => socket.destroy());
  }

  async start(): Promise<void> {
    const listen = (port: number) =>
      new Promise<void>((resolve, reject) => {
        this.server.once('error', reject);
        this.server.listen(port, this.opts.host, () => {
          this.server.off('error', reject);
          resolve();
        });
      });
    try {
      await listen(this.opts.port);
    } catch (err) {
      if (!this.opts.anyPortIfTaken || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      this.app.log.warn({ port: this.opts.port }, 'the code proxy port is taken: listening on a free one');
      await listen(0);
    }
    this.offCtl = await this.opts.bus.subscribe(CONTROL_CHANNEL, (m) => this.onControl(m));
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
    this.app.log.info({ port: this.port }, 'code proxy listening');
  }

  async stop(): Promise<void> {
    this.offCtl?.();
    if (this.timer) clearInterval(this.timer);
    for (const s of [...this.sessions.sessions.values()]) this.end(s, 'service.stopping', false);
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  get port(): number {
    return (this.server.address() as AddressInfo | null)?.port ?? 0;
  }

  /** Open sessions, tickets, requests, WebSockets and board connections (tests). */
  stats(): {
    sessions: number;
    tickets: number;
    requests: number;
    sockets: number;
    connections: number;
    opened: number;
  } {
    let requests = 0;
    let sockets = 0;
    let connections = 0;
    let opened = 0;
    for (const a of this.applies.values()) {
      requests += a.exchanges.size;
      sockets += a.pairs.size;
      connections += a.agent.count();
      opened += a.agent.opened;
    }
    return {
      sessions: this.sessions.sessions.size,
      tickets: this.sessions.ticketCount,
      requests,
      sockets,
      connections,
      opened,
    };
  }

  /** The host names this listener answers on (the configured pattern, else the loopback default). */
  get pattern(): string {
    return this.opts.hosts?.pattern ?? LOOPBACK_CODE_PATTERN;
  }

  /**
   * Whether the console, as this call reached it, has a code host of its own (not its name, nor one
   * under it): false for a console on a non-loopback name with neither BIANBU_CODE_HOST nor _ORIGIN.
   */
  hasOwnHost(req: FastifyRequest): boolean {
    return effectiveRule(this.opts.hosts ?? null, new URL(this.consoleOriginOf(req)).hostname) !== null;
  }

  /** The codeTicket call: a one-time URL on the code origin for the caller's apply. */
  ticket(ctx: CallContext): { url: string; expiresAt: string } {
    const { req, user, apply } = ctx;
    if (!user || !apply) throw new AppError(404, 40400, 'apply.not_found', 'No such apply');
    const consoleOrigin = this.consoleOriginOf(req);
    const rule = effectiveRule(this.opts.hosts ?? null, new URL(consoleOrigin).hostname);
    if (!rule)
      throw new AppError(
        503,
        50300,
        CodeReason.noOwnHost,
        'The code window has no host name of its own for this console address (set BIANBU_CODE_HOST)',
      );
    const codeOrigin = codeOriginOf(rule, apply.applyId, req.protocol, this.port);
    const { ticket, expiresAt } = this.sessions.issue({
      userId: user.id,
      credentialId: user.credentialId,
      credentialKind: user.credentialKind,
      applyId: apply.applyId,
      deviceId: apply.deviceId,
      codeOrigin,
      consoleOrigin,
    });
    return {
      url: `${codeOrigin}${CODE_PATH}/${encodeURIComponent(apply.applyId)}/?${CODE_TICKET_PARAM}=${ticket}`,
      expiresAt: new Date(expiresAt).toISOString(),
    };
  }

  /** The console's origin as the browser named it (an allowed Origin), else the call's own. */
  private consoleOriginOf(req: FastifyRequest): string {
    const origin = req.headers.origin;
    if (origin && origin !== 'null' && this.app.realtime.originAllowed(req.raw)) {
      try {
        return new URL(origin).origin;
      } catch {}
    }
    return `${req.protocol}://${req.host}`;
  }

  /**
   * This listener's origin as a request reached it, or null when its host is not a code host (the
   * console's, or any other name): the listener serves nothing there.
   */
  private originOf(req: IncomingMessage): string | null {
    const rule = this.opts.hosts;
    // A fixed public origin behind a proxy: the proxy may have rewritten the Host header.
    if (rule?.proxied && !rule.pattern.startsWith('*.'))
      return new URL(`${rule.scheme}://${rule.pattern}${rule.port ? `:${rule.port}` : ''}`).origin;
    const fwd = req.headers['x-forwarded-proto'];
    const proto = rule?.proxied
      ? rule.scheme
      : fwd && this.trusted(req.socket.remoteAddress)
        ? String(fwd).split(',').pop()!.trim()
        : (req.socket as { encrypted?: boolean }).encrypted
          ? 'https'
          : 'http';
    let url: URL;
    try {
      url = new URL(`${proto}://${publicHost(req, this.trusted) ?? ''}`);
    } catch {
      return null;
    }
    return matchesCodeHost(this.pattern, url.hostname) ? url.origin : null;
  }

  /** The request's code origin; a Refusal (421) on any other host name. */
  private servedOrigin(req: IncomingMessage): string {
    const origin = this.originOf(req);
    if (origin === null)
      throw new Refusal(421, 0, CodeReason.wrongHost, 'The code window is not served on this host name');
    return origin;
  }

  // ---- HTTP

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on('error', () => {});
    const route = codeRouteOf(req.url);
    try {
      const origin = this.servedOrigin(req);
      if (!route) throw new Refusal(404, 0, 'route.not_found', 'Not found');
      if (route.key === null) return await this.exchangeTicket(req, res, route, origin);
      const s = this.sessionOf(req, route, origin);
      const method = req.method ?? 'GET';
      if (
        !['GET', 'HEAD', 'OPTIONS'].includes(method) &&
        req.headers.origin &&
        req.headers.origin !== s.codeOrigin
      )
        throw new Refusal(403, 0, CodeReason.origin, 'Requests from another origin are refused');
      await this.check(s, clientAddress(req, this.trusted));
      const a = this.openOf(s);
      if (a.exchanges.size >= this.limits.requestsPerApply)
        throw new Refusal(429, VncClose.tooMany, CodeReason.tooMany, 'Too many requests open on this board');
      this.forward(req, res, route, s, a);
    } catch (err) {
      if (!(err instanceof Refusal) && !(err instanceof AppError))
        this.app.log.warn({ err }, 'code proxy request failed');
      this.refuse(res, refusalOf(err, 401, VncClose.auth, CodeReason.sessionMissing), undefined);
    }
  }

  /** Ticket → session and cookie, then 303 to the session's path (the ticket leaves the URL). */
  private async exchangeTicket(
    req: IncomingMessage,
    res: ServerResponse,
    route: Route,
    origin: string,
  ): Promise<void> {
    const ticket = new URLSearchParams(route.search.slice(1)).get(CODE_TICKET_PARAM);
    if (!ticket || (req.method !== 'GET' && req.method !== 'HEAD'))
      throw new Refusal(401, VncClose.auth, CodeReason.sessionMissing, 'This page needs a code session');
    const t = this.sessions.take(ticket);
    if (!t || t.applyId !== route.applyId || t.codeOrigin !== origin)
      throw new Refusal(
        401,
        VncClose.auth,
        CodeReason.ticketInvalid,
        'The ticket is unknown, used or expired',
      );
    const { session, cookie } = this.sessions.open(t);
    try {
      await this.check(session, clientAddress(req, this.trusted));
    } catch (err) {
      this.end(session, 'session.ended', false);
      throw err;
    }
    const prefix = this.prefixOf(session);
    res.writeHead(303, {
      location: `${prefix}/`,
      // Host-only (no Domain): the apply's own host name. Third-party where it can be (see
      // codeCookieAttributes): the console's iframe is on another site.
      'set-cookie': `${CODE_COOKIE}=${cookie}; Path=${prefix}/; HttpOnly; ${codeCookieAttributes(session.codeOrigin)}`,
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'content-security-policy': codeCsp(session.consoleOrigin),
      'content-length': '0',
    });
    res.end();
    this.app.log.info(
      { userId: session.userId, applyId: session.applyId, deviceId: session.deviceId },
      'code session opened',
    );
  }

  private prefixOf(s: CodeSession): string {
    return `${CODE_PATH}/${s.applyId}/${s.key}`;
  }

  private sessionOf(req: IncomingMessage, route: Route, origin: string): CodeSession {
    // Every cookie of our name is tried: one a board set for a parent domain may come first.
    const s = this.sessions.find(route.key!, cookieValues(req.headers.cookie, CODE_COOKIE));
    if (!s || s.applyId !== route.applyId || s.codeOrigin !== origin)
      throw new Refusal(401, VncClose.auth, CodeReason.sessionMissing, 'This page needs a code session');
    return s;
  }

  /** The sign-in and the apply are still live (checked at most every liveCheckMs); ends the session if not. */
  private async check(s: CodeSession, ip: string): Promise<void> {
    const now = this.app.clock.now().getTime();
    if (now - s.checkedAt < this.limits.liveCheckMs) return;
    s.checking ??= (async () => {
      let user: Awaited<ReturnType<typeof liveUser>>;
      try {
        user = await liveUser(this.app, s);
      } catch (err) {
        this.end(s, 'session.ended', true);
        throw refusalOf(err, 401, VncClose.auth, 'session.ended');
      }
      try {
        const apply = await liveApply(this.app, user, ip, s.applyId);
        if (apply.deviceId !== s.deviceId) throw new AppError(404, 40400, 'apply.not_found', 'No such apply');
      } catch (err) {
        this.end(s, 'apply.ended', false);
        throw refusalOf(err, 404, VncClose.notFound, 'apply.not_found');
      }
      s.checkedAt = this.app.clock.now().getTime();
    })().finally(() => {
      s.checking = null;
    });
    return s.checking;
  }

  /**
   * A stream to the board's code port: through the driver's `connectCode` where it has one (it starts
   * code-server when nothing answers), else the port itself. A proxy built for another port asks for it.
   */
  private async connectBoard(deviceId: string): Promise<Duplex> {
    const driver = await this.opts.driver(deviceId);
    return driver.connectCode && this.boardPort === VNC_LIMITS.codeServerPort
      ? driver.connectCode()
      : driver.connectPort(this.boardPort);
  }

  private openOf(s: CodeSession): ApplyOpen {
    let a = this.applies.get(s.applyId);
    if (!a) {
      const deviceId = s.deviceId;
      a = {
        deviceId,
        agent: new BoardAgent(async () => this.connectBoard(deviceId), this.limits.connectionsPerApply),
        exchanges: new Set(),
        pairs: new Set(),
      };
      this.applies.set(s.applyId, a);
    }
    return a;
  }

  private forward(
    req: IncomingMessage,
    res: ServerResponse,
    route: Route,
    s: CodeSession,
    a: ApplyOpen,
  ): void {
    forwardHttp(
      { limits: this.limits, boardPort: this.boardPort, prefix: this.prefixOf(s) },
      req,
      res,
      route,
      s,
      a,
    );
  }

  private refuse(res: ServerResponse, r: Refusal, s?: CodeSession, closeAfter = false): void {
    refuseHttp(res, r, s, closeAfter);
  }

  // ---- WebSocket

  private async onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => {});
    const deny = (r: Refusal) => {
      const body = `${r.key}\n${r.message}\n`;
      socket.end(
        `HTTP/1.1 ${r.status} ${http.STATUS_CODES[r.status] ?? ''}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nX-Code-Reason: ${r.key}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    };
    const route = codeRouteOf(req.url);
    let s: CodeSession;
    let a: ApplyOpen;
    try {
      const origin = this.servedOrigin(req);
      if (!route || route.key === null) throw new Refusal(404, 0, 'route.not_found', 'Not found');
      s = this.sessionOf(req, route, origin);
      if (req.headers.origin !== s.codeOrigin)
        throw new Refusal(403, 0, CodeReason.origin, 'WebSockets from another origin are refused');
      await this.check(s, clientAddress(req, this.trusted));
      a = this.openOf(s);
      if (a.pairs.size >= this.limits.socketsPerApply)
        throw new Refusal(
          429,
          VncClose.tooMany,
          CodeReason.tooMany,
          'Too many WebSockets open on this board',
        );
    } catch (err) {
      return deny(refusalOf(err, 401, VncClose.auth, CodeReason.sessionMissing));
    }
    // A slot is held while the board is being reached, so a burst cannot exceed the limit.
    const placeholder = { session: s.key } as Pair;
    a.pairs.add(placeholder);
    let relay: Duplex;
    try {
      relay = socketLike(await this.connectBoard(s.deviceId));
    } catch (err) {
      a.pairs.delete(placeholder);
      return deny(refusalOf(err, 502, VncClose.unavailable, CodeReason.unavailable));
    }
    const prefix = this.prefixOf(s);
    const host = req.headers.host ?? new URL(s.codeOrigin).host;
    const headers = headersToBoard(req.headers, { proto: s.codeOrigin.split(':')[0], host, prefix });
    for (const k of Object.keys(headers))
      if (k.startsWith('sec-websocket-') || k === 'host' || k === 'origin') delete headers[k];
    const protocols = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    const board = new WebSocket(`ws://${host}${route.rest}${route.search}`, protocols, {
      createConnection: () => relay as never,
      headers: headers as Record<string, string>,
      origin: s.codeOrigin,
      perMessageDeflate: false,
      maxPayload: this.limits.maxMessageBytes,
      handshakeTimeout: this.limits.headersTimeoutMs,
    });
    board.on('error', () => {});
    // What the board sends before the browser's side is accepted waits here (bounded: the board is
    // paused, and at most maxMessageBytes arrive in what it had already sent).
    const early: { data: Buffer; isBinary: boolean }[] = [];
    const hold = (data: Buffer, isBinary: boolean) => early.push({ data, isBinary });
    board.on('message', hold);
    const opened = await new Promise<boolean>((resolve) => {
      board.once('open', () => {
        board.pause();
        resolve(true);
      });
      board.once('unexpected-response', (_r, up) => {
        up.resume();
        resolve(false);
      });
      board.once('error', () => resolve(false));
      board.once('close', () => resolve(false));
    });
    a.pairs.delete(placeholder);
    if (!opened || socket.destroyed || !this.sessions.sessions.has(s.key)) {
      board.terminate();
      relay.destroy();
      if (!this.sessions.sessions.has(s.key))
        return deny(new Refusal(410, VncClose.ended, 'apply.ended', 'The code session ended'));
      return deny(
        new Refusal(502, VncClose.unavailable, CodeReason.unavailable, 'The board refused the WebSocket'),
      );
    }
    (req as IncomingMessage & { boardProtocol?: string }).boardProtocol = board.protocol;
    this.wss.handleUpgrade(req, socket, head, (browser) => {
      const pair: Pair = { session: s.key, browser, board };
      a.pairs.add(pair);
      this.alive.add(browser);
      browser.on('pong', () => this.alive.add(browser));
      browser.on('error', () => {});
      board.off('message', hold);
      for (const m of early) browser.send(m.data, { binary: m.isBinary });
      this.relay(pair, a);
      board.resume();
    });
  }

  private relay(p: Pair, a: ApplyOpen): void {
    const { browser, board } = p;
    const high = this.limits.highWaterBytes;
    const pipe = (from: WebSocket, to: WebSocket) => {
      let paused = false;
      from.on('message', (data: Buffer, isBinary: boolean) => {
        if (to.readyState !== WebSocket.OPEN) return;
        to.send(data, { binary: isBinary }, () => {
          if (paused && to.bufferedAmount <= high / 4) {
            paused = false;
            from.resume();
          }
        });
        if (!paused && to.bufferedAmount > high) {
          paused = true;
          from.pause();
        }
      });
    };
    pipe(board, browser);
    pipe(browser, board);
    board.once('close', (code, reason) => {
      a.pairs.delete(p);
      if (browser.readyState === WebSocket.OPEN)
        browser.close(sendable(code) ? code : 1000, reason.toString().slice(0, 120));
    });
    browser.once('close', (code, reason) => {
      a.pairs.delete(p);
      if (board.readyState === WebSocket.OPEN)
        board.close(sendable(code) ? code : 1000, reason.toString().slice(0, 120));
      else board.terminate();
    });
  }

  // ---- cuts

  /**
   * Cuts what an apply has open (of one session when `session` is given): WebSockets close with
   * `code`/`reason`, answers under way end (410 before their head, aborted after). Without a session
   * left on the apply, its kept-alive board connections go too.
   */
  private cut(applyId: string, code: number, reason: string, session?: string): void {
    const a = this.applies.get(applyId);
    if (!a) return;
    for (const p of [...a.pairs]) {
      if (session && p.session !== session) continue;
      a.pairs.delete(p);
      if (!p.browser) continue;
      if (p.browser.readyState === WebSocket.OPEN) p.browser.close(code, reason);
      p.board.terminate();
    }
    for (const ex of [...a.exchanges]) {
      if (session && ex.session !== session) continue;
      a.exchanges.delete(ex);
      ex.upstream?.destroy();
      if (!ex.res.headersSent)
        this.refuse(ex.res, new Refusal(410, code, reason, 'The code session was cut'));
      else ex.res.destroy();
    }
    const left = [...this.sessions.sessions.values()].some((o) => o.applyId === applyId);
    if (!session || !left) {
      a.agent.destroy();
      if (a.pairs.size === 0 && a.exchanges.size === 0) this.applies.delete(applyId);
    }
  }

  /** Ends a session: its cookie stops working, what it has open is cut. */
  private end(s: CodeSession, reason: string, signIn: boolean): void {
    if (!this.sessions.sessions.delete(s.key)) return;
    this.cut(s.applyId, signIn ? VncClose.auth : VncClose.ended, reason, s.key);
    this.app.log.info({ applyId: s.applyId, reason }, 'code session ended');
  }

  private onControl(m: BusMessage): void {
    const cutApplies = new Map<string, string>();
    for (const s of [...this.sessions.sessions.values()]) {
      const c = controlCut(m, s, 'apply.ended');
      if (!c) continue;
      if (c.kind === 'end') this.end(s, c.reason, c.signIn);
      else {
        s.checkedAt = 0;
        cutApplies.set(s.applyId, c.reason);
      }
    }
    for (const [applyId, reason] of cutApplies) this.cut(applyId, VncClose.ended, reason);
  }

  private tick(): void {
    const busy = (x: CodeSession) =>
      [...(this.applies.get(x.applyId)?.pairs ?? [])].some((p) => p.session === x.key);
    for (const s of this.sessions.sweep(busy)) this.end(s, 'code.idle', false);
    // A sign-in that expires ends no request of its own: sessions with open WebSockets are checked here.
    for (const s of this.sessions.sessions.values()) if (busy(s)) this.check(s, '').catch(() => {});
    for (const ws of this.wss.clients) {
      if (!this.alive.has(ws)) {
        ws.terminate();
        continue;
      }
      this.alive.delete(ws);
      ws.ping();
    }
  }
}
