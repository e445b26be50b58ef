// The realtime endpoint of this instance (`app.realtime`): accepts WebSocket upgrades at /ws (Origin
// checked, permessage-deflate off: compressing terminal output costs several times the CPU per GiB
// and lowers throughput), runs one StompConnection per socket, sweeps for vanished clients and
// expired tokens, and publishes board state, user notifications and ended sign-ins onto the bus for
// every instance to deliver: an ended sign-in closes the connections authenticated with it wherever
// they are held (and, through the shells' own control handler, the shells opened with it).
import crypto from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import type { SessionEnd } from '#server/auth/tokens.ts';
import { EXPIRED, sessionEndOf } from '#server/auth/tokens.ts';
import { clientAddress, type ProxyTrust, proxyTrust, publicHost } from '#server/http/trusted-proxies.ts';
import {
  boardChannel,
  CONTROL_CHANNEL,
  userChannel,
  VIEWER_KEEPALIVE_MS,
} from '#server/shells/bus-protocol.ts';
import { resumeReading, stopReading } from '#server/system/stop-reading.ts';
import { type BoardStateEvent, STOMP_LIMITS, type UserNotification, WS_PATH } from '#shared/realtime.ts';
import type { Bus, BusMessage } from './bus.ts';
import { type ConnectionOptions, StompConnection } from './connection.ts';

export interface HubOptions {
  heartbeatMs: number;
  /** Origins allowed besides the request's own (BIANBU_PUBLIC_URL and BIANBU_ALLOWED_ORIGINS). */
  allowedOrigins: string[];
  /**
   * BIANBU_TRUSTED_PROXIES: only from these peers are X-Forwarded-For (the client's address, as
   * connections record it) and X-Forwarded-Host (the request's own origin) believed.
   */
  trustedProxies?: readonly string[];
  connectTimeoutMs?: number;
  maxSubscriptions?: number;
  /** Service time (ms) by which token expiry is judged: the app's clock. */
  now?: () => number;
  slowConsumerMs?: number;
  /**
   * The service's WebSocket relay (BIANBU_WS_RELAY): plain TCP clients are passed through it, and the
   * shells they own on this instance served by it. Null when it cannot run (then, as without).
   */
  relay?: () => Promise<Relay | null>;
}

/** What the hub needs of the relay (src/server/boards/local/pty-host/relay.ts). */
export interface Relay {
  readonly alive: boolean;
  connect(clientFd: number): Promise<Socket>;
}

export function allowedOriginsFromConfig(publicUrl: string | undefined, extra: string): string[] {
  const list = extra
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (publicUrl) list.push(publicUrl);
  return list.flatMap((o) => {
    try {
      return [new URL(o).origin];
    } catch {
      return [];
    }
  });
}

export class RealtimeHub {
  private readonly wss: WebSocketServer;
  readonly connections = new Set<StompConnection>();
  private sweeper: NodeJS.Timeout | null = null;
  private keeper: NodeJS.Timeout | null = null;
  private unsubscribeCtl: (() => void) | null = null;
  private server: Server | null = null;
  private readonly allowed: Set<string>;
  private readonly trusted: ProxyTrust;

  constructor(
    private readonly app: FastifyInstance,
    private readonly bus: Bus,
    private readonly opts: HubOptions,
  ) {
    this.allowed = new Set(opts.allowedOrigins);
    this.trusted = proxyTrust(opts.trustedProxies ?? []);
    this.wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      maxPayload: STOMP_LIMITS.maxFrameBytes,
    });
  }

  async start(server: Server): Promise<void> {
    this.server = server;
    server.on('upgrade', this.onUpgrade);
    this.unsubscribeCtl = await this.bus.subscribe(CONTROL_CHANNEL, (m) => this.onControl(m));
    const every = Math.max(50, Math.floor(this.opts.heartbeatMs / 2));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
    this.keeper = setInterval(() => {
      for (const c of this.connections) c.keepViewers();
    }, VIEWER_KEEPALIVE_MS);
    this.keeper.unref();
  }

  async stop(): Promise<void> {
    this.server?.off('upgrade', this.onUpgrade);
    if (this.sweeper) clearInterval(this.sweeper);
    if (this.keeper) clearInterval(this.keeper);
    this.unsubscribeCtl?.();
    for (const c of [...this.connections]) c.close(1001);
    // Give clients a moment to answer the close handshake, then cut whatever is left: ws would
    // otherwise wait its 30 s close timeout for a peer that no longer reads.
    const deadline = Date.now() + 1000;
    while (this.wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  /** Delivers a notification to every console tab of a user, on every instance. */
  publishToUser(
    userId: string,
    n: Omit<UserNotification, 'id' | 'at' | 'level' | 'data'> & Partial<UserNotification>,
  ): void {
    const full: UserNotification = {
      id: n.id ?? crypto.randomUUID(),
      at: n.at ?? new Date().toISOString(),
      level: n.level ?? 'info',
      data: n.data ?? {},
      kind: n.kind,
    };
    this.bus.publish(userChannel(userId), { h: full as unknown as Record<string, unknown> });
  }

  /** Delivers a board's state change to subscribers holding the board, on every instance. */
  publishBoardState(deviceId: string, e: Omit<BoardStateEvent, 'deviceId' | 'at'> & { at?: string }): void {
    const full: BoardStateEvent = {
      deviceId,
      at: e.at ?? new Date().toISOString(),
      state: e.state,
      reason: e.reason,
      ...(e.attributes ? { attributes: e.attributes } : {}),
    };
    this.bus.publish(boardChannel(deviceId), { h: full as unknown as Record<string, unknown> });
  }

  /**
   * Ends sign-ins on every instance: each connection authenticated with one of these credentials gets
   * an ERROR with the session code and is closed; the shells opened with them close.
   */
  endCredentials(credentialIds: readonly string[], end: SessionEnd): void {
    if (credentialIds.length === 0) return;
    this.bus.publish(CONTROL_CHANNEL, { h: { t: 'endSessions', ids: [...credentialIds], ...end } });
  }

  /** Ends every sign-in of a user (deactivation): every connection and shell of the user, everywhere. */
  endUser(userId: string, end: SessionEnd): void {
    this.bus.publish(CONTROL_CHANNEL, { h: { t: 'endSessions', userId, ...end } });
  }

  stats(): { connections: number; pendingBytes: number; backlogBytes: number } {
    let pendingBytes = 0;
    let backlogBytes = 0;
    for (const c of this.connections) {
      pendingBytes += c.pendingBytes;
      backlogBytes += c.backlogBytes;
    }
    return { connections: this.connections.size, pendingBytes, backlogBytes };
  }

  /**
   * Same-origin pages, the configured console origin and the extra allowed list may connect;
   * clients that send no Origin (the cli, scripts) are not browsers acting for someone else. The
   * request's own host is the trust-aware one: a trusted proxy's X-Forwarded-Host, else Host.
   */
  originAllowed(req: IncomingMessage): boolean {
    const origin = req.headers.origin;
    if (!origin) return true;
    if (this.allowed.has(origin)) return true;
    const host = publicHost(req, this.trusted);
    if (!host) return false;
    try {
      return new URL(origin).host === host;
    } catch {
      return false;
    }
  }

  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== WS_PATH && path !== `${WS_PATH}/`) return;
    if (!this.originAllowed(req)) {
      this.app.log.warn({ origin: req.headers.origin }, 'realtime upgrade refused: origin not allowed');
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const fd = this.relayable(socket, head);
    const relay = this.opts.relay;
    if (fd !== null && relay && stopReading(socket)) {
      // The relay takes the client's socket: the service stops reading it first, and runs its
      // WebSocket over the relay's unix socket instead. Anything failing, the socket is read again.
      const direct = (err?: unknown) => {
        if (err) this.app.log.warn({ err }, 'the WebSocket relay did not take a connection: served directly');
        resumeReading(socket);
        this.upgrade(req, socket, head);
      };
      relay()
        .then((r) => (r?.alive ? r.connect(fd).then((unix) => ({ r, unix })) : null))
        .then((x) => {
          if (!x) return direct();
          x.unix.once('close', () => socket.destroy());
          this.upgrade(req, x.unix, head, { relay: x.r, key: fd, socket: x.unix });
        }, direct);
      return;
    }
    this.upgrade(req, socket, head);
  };

  /** A plain TCP socket with nothing read past the request: its descriptor, for the relay. */
  private relayable(socket: Duplex, head: Buffer): number | null {
    if (head.length > 0 || !(socket instanceof Socket) || 'encrypted' in socket) return null;
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    return typeof fd === 'number' && fd >= 0 ? fd : null;
  }

  private upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    relay?: ConnectionOptions['relay'],
  ): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new StompConnection(ws, {
        relay,
        app: this.app,
        bus: this.bus,
        heartbeatMs: this.opts.heartbeatMs,
        connectTimeoutMs: this.opts.connectTimeoutMs ?? 10_000,
        maxSubscriptions: this.opts.maxSubscriptions ?? 256,
        slowConsumerMs: this.opts.slowConsumerMs,
        ip: clientAddress(req, this.trusted),
        onClose: (c) => this.connections.delete(c),
        onSessionEnded: (c, end) => {
          if (c.user) this.endCredentials([c.user.credentialId], end);
          else c.endSession(end);
        },
      });
      this.connections.add(conn);
    });
  }

  private onControl(m: BusMessage): void {
    const h = m.h;
    if (h.t === 'closeApply') {
      for (const c of this.connections) c.cutApply(String(h.applyId), String(h.reason ?? ''));
    } else if (h.t === 'endSessions') {
      const ids = new Set(Array.isArray(h.ids) ? h.ids.map(String) : []);
      const userId = typeof h.userId === 'string' ? h.userId : null;
      const fallback = sessionEndOf(null);
      const end: SessionEnd = {
        code: Number(h.code) || fallback.code,
        key: typeof h.key === 'string' ? h.key : fallback.key,
        message: typeof h.message === 'string' ? h.message : fallback.message,
      };
      for (const c of [...this.connections]) {
        const u = c.user;
        if (u && (u.id === userId || ids.has(u.credentialId))) c.endSession(end);
      }
    }
  }

  private sweep(): void {
    const now = Date.now();
    // A client that sends heart-beats every H ms is gone after 2H of silence; a ping at H gives a
    // background tab (timers throttled) a transport-level way to prove it is alive.
    for (const c of [...this.connections])
      c.checkAlive(now, 2 * this.opts.heartbeatMs + 1000, this.opts.heartbeatMs);
    // Expiry by the service clock (each connection also has a timer; this catches a clock moved ahead).
    const clock = this.opts.now?.() ?? now;
    const expired = new Set<string>();
    for (const c of this.connections) if (c.user && c.expired(clock)) expired.add(c.user.credentialId);
    if (expired.size) this.endCredentials([...expired], sessionEndOf(EXPIRED));
  }
}
