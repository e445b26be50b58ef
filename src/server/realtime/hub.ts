// The realtime endpoint of this instance (`app.realtime`): accepts WebSocket upgrades at /ws (Origin
// checked, permessage-deflate off: compressing terminal output costs several times the CPU per GiB
// and lowers throughput), runs one StompConnection per socket, sweeps for vanished clients, and
// publishes board state and user notifications onto the bus for every instance to deliver.
import crypto from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import { type BoardStateEvent, STOMP_LIMITS, type UserNotification, WS_PATH } from '#shared/realtime.ts';
import {
  boardChannel,
  CONTROL_CHANNEL,
  userChannel,
  VIEWER_KEEPALIVE_MS,
} from '#server/shells/bus-protocol.ts';
import type { Bus, BusMessage } from './bus.ts';
import { StompConnection } from './connection.ts';

export interface HubOptions {
  heartbeatMs: number;
  /** Origins allowed besides the request's own (BIANBU_PUBLIC_URL and BIANBU_ALLOWED_ORIGINS). */
  allowedOrigins: string[];
  connectTimeoutMs?: number;
  maxSubscriptions?: number;
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

  constructor(
    private readonly app: FastifyInstance,
    private readonly bus: Bus,
    private readonly opts: HubOptions,
  ) {
    this.allowed = new Set(opts.allowedOrigins);
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
    };
    this.bus.publish(boardChannel(deviceId), { h: full as unknown as Record<string, unknown> });
  }

  stats(): { connections: number; pendingBytes: number } {
    let pendingBytes = 0;
    for (const c of this.connections) pendingBytes += c.pendingBytes;
    return { connections: this.connections.size, pendingBytes };
  }

  /** Same-origin pages, the configured console origin and the extra allowed list may connect;
   * clients that send no Origin (the cli, scripts) are not browsers acting for someone else. */
  originAllowed(req: IncomingMessage): boolean {
    const origin = req.headers.origin;
    if (!origin) return true;
    if (this.allowed.has(origin)) return true;
    try {
      return new URL(origin).host === req.headers.host;
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
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new StompConnection(ws, {
        app: this.app,
        bus: this.bus,
        heartbeatMs: this.opts.heartbeatMs,
        connectTimeoutMs: this.opts.connectTimeoutMs ?? 10_000,
        maxSubscriptions: this.opts.maxSubscriptions ?? 256,
        ip: req.socket.remoteAddress ?? '',
        onClose: (c) => this.connections.delete(c),
      });
      this.connections.add(conn);
    });
  };

  private onControl(m: BusMessage): void {
    if (m.h.t !== 'closeApply') return;
    for (const c of this.connections) c.cutApply(String(m.h.applyId), String(m.h.reason ?? ''));
  }

  private sweep(): void {
    const now = Date.now();
    // A client that sends heart-beats every H ms is gone after 2H of silence; a ping at H gives a
    // background tab (timers throttled) a transport-level way to prove it is alive.
    for (const c of this.connections)
      c.checkAlive(now, 2 * this.opts.heartbeatMs + 1000, this.opts.heartbeatMs);
  }
}
