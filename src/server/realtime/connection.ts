// One STOMP session over one WebSocket. Lifecycle: the socket opens → the first frame must be
// CONNECT/STOMP within the connect timeout (token and applyId checked; a bad one gets ERROR and the
// socket closed) → SUBSCRIBE / UNSUBSCRIBE / SEND / ACK frames, processed one after another in
// arrival order → DISCONNECT (RECEIPT, close), a bad frame (ERROR, close), or silence beyond the
// heart-beat window (the socket is terminated). Closing detaches every shell viewer and drops every
// bus subscription, so a vanished client leaves nothing behind.
//
// Output to the socket is sent at once when nothing is in flight and coalesced only while a send
// is still being written: no timer ever holds a keystroke's echo.
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { AuthUser } from '#server/auth/user-context.ts';
import { authenticate } from '#server/auth/user-context.ts';
import { AppError } from '#server/errors.ts';
import type { CallContext, ResolvedApply } from '#server/http/handlers.ts';
import {
  boardChannel,
  OWNER_ANSWER_TIMEOUT_MS,
  shellIn,
  shellOut,
  userChannel,
} from '#server/shells/bus-protocol.ts';
import { ResultCode } from '#shared/codes.ts';
import {
  parseDestination,
  RealtimeErrorKey,
  RealtimeEvent,
  STOMP_LIMITS,
  shellResizeBody,
} from '#shared/realtime.ts';
import {
  parseMessage,
  StompCodecError,
  type StompFrame,
  serializeFrame,
  serializeHead,
} from '#shared/stomp-codec.ts';
import type { Bus, BusMessage } from './bus.ts';

export interface ConnectionOptions {
  app: FastifyInstance;
  bus: Bus;
  /** Interval the server asks the client to send heart-beats at (ms). */
  heartbeatMs: number;
  connectTimeoutMs: number;
  ip: string;
  maxSubscriptions: number;
  onClose(c: StompConnection): void;
}

interface BaseSub {
  id: string;
  destination: string;
  off: (() => void) | null;
}

interface ShellView extends BaseSub {
  kind: 'shell';
  shellId: string;
  viewerId: string;
  state: 'attaching' | 'live' | 'closed';
  /** Next absolute offset this subscriber needs. */
  next: number;
  pending: Buffer[];
  pendingBytes: number;
  pendingOffset: number;
  attached?: (answer: { ok: true } | { ok: false; key: string }) => void;
}

interface TopicSub extends BaseSub {
  kind: 'board' | 'user';
  applyId?: string;
}

type Subscription = ShellView | TopicSub;

const NUL = Buffer.from([0]);
const encoder = new TextEncoder();

export class StompConnection {
  readonly sessionId = crypto.randomUUID();
  user: AuthUser | null = null;
  apply: ResolvedApply | null = null;
  private state: 'awaiting' | 'connected' | 'closed' = 'awaiting';
  private readonly subs = new Map<string, Subscription>();
  private chain: Promise<void> = Promise.resolve();
  private inflight = 0;
  private readonly dirty = new Set<ShellView>();
  private messageSeq = 0;
  lastSeen = Date.now();
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    readonly ws: WebSocket,
    private readonly opts: ConnectionOptions,
  ) {
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('pong', () => {
      this.lastSeen = Date.now();
    });
    ws.on('close', () => this.cleanup());
    ws.on('error', () => this.cleanup());
    const t = setTimeout(() => {
      if (this.state === 'awaiting') this.fail(RealtimeErrorKey.timeout, 'No CONNECT frame in time', 40000);
    }, opts.connectTimeoutMs);
    t.unref();
    this.timers.push(t);
  }

  get closed(): boolean {
    return this.state === 'closed';
  }

  /** Bytes waiting for the socket to drain, across this connection's shell views. */
  get pendingBytes(): number {
    let n = 0;
    for (const s of this.subs.values()) if (s.kind === 'shell') n += s.pendingBytes;
    return n;
  }

  /** Called by the hub's liveness sweep. */
  checkAlive(now: number, windowMs: number, pingAfterMs: number): void {
    if (this.state === 'closed') return;
    const silent = now - this.lastSeen;
    if (silent > windowMs) {
      this.opts.app.log.info(
        { session: this.sessionId, silentMs: silent },
        'realtime client vanished; cleaning up',
      );
      this.ws.terminate();
      this.cleanup();
    } else if (silent > pingAfterMs && this.ws.readyState === this.ws.OPEN) {
      this.ws.ping();
    }
  }

  /** Keep-alives for the owners of the shells this connection watches. */
  keepViewers(): void {
    for (const s of this.subs.values())
      if (s.kind === 'shell' && s.state === 'live')
        this.opts.bus.publish(shellIn(s.shellId), { h: { t: 'keep', v: s.viewerId } });
  }

  /** Cuts board subscriptions authorised by an apply that has ended. */
  cutApply(applyId: string, reason: string): void {
    for (const s of [...this.subs.values()]) {
      if (s.kind === 'board' && s.applyId === applyId) {
        this.sendEvent(s.id, s.destination, { event: RealtimeEvent.closed, reason });
        s.off?.();
        this.subs.delete(s.id);
      }
    }
  }

  private onMessage(data: Buffer, _isBinary: boolean): void {
    if (this.state === 'closed') return;
    this.lastSeen = Date.now();
    let frames: StompFrame[];
    try {
      frames = parseMessage(data, STOMP_LIMITS);
    } catch (err) {
      const key = err instanceof StompCodecError ? err.key : RealtimeErrorKey.badFrame;
      this.fail(key, err instanceof Error ? err.message : 'Malformed frame', 40000);
      return;
    }
    for (const f of frames) {
      this.chain = this.chain.then(() => this.handle(f)).catch((err) => this.failFromError(err, f));
    }
  }

  private async handle(f: StompFrame): Promise<void> {
    if (this.state === 'closed') return;
    if (this.state === 'awaiting') {
      if (f.command !== 'CONNECT' && f.command !== 'STOMP') {
        this.fail(RealtimeErrorKey.notConnected, 'The first frame must be CONNECT', 40000, f);
        return;
      }
      await this.connect(f);
      return;
    }
    switch (f.command) {
      case 'SEND':
        this.send(f);
        break;
      case 'SUBSCRIBE':
        await this.subscribe(f);
        break;
      case 'UNSUBSCRIBE': {
        const id = f.headers.id;
        if (!id) {
          this.fail(RealtimeErrorKey.badFrame, 'UNSUBSCRIBE needs an id header', 40000, f);
          return;
        }
        this.unsubscribe(id);
        break;
      }
      case 'ACK':
      case 'NACK':
        // Subscriptions are ack:auto; shell flow control uses SEND .../ack. Nothing to do.
        break;
      case 'DISCONNECT':
        this.receipt(f);
        this.close(1000);
        return;
      case 'CONNECT':
      case 'STOMP': {
        this.fail(RealtimeErrorKey.badFrame, 'Already connected', 40000, f);
        return;
      }
      case 'BEGIN':
      case 'COMMIT':
      case 'ABORT': {
        this.fail(RealtimeErrorKey.unsupported, 'Transactions are not supported', 40000, f);
        return;
      }
      default: {
        this.fail(RealtimeErrorKey.badFrame, `${f.command} is not a client frame`, 40000, f);
        return;
      }
    }
    this.receipt(f);
  }

  private async connect(f: StompFrame): Promise<void> {
    const versions = (f.headers['accept-version'] ?? '').split(',').map((v) => v.trim());
    if (!versions.includes('1.2')) {
      this.fail(RealtimeErrorKey.unsupported, 'Supported protocol versions are 1.2', 40000, f);
      return;
    }
    const token = f.headers.token ?? '';
    const user = await authenticate(this.opts.app.storage.db, token || undefined);
    if (!user) {
      this.fail('auth.required', 'Authentication required', ResultCode.Unauthorized, f);
      return;
    }
    this.user = user;
    const applyId = (f.headers.applyId ?? '').trim();
    if (applyId && applyId !== 'null' && applyId !== 'undefined')
      this.apply = await this.resolveApply(applyId);
    const [cx] = (f.headers['heart-beat'] ?? '0,0').split(',').map((n) => Number.parseInt(n, 10) || 0);
    this.state = 'connected';
    this.sendFrame(
      serializeFrame({
        command: 'CONNECTED',
        headers: {
          version: '1.2',
          // The server never sends heart-beats; it wants the client's at least this often.
          'heart-beat': `0,${cx > 0 ? this.opts.heartbeatMs : 0}`,
          session: this.sessionId,
          server: 'bianbu-cloud',
          'user-name': user.username,
        },
      }),
    );
    this.receipt(f);
  }

  private async resolveApply(applyId: string): Promise<ResolvedApply> {
    const app = this.opts.app;
    if (!app.resolveApply)
      throw new AppError(503, ResultCode.Unavailable, 'apply.unavailable', 'Applies are not available');
    const req = {
      headers: { applyaccess: applyId },
      ip: this.opts.ip,
      body: { applyId },
    } as unknown as FastifyRequest;
    const ctx: CallContext = {
      app,
      req,
      reply: null as unknown as FastifyReply,
      user: this.user,
      apply: null,
      ip: this.opts.ip,
    };
    return app.resolveApply(ctx, { applyId });
  }

  private send(f: StompFrame): void {
    const destination = f.headers.destination ?? '';
    const d = parseDestination(destination);
    if (!d || (d.kind !== 'shellInput' && d.kind !== 'shellResize' && d.kind !== 'shellAck')) {
      this.fail(RealtimeErrorKey.forbidden, `No SEND to ${destination.slice(0, 200)}`, 40300, f);
      return;
    }
    // Writing to a shell needs an authorised subscription to it on this connection.
    const views = [...this.subs.values()].filter(
      (s): s is ShellView => s.kind === 'shell' && s.shellId === d.id,
    );
    if (views.length === 0) {
      this.fail(RealtimeErrorKey.forbidden, 'Not subscribed to this shell', 40300, f);
      return;
    }
    if (!views.some((v) => v.state === 'live')) return; // ended or still attaching: input is dropped
    const channel = shellIn(d.id);
    if (d.kind === 'shellInput') {
      if (f.body.length) this.opts.bus.publish(channel, { h: { t: 'input' }, data: Buffer.from(f.body) });
    } else if (d.kind === 'shellResize') {
      let size: unknown;
      try {
        size = JSON.parse(Buffer.from(f.body).toString('utf8'));
      } catch {
        size = null;
      }
      const parsed = shellResizeBody.safeParse(size);
      if (!parsed.success) {
        this.fail(RealtimeErrorKey.badFrame, 'Resize body must be {cols, rows}', 40000, f);
        return;
      }
      this.opts.bus.publish(channel, { h: { t: 'resize', ...parsed.data } });
    } else {
      const o = Number(f.headers.offset);
      if (!Number.isSafeInteger(o) || o < 0) {
        this.fail(RealtimeErrorKey.badFrame, 'ack needs an offset header', 40000, f);
        return;
      }
      const only = f.headers.subscription;
      for (const v of views)
        if (v.state === 'live' && (!only || v.id === only))
          this.opts.bus.publish(channel, { h: { t: 'ack', v: v.viewerId, o } });
    }
  }

  private async subscribe(f: StompFrame): Promise<void> {
    const id = f.headers.id;
    const destination = f.headers.destination;
    if (!id || !destination) {
      this.fail(RealtimeErrorKey.badFrame, 'SUBSCRIBE needs id and destination', 40000, f);
      return;
    }
    if (this.subs.has(id)) {
      this.fail(RealtimeErrorKey.badFrame, `Subscription id ${id} already in use`, 40000, f);
      return;
    }
    if (this.subs.size >= this.opts.maxSubscriptions) {
      this.fail(RealtimeErrorKey.badFrame, 'Too many subscriptions', 40000, f);
      return;
    }
    const d = parseDestination(destination);
    if (!d || d.kind === 'shellInput' || d.kind === 'shellResize' || d.kind === 'shellAck') {
      this.refuse(id, destination, RealtimeErrorKey.unknownDestination);
      return;
    }
    const user = this.user!;
    if (d.kind === 'userNotifications') {
      const sub: TopicSub = { kind: 'user', id, destination, off: null };
      this.subs.set(id, sub);
      sub.off = await this.opts.bus.subscribe(userChannel(user.id), (m) => this.deliverJson(sub, m));
      return;
    }
    if (d.kind === 'boardState') {
      const applyId = f.headers.applyId || this.apply?.applyId;
      let apply: ResolvedApply | null = null;
      if (applyId) apply = await this.resolveApply(applyId).catch(() => null);
      if (!apply || apply.deviceId !== d.id) {
        this.refuse(id, destination, RealtimeErrorKey.notFound);
        return;
      }
      const sub: TopicSub = { kind: 'board', id, destination, off: null, applyId: apply.applyId };
      this.subs.set(id, sub);
      sub.off = await this.opts.bus.subscribe(boardChannel(d.id), (m) => this.deliverJson(sub, m));
      return;
    }
    await this.subscribeShell(id, destination, d.id, f.headers.offset);
  }

  private async subscribeShell(
    id: string,
    destination: string,
    shellId: string,
    offset: string | undefined,
  ): Promise<void> {
    const view: ShellView = {
      kind: 'shell',
      id,
      destination,
      off: null,
      shellId,
      viewerId: crypto.randomUUID(),
      state: 'attaching',
      next: 0,
      pending: [],
      pendingBytes: 0,
      pendingOffset: 0,
    };
    this.subs.set(id, view);
    const answer = new Promise<{ ok: true } | { ok: false; key: string }>((resolve) => {
      view.attached = resolve;
      const t = setTimeout(
        () => resolve({ ok: false, key: RealtimeErrorKey.notFound }),
        OWNER_ANSWER_TIMEOUT_MS,
      );
      t.unref();
    });
    view.off = await this.opts.bus.subscribe(shellOut(shellId), (m) => this.onShellOut(view, m));
    const from = offset !== undefined && /^\d{1,15}$/.test(offset) ? Number(offset) : -1;
    this.opts.bus.publish(shellIn(shellId), { h: { t: 'attach', v: view.viewerId, u: this.user!.id, from } });
    const a = await answer;
    view.attached = undefined;
    if (!a.ok) {
      view.off?.();
      this.subs.delete(id);
      if (this.state !== 'closed') this.refuse(id, destination, a.key);
    }
  }

  private onShellOut(view: ShellView, m: BusMessage): void {
    const h = m.h;
    if (this.state === 'closed' || view.state === 'closed') return;
    switch (h.t) {
      case 'data': {
        if (view.state !== 'live' || !m.data) return;
        let o = Number(h.o);
        let data = m.data;
        const end = o + data.length;
        if (end <= view.next) return;
        if (o < view.next) {
          data = data.subarray(view.next - o);
          o = view.next;
        }
        view.next = end;
        this.output(view, o, data);
        return;
      }
      case 'replay': {
        if (h.v !== view.viewerId || view.state !== 'attaching') return;
        const o = Number(h.o);
        const data = m.data ?? Buffer.alloc(0);
        view.state = 'live';
        view.next = o + data.length;
        const lost = Number(h.lost) || 0;
        // Sent even when empty: it tells the client where the stream starts and that it is live.
        this.sendOutput(view, o, [data], data.length, lost);
        view.attached?.({ ok: true });
        return;
      }
      case 'refused':
        if (h.v === view.viewerId) view.attached?.({ ok: false, key: String(h.key) });
        return;
      case 'exit': {
        if (view.state !== 'live') return;
        this.flushView(view);
        view.state = 'closed';
        view.off?.();
        view.off = null;
        this.sendEvent(view.id, view.destination, {
          event: RealtimeEvent.closed,
          reason: String(h.reason ?? ''),
          'exit-code': h.code === null || h.code === undefined ? undefined : String(h.code),
        });
        return;
      }
    }
  }

  /** Sends at once when the socket is idle; otherwise accumulates until the in-flight send drains. */
  private output(view: ShellView, offset: number, data: Buffer): void {
    if (this.inflight === 0 && view.pendingBytes === 0) {
      this.sendOutput(view, offset, [data], data.length, 0);
      return;
    }
    if (view.pendingBytes === 0) view.pendingOffset = offset;
    view.pending.push(data);
    view.pendingBytes += data.length;
    this.dirty.add(view);
  }

  private flushView(view: ShellView): void {
    if (view.pendingBytes === 0) return;
    const chunks = view.pending;
    const n = view.pendingBytes;
    view.pending = [];
    view.pendingBytes = 0;
    this.dirty.delete(view);
    this.sendOutput(view, view.pendingOffset, chunks, n, 0);
  }

  private sendOutput(view: ShellView, offset: number, chunks: Buffer[], n: number, lost: number): void {
    const head = serializeHead('MESSAGE', {
      subscription: view.id,
      'message-id': String(++this.messageSeq),
      destination: view.destination,
      'content-type': 'application/octet-stream',
      offset: String(offset),
      truncated: lost ? String(lost) : undefined,
      'content-length': String(n),
    });
    const frame = Buffer.concat([Buffer.from(head), ...chunks, NUL], Buffer.byteLength(head) + n + 1);
    this.sendFrame(frame);
  }

  private readonly drained = (): void => {
    this.inflight--;
    if (this.inflight === 0 && this.dirty.size && this.state !== 'closed') {
      for (const v of [...this.dirty]) this.flushView(v);
    }
  };

  private sendFrame(frame: Uint8Array): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.inflight++;
    this.ws.send(frame, { binary: true }, this.drained);
  }

  private deliverJson(sub: TopicSub, m: BusMessage): void {
    if (this.state !== 'connected' || !this.subs.has(sub.id)) return;
    const body = encoder.encode(JSON.stringify(m.h));
    this.sendFrame(
      serializeFrame({
        command: 'MESSAGE',
        headers: {
          subscription: sub.id,
          'message-id': String(++this.messageSeq),
          destination: sub.destination,
          'content-type': 'application/json',
        },
        body,
      }),
    );
  }

  private sendEvent(subId: string, destination: string, headers: Record<string, string | undefined>): void {
    this.sendFrame(
      serializeFrame({
        command: 'MESSAGE',
        headers: { subscription: subId, 'message-id': String(++this.messageSeq), destination, ...headers },
      }),
    );
  }

  private refuse(id: string, destination: string, key: string): void {
    this.sendEvent(id, destination, { event: RealtimeEvent.refused, error: key });
  }

  private unsubscribe(id: string): void {
    const s = this.subs.get(id);
    if (!s) return;
    this.subs.delete(id);
    s.off?.();
    if (s.kind === 'shell') {
      this.dirty.delete(s);
      if (s.state !== 'closed')
        this.opts.bus.publish(shellIn(s.shellId), { h: { t: 'detach', v: s.viewerId } });
      s.state = 'closed';
    }
  }

  private receipt(f: StompFrame): void {
    const id = f.headers.receipt;
    if (id !== undefined)
      this.sendFrame(serializeFrame({ command: 'RECEIPT', headers: { 'receipt-id': id } }));
  }

  private failFromError(err: unknown, f: StompFrame): void {
    if (err instanceof AppError) {
      this.fail(err.key, err.message, err.code, f);
      return;
    }
    this.opts.app.log.error({ err }, 'realtime frame handling failed');
    this.fail('server.error', 'Server Error', ResultCode.ServerError, f);
  }

  /** ERROR frame, then the socket is closed (STOMP 1.2: the server closes after an ERROR). */
  private fail(key: string, message: string, code: number, f?: StompFrame): void {
    if (this.state === 'closed') return;
    const headers: Record<string, string | undefined> = {
      message: message.slice(0, 200),
      code: String(code),
      error: key,
      'content-type': 'text/plain',
    };
    if (f?.headers.receipt !== undefined) headers['receipt-id'] = f.headers.receipt;
    if (this.ws.readyState === this.ws.OPEN) {
      this.ws.send(serializeFrame({ command: 'ERROR', headers, body: message }), { binary: true }, () => {});
    }
    this.close(code === ResultCode.ServerError ? 1011 : 1008);
  }

  close(code = 1000): void {
    if (this.state === 'closed') return;
    this.cleanup();
    try {
      this.ws.close(code);
    } catch {
      this.ws.terminate();
    }
  }

  private cleanup(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    for (const t of this.timers) clearTimeout(t);
    for (const id of [...this.subs.keys()]) this.unsubscribe(id);
    this.dirty.clear();
    this.opts.onClose(this);
  }
}
