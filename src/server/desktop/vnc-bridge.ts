// The /vnc/{applyId} WebSocket bridge of this instance (protocol and close reasons: src/shared/desktop.ts).
// Lifecycle of a session: upgrade (Origin checked like /ws, 403 otherwise) → token and apply checked
// (a refusal is an accepted socket closed at once with a code and reason key, so a browser can word
// it) → the board's VNC stream opened through its driver (`connectVnc`, else `connectPort(5900)`) →
// bytes relayed both ways with bounded buffers → closed when either side ends, or by the same control
// messages that close shells (rt.ctl closeApply / closeBoard / endSessions / kickGuest), or when the
// sign-in expires, or when the service stops.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type WebSocket, WebSocketServer } from 'ws';
import { type AuthUser, loadAuthUser } from '#server/auth/user-context.ts';
import { tokenFromHeader, verifyCredential } from '#server/auth/tokens.ts';
import { type BoardDriver, DriverError } from '#server/boards/driver.ts';
import { AppError } from '#server/errors.ts';
import type { CallContext, ResolvedApply } from '#server/http/handlers.ts';
import { clientAddress, type ProxyTrust, proxyTrust } from '#server/http/trusted-proxies.ts';
import type { Bus, BusMessage } from '#server/realtime/bus.ts';
import { CONTROL_CHANNEL } from '#server/shells/bus-protocol.ts';
import {
  VNC_BINARY_PROTOCOL,
  VNC_LIMITS,
  VNC_PATH,
  VNC_TOKEN_PROTOCOL,
  VncClose,
  VncCloseReason,
} from '#shared/desktop.ts';

export interface VncBridgeOptions {
  bus: Bus;
  /** The board's driver (the lab's). */
  driver(deviceId: string): BoardDriver | Promise<BoardDriver>;
  /** Whether a browser's Origin may open the bridge (the realtime hub's rule). */
  originAllowed(req: IncomingMessage): boolean;
  trustedProxies?: readonly string[];
  limits?: Partial<typeof VNC_LIMITS>;
}

interface Session {
  ws: WebSocket;
  user: AuthUser;
  apply: ResolvedApply;
  board: Duplex | null;
  ip: string;
  expiry: NodeJS.Timeout | null;
  closed: boolean;
}

/** The applyId of a bridge path (`/vnc/{applyId}`), or null when the path is not the bridge's. */
export function vncApplyOf(url: string | undefined): string | null {
  const p = (url ?? '').split('?')[0];
  if (!p.startsWith(`${VNC_PATH}/`)) return null;
  const id = decodeURIComponent(p.slice(VNC_PATH.length + 1).replace(/\/+$/, ''));
  return id;
}

function tokenOf(req: IncomingMessage): string | null {
  for (const p of (req.headers['sec-websocket-protocol'] ?? '').split(',')) {
    const t = p.trim();
    if (t.startsWith(VNC_TOKEN_PROTOCOL)) return t.slice(VNC_TOKEN_PROTOCOL.length) || null;
  }
  const h = req.headers.token ?? req.headers.authorization;
  return tokenFromHeader(Array.isArray(h) ? h[0] : h);
}

export class VncBridge {
  private readonly wss: WebSocketServer;
  readonly sessions = new Set<Session>();
  private readonly trusted: ProxyTrust;
  private readonly limits: typeof VNC_LIMITS;
  private server: Server | null = null;
  private offCtl: (() => void) | null = null;
  private pinger: NodeJS.Timeout | null = null;
  private readonly alive = new WeakSet<WebSocket>();

  constructor(
    private readonly app: FastifyInstance,
    private readonly opts: VncBridgeOptions,
  ) {
    this.limits = { ...VNC_LIMITS, ...opts.limits };
    this.trusted = proxyTrust(opts.trustedProxies ?? []);
    this.wss = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      maxPayload: this.limits.maxMessageBytes,
      // The browser offers "binary" beside the token protocol; the token is never echoed back.
      handleProtocols: (protocols) => (protocols.has(VNC_BINARY_PROTOCOL) ? VNC_BINARY_PROTOCOL : false),
    });
  }

  async start(server: Server): Promise<void> {
    this.server = server;
    server.on('upgrade', this.onUpgrade);
    this.offCtl = await this.opts.bus.subscribe(CONTROL_CHANNEL, (m) => this.onControl(m));
    this.pinger = setInterval(() => {
      for (const s of this.sessions) {
        if (!this.alive.has(s.ws)) {
          s.ws.terminate();
          continue;
        }
        this.alive.delete(s.ws);
        s.ws.ping();
      }
    }, this.limits.pingMs);
    this.pinger.unref();
  }

  async stop(): Promise<void> {
    this.server?.off('upgrade', this.onUpgrade);
    this.offCtl?.();
    if (this.pinger) clearInterval(this.pinger);
    for (const s of [...this.sessions]) this.close(s, 1001, VncCloseReason.serviceStopping);
    const deadline = Date.now() + 1000;
    while (this.wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }

  /** Open sessions and bytes queued towards browsers (tests, benchmarks). */
  stats(): { sessions: number; bufferedBytes: number } {
    let bufferedBytes = 0;
    for (const s of this.sessions) bufferedBytes += s.ws.bufferedAmount;
    return { sessions: this.sessions.size, bufferedBytes };
  }

  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const applyId = vncApplyOf(req.url);
    if (applyId === null) return;
    if (!this.opts.originAllowed(req)) {
      this.app.log.warn({ origin: req.headers.origin }, 'vnc upgrade refused: origin not allowed');
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    socket.on('error', () => {});
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('error', () => {});
      this.alive.add(ws);
      ws.on('pong', () => this.alive.add(ws));
      void this.accept(ws, req, applyId).catch((err) => {
        this.app.log.warn({ err }, 'vnc bridge failed');
        if (ws.readyState === ws.OPEN) ws.close(VncClose.unavailable, VncCloseReason.unavailable);
      });
    });
  };

  private async accept(ws: WebSocket, req: IncomingMessage, applyId: string): Promise<void> {
    const ip = clientAddress(req, this.trusted);
    // Browser bytes that arrive before the board is connected wait here (bounded by the ws payload limit
    // times the few RFB messages a client sends before the server's greeting).
    const early: Buffer[] = [];
    let earlyBytes = 0;
    const hold = (d: Buffer) => {
      earlyBytes += d.length;
      if (earlyBytes > this.limits.maxMessageBytes) ws.close(1009, 'vnc.too_big');
      else early.push(d);
    };
    ws.on('message', hold);
    const token = tokenOf(req);
    if (!token) return ws.close(VncClose.auth, VncCloseReason.authRequired);
    const db = this.app.storage.db;
    let user: AuthUser | null;
    let expiresAt: number | null = null;
    try {
      const cred = await verifyCredential(db, token, this.app.clock.now());
      expiresAt = cred.expiresAt?.getTime() ?? null;
      user = await loadAuthUser(db, cred.userId, cred.id, cred.kind);
    } catch (err) {
      return ws.close(VncClose.auth, err instanceof AppError ? err.key : VncCloseReason.sessionEnded);
    }
    if (!user) return ws.close(VncClose.auth, VncCloseReason.sessionEnded);
    let apply: ResolvedApply;
    try {
      apply = await this.resolveApply(user, ip, applyId);
    } catch (err) {
      return ws.close(VncClose.notFound, err instanceof AppError ? err.key : VncCloseReason.applyNotFound);
    }
    const open = [...this.sessions].filter((s) => s.apply.applyId === apply.applyId).length;
    if (open >= this.limits.sessionsPerApply) return ws.close(VncClose.tooMany, VncCloseReason.tooMany);
    if (ws.readyState !== ws.OPEN) return;
    const s: Session = { ws, user, apply, board: null, ip, expiry: null, closed: false };
    this.sessions.add(s);
    ws.once('close', () => this.close(s));
    if (expiresAt !== null) {
      const ms = expiresAt - this.app.clock.now().getTime();
      s.expiry = setTimeout(
        () => this.close(s, VncClose.auth, VncCloseReason.sessionEnded),
        Math.max(0, Math.min(ms, 2 ** 31 - 1)),
      );
      s.expiry.unref();
    }
    let board: Duplex;
    try {
      const driver = await this.opts.driver(apply.deviceId);
      board = driver.connectVnc ? await driver.connectVnc() : await driver.connectPort(this.limits.tcpPort);
    } catch (err) {
      this.app.log.info(
        { err: (err as Error).message, deviceId: apply.deviceId },
        'vnc: the board has no desktop',
      );
      // A machine about to start (a riscv64 board mid-flash) has its screen again soon: the pane retries.
      const booting = err instanceof DriverError && err.key === 'board.booting';
      return this.close(
        s,
        VncClose.unavailable,
        booting ? VncCloseReason.booting : VncCloseReason.unavailable,
      );
    }
    if (s.closed) {
      board.destroy();
      return;
    }
    s.board = board;
    this.app.log.info(
      { userId: user.id, applyId: apply.applyId, deviceId: apply.deviceId, ip },
      'vnc session opened',
    );
    this.pipe(s, board, early);
    ws.off('message', hold);
  }

  private pipe(s: Session, board: Duplex, early: Buffer[]): void {
    const { ws } = s;
    const { highWaterBytes, lowWaterBytes } = this.limits;
    // Board → browser: at most highWater queued on the socket; the board waits (its relay blocks on a
    // full pipe) until the browser has read down to lowWater.
    let paused = false;
    const sent = () => {
      if (paused && ws.bufferedAmount <= lowWaterBytes) {
        paused = false;
        board.resume();
      }
    };
    board.on('data', (chunk: Buffer) => {
      if (ws.readyState !== ws.OPEN) return;
      ws.send(chunk, { binary: true }, sent);
      if (!paused && ws.bufferedAmount > highWaterBytes) {
        paused = true;
        board.pause();
      }
    });
    board.once('close', () => this.close(s, VncClose.closed, VncCloseReason.closed));
    board.on('error', () => board.destroy());
    // Browser → board: a board that does not read stops the socket being read.
    const write = (d: Buffer) => {
      if (!board.write(d)) {
        ws.pause();
        board.once('drain', () => ws.resume());
      }
    };
    for (const d of early) write(d);
    ws.on('message', (d: Buffer, isBinary: boolean) => {
      if (isBinary) write(d);
    });
  }

  private async resolveApply(user: AuthUser, ip: string, applyId: string): Promise<ResolvedApply> {
    const app = this.app;
    if (!app.resolveApply) throw new AppError(503, 503, 'apply.unavailable', 'Applies are not available');
    const req = { headers: { applyaccess: applyId }, ip, body: { applyId } } as unknown as FastifyRequest;
    const ctx: CallContext = { app, req, reply: null as unknown as FastifyReply, user, apply: null, ip };
    return app.resolveApply(ctx, { applyId });
  }

  private close(s: Session, code?: number, reason?: string): void {
    if (s.closed) return;
    s.closed = true;
    this.sessions.delete(s);
    if (s.expiry) clearTimeout(s.expiry);
    s.board?.destroy();
    if (code !== undefined && (s.ws.readyState === s.ws.OPEN || s.ws.readyState === s.ws.CONNECTING))
      s.ws.close(code, reason);
    else if (s.ws.readyState === s.ws.OPEN) s.ws.close(1000);
    this.app.log.info({ applyId: s.apply.applyId, reason: reason ?? 'client' }, 'vnc session closed');
  }

  private onControl(m: BusMessage): void {
    const h = m.h;
    const reason = String(h.reason ?? VncCloseReason.closed);
    for (const s of [...this.sessions]) {
      if (h.t === 'closeApply' && s.apply.applyId === h.applyId) this.close(s, VncClose.ended, reason);
      else if (h.t === 'closeBoard' && s.apply.deviceId === h.deviceId) this.close(s, VncClose.ended, reason);
      else if (h.t === 'kickGuest' && s.apply.deviceId === h.deviceId && s.user.id === h.userId)
        this.close(s, VncClose.ended, reason);
      else if (h.t === 'endSessions') {
        const ids = Array.isArray(h.ids) ? h.ids.map(String) : [];
        if (s.user.id === h.userId || ids.includes(s.user.credentialId))
          this.close(s, VncClose.auth, VncCloseReason.sessionEnded);
      }
    }
  }
}
