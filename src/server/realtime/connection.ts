// One STOMP session over one WebSocket. Lifecycle: the socket opens → the first frame must be
// CONNECT/STOMP within the connect timeout (token and applyId checked; a bad one gets ERROR and the
// socket closed) → SUBSCRIBE / UNSUBSCRIBE / SEND / ACK frames, processed one after another in
// arrival order → DISCONNECT (RECEIPT, close), a bad frame (ERROR, close), the end of the sign-in
// (revoked, displaced, expired, user deactivated: ERROR with the session code, close), a socket that
// takes nothing for SLOW_CONSUMER_MS (close), or silence beyond the heart-beat window (the socket is
// terminated). Closing detaches every shell viewer and drops every bus subscription, so a vanished
// client leaves nothing behind.
//
// The socket half (framing, reading no faster than handling, sends, ERROR and close) is StompSocket in
// stomp-socket.ts; shell output and its bound per socket live in shell-output.ts.
import crypto from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  EXPIRED,
  recheckCredential,
  type SessionEnd,
  sessionEndOf,
  tokenFromHeader,
} from '#server/auth/tokens.ts';
import type { AuthUser } from '#server/auth/user-context.ts';
import { authenticateToken } from '#server/auth/user-context.ts';
import { AppError } from '#server/errors.ts';
import type { CallContext, EarlyApply, ResolvedApply } from '#server/http/handlers.ts';
import {
  boardChannel,
  OWNER_ANSWER_TIMEOUT_MS,
  shellIn,
  shellOut,
  userChannel,
} from '#server/shells/bus-protocol.ts';
import { ResultCode, SESSION_END_CODES } from '#shared/codes.ts';
import {
  Destinations,
  parseDestination,
  RealtimeErrorKey,
  RealtimeEvent,
  SHELL_INPUT_HELD,
  shellResizeBody,
} from '#shared/realtime.ts';
import { type StompFrame, serializeFrame } from '#shared/stomp-codec.ts';
import type { BusMessage } from './bus.ts';
import type { ShellView } from './shell-output.ts';
import { type SocketOptions, StompSocket } from './stomp-socket.ts';

export interface ConnectionOptions extends SocketOptions {
  /** Interval the server asks the client to send heart-beats at (ms). */
  heartbeatMs: number;
  connectTimeoutMs: number;
  /** The client's address (trust-aware: a trusted proxy's X-Forwarded-For, else the socket peer). */
  ip: string;
  maxSubscriptions: number;
  /** A socket that takes nothing queued for this long is closed (default SLOW_CONSUMER_MS). */
  slowConsumerMs?: number;
  /**
   * The connection runs through the service's WebSocket relay (relay.c): the relay, the client
   * socket's descriptor number it knows the connection by, and the unix socket `ws` runs over.
   */
  relay?: { relay: unknown; key: number; socket: Socket };
  onClose(c: StompConnection): void;
  /** The sign-in ended (seen here: expiry, or a check in storage): end it on every instance. */
  onSessionEnded(c: StompConnection, end: SessionEnd): void;
}

interface TopicSub {
  kind: 'board' | 'user';
  id: string;
  destination: string;
  off: (() => void) | null;
  applyId?: string;
}

type Subscription = ShellView | TopicSub;

const encoder = new TextEncoder();
/** setTimeout's longest delay; a later expiry re-arms. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * A view not yet handed to the relay (client frames still on their way) is offered again so often, so
 * many times; after that, as long as it may be (input the service holds for a program that reads late,
 * another view served), once a second.
 */
const RELAY_RETRY_MS = 50;
const RELAY_TRIES = 20;
const RELAY_SLOW_RETRY_MS = 1000;
/** How often a socket held for a shell's input looks whether the program took it. */
const INPUT_HELD_POLL_MS = 10;

export class StompConnection extends StompSocket<ConnectionOptions> {
  user: AuthUser | null = null;
  apply: ResolvedApply | null = null;
  /** When the credential stops working (ms since epoch, service clock), null for none (API keys). */
  expiresAt: number | null = null;
  protected readonly subs = new Map<string, Subscription>();
  private expiryTimer: NodeJS.Timeout | null = null;

  /** The shell subscriptions: what was sent to each, acknowledged, and whether it fell behind. */
  viewStats(): {
    id: string;
    shellId: string;
    state: string;
    sent: number;
    acked: number;
    behind: boolean;
  }[] {
    const out = [];
    for (const s of this.subs.values())
      if (s.kind === 'shell')
        out.push({
          id: s.id,
          shellId: s.shellId,
          state: s.state,
          sent: s.next,
          acked: s.acked,
          behind: s.behind,
        });
    return out;
  }

  /** Whether the credential has expired at `now` (service clock, ms). */
  expired(now: number): boolean {
    return this.state === 'connected' && this.expiresAt !== null && now >= this.expiresAt;
  }

  /** The sign-in ended: ERROR with the session code (the console asks to sign in again), then close. */
  endSession(end: SessionEnd): void {
    this.fail(end.key, end.message, end.code);
  }

  /** Keep-alives for the owners of the shells this connection watches. */
  keepViewers(): void {
    for (const s of this.subs.values())
      if (s.kind === 'shell' && s.state === 'live')
        this.opts.bus.publish(shellIn(s.shellId), { h: { t: 'keep', v: s.viewerId } });
  }

  /** Arms the timer that ends the session at the credential's expiry (re-armed past setTimeout's range). */
  private armExpiry(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
    if (this.expiresAt === null || this.state !== 'connected') return;
    const left = this.expiresAt - this.opts.app.clock.now().getTime();
    if (left <= 0) {
      this.opts.onSessionEnded(this, sessionEndOf(EXPIRED));
      return;
    }
    this.expiryTimer = setTimeout(() => this.armExpiry(), Math.min(left, MAX_TIMER_MS));
    this.expiryTimer.unref();
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

  protected async handle(f: StompFrame): Promise<void> {
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
        this.sendAndReceipt(f);
        return;
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
    const token = tokenFromHeader(f.headers.token ?? '');
    if (!token) {
      this.fail('auth.required', 'Authentication required', ResultCode.Unauthorized, f);
      return;
    }
    const db = this.opts.app.storage.db;
    const applyId = (f.headers.applyId ?? '').trim();
    const named = applyId && applyId !== 'null' && applyId !== 'undefined';
    // The apply is looked up while the token is checked; it is judged once the user is known.
    const early = named ? this.opts.app.prefetchApply?.({}, { applyId }) : undefined;
    // Expiry is judged by the service clock, as for HTTP calls.
    const { user, expiresAt } = await authenticateToken(db, token, this.opts.app.clock.now());
    this.user = user;
    this.expiresAt = expiresAt?.getTime() ?? null;
    if (named) this.apply = await this.resolveApply(applyId, early);
    if (this.state === 'closed') return;
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
    this.opts.app.log.info(
      { session: this.sessionId, userId: user.id, ip: this.opts.ip, applyId: this.apply?.applyId },
      'realtime connected',
    );
    this.armExpiry();
  }

  private async resolveApply(applyId: string, early?: EarlyApply): Promise<ResolvedApply> {
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
    return app.resolveApply(ctx, { applyId }, early);
  }

  /** A SEND, then its receipt — unless it was refused: its ERROR carried the receipt-id. */
  protected sendAndReceipt(f: StompFrame): void {
    this.send(f);
    if (this.state === 'connected') this.receipt(f);
  }

  private send(f: StompFrame): void {
    // Cheap on every keystroke: the expiry is known; revocations arrive over the bus.
    if (this.expired(this.opts.app.clock.now().getTime())) {
      this.opts.onSessionEnded(this, sessionEndOf(EXPIRED));
      return;
    }
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
    const live = views.find((v) => v.state === 'live');
    if (!live) return; // ended or still attaching: input is dropped
    const channel = shellIn(d.id);
    if (d.kind === 'shellInput') {
      // The viewer id lets the shell tell its host's input from a guest's (joined shells).
      if (f.body.length) {
        this.opts.bus.publish(channel, { h: { t: 'input', v: live.viewerId }, data: Buffer.from(f.body) });
        this.holdInputIfFull(d.id);
      }
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
      this.ack(views, o, f);
    }
  }

  /**
   * An acknowledgement must lie within [the subscription's last one, what it was sent]: beyond what
   * was sent, or backwards, is a protocol error. Subscriptions still attaching ignore it.
   */
  private ack(views: ShellView[], o: number, f: StompFrame): void {
    const only = f.headers.subscription;
    const targets = views.filter((v) => v.state === 'live' && (!only || v.id === only));
    if (targets.length === 0) return;
    const sent = Math.max(...targets.map((v) => v.next));
    // A view the relay serves learns what was sent from the ring's feed, which may come after the
    // client's acknowledgement of it (two channels); the relay and the session bound it instead.
    if (o > sent && !targets.some((v) => v.served)) {
      this.fail(
        RealtimeErrorKey.ackOutOfRange,
        `Acknowledged offset ${o} is beyond the ${sent} bytes sent`,
        40000,
        f,
      );
      return;
    }
    if (targets.some((v) => o < v.acked)) {
      this.fail(RealtimeErrorKey.ackOutOfRange, 'Acknowledgements must not go backwards', 40000, f);
      return;
    }
    for (const v of targets) {
      v.acked = o;
      this.opts.bus.publish(shellIn(v.shellId), { h: { t: 'ack', v: v.viewerId, o: Math.min(o, v.next) } });
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
    // A new subscription checks the sign-in in storage: a revocation this instance missed ends here.
    if (!(await this.stillSignedIn())) return;
    if (d.kind === 'userNotifications') {
      const sub: TopicSub = { kind: 'user', id, destination, off: null };
      this.subs.set(id, sub);
      this.hold(sub, await this.opts.bus.subscribe(userChannel(user.id), (m) => this.deliverJson(sub, m)));
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
      this.hold(sub, await this.opts.bus.subscribe(boardChannel(d.id), (m) => this.deliverJson(sub, m)));
      return;
    }
    await this.subscribeShell(id, destination, d.id, f.headers.offset);
  }

  /** False (and the session ended everywhere) when the credential no longer works. */
  private async stillSignedIn(): Promise<boolean> {
    const user = this.user!;
    try {
      await recheckCredential(this.opts.app.storage.db, user.credentialId, this.opts.app.clock.now());
      return this.state === 'connected';
    } catch (err) {
      if (!(err instanceof AppError) || !SESSION_END_CODES.includes(err.code)) throw err;
      this.opts.onSessionEnded(this, { code: err.code, key: err.key, message: err.message });
      return false;
    }
  }

  /**
   * Keeps a bus subscription made for `sub`, unless the subscription (or the connection) went away
   * while it was being made: then it is dropped at once, so nothing outlives the connection.
   */
  private hold(sub: Subscription, off: () => void): boolean {
    if (this.state === 'closed' || this.subs.get(sub.id) !== sub) {
      off();
      return false;
    }
    sub.off = off;
    return true;
  }

  private async subscribeShell(
    id: string,
    destination: string,
    shellId: string,
    offset: string | undefined,
  ): Promise<void> {
    const view = this.out.newView(id, destination, shellId, crypto.randomUUID());
    this.subs.set(id, view);
    let timer: NodeJS.Timeout | null = null;
    const answer = new Promise<{ ok: true } | { ok: false; key: string }>((resolve) => {
      view.attached = resolve;
      timer = setTimeout(
        () => resolve({ ok: false, key: RealtimeErrorKey.notFound }),
        OWNER_ANSWER_TIMEOUT_MS,
      );
      timer.unref();
    });
    const held = this.hold(
      view,
      await this.opts.bus.subscribe(shellOut(shellId), (m) => {
        if (this.state !== 'closed') this.out.onBusMessage(view, m);
      }),
    );
    if (!held) {
      if (timer) clearTimeout(timer);
      view.attached = undefined;
      return;
    }
    const from = offset !== undefined && /^\d{1,15}$/.test(offset) ? Number(offset) : -1;
    // A guest of a joined shell is checked here, in storage (src/server/share); the shell's owner
    // trusts the flag as it trusts `u`.
    // The host of a shell on this instance is no guest of it: no query for the common case.
    const hostedHere = this.opts.app.shells.get(shellId)?.meta.userId === this.user!.id;
    const guest =
      !hostedHere && (await this.opts.app.shellGuest?.(this.user!.id, shellId).catch(() => false)) ? 1 : 0;
    if (this.subs.get(id) !== view || this.closed) {
      if (timer) clearTimeout(timer);
      view.attached = undefined;
      return;
    }
    // A shell no instance listens to does not exist (any more, after a restart): refused at once.
    this.opts.bus
      .publishReach(shellIn(shellId), {
        h: { t: 'attach', v: view.viewerId, u: this.user!.id, from, g: guest, n: this.user!.username },
      })
      .then((reached) => {
        if (reached === 0) view.attached?.({ ok: false, key: RealtimeErrorKey.notFound });
      });
    const a = await answer;
    if (timer) clearTimeout(timer);
    view.attached = undefined;
    if (a.ok && hostedHere && this.opts.relay) void this.serveViaRelay(view);
    if (!a.ok && this.subs.get(id) === view) {
      view.off?.();
      view.off = null;
      this.subs.delete(id);
      this.out.forget(view);
      if (this.state !== 'closed') this.refuse(id, destination, a.key);
    }
  }

  /**
   * Stops reading the socket while a shell of this instance holds more of the input than
   * SHELL_INPUT_HELD.high for its program, until it holds no more than .low: a CLI's stdin or a paste
   * into a program that reads late waits in the client instead of being dropped past the terminal's
   * bound. (A shell on another instance is not held back here.)
   */
  private holdInputIfFull(shellId: string): void {
    const shells = this.opts.app.shells;
    if (this.inputHeld || shells.inputToWaitFor(shellId) <= SHELL_INPUT_HELD.high) return;
    this.ws.pause();
    this.inputHeld = setInterval(() => {
      if (!this.closed && shells.inputToWaitFor(shellId) > SHELL_INPUT_HELD.low) return;
      if (this.inputHeld) clearInterval(this.inputHeld);
      this.inputHeld = null;
      this.lastSeen = Date.now();
      if (!this.readPaused && !this.closed && this.ws.readyState === this.ws.OPEN) this.ws.resume();
    }, INPUT_HELD_POLL_MS);
  }

  /**
   * Hands the host's own live view of a shell on this instance to the WebSocket relay, once nothing
   * of the client's waits here (the relay must not type a key ahead of one still on its way here).
   * Tried again while that is not so (often at first, then once a second for as long as the view lives);
   * the service serves the view meanwhile.
   */
  private async serveViaRelay(view: ShellView, attempt = 0): Promise<void> {
    const r = this.opts.relay;
    if (!r || this.closed || view.state !== 'live' || view.served || this.subs.get(view.id) !== view) return;
    let ok = false;
    if (this.inbound === 0 && !view.behind) {
      ok = await this.opts.app.shells.serveRelay(view.shellId, view.viewerId, {
        relay: r.relay,
        key: r.key,
        head: view.head,
        input: Destinations.shellInput(view.shellId),
        ack: Destinations.shellAck(view.shellId),
        handover: () => {
          this.out.flushView(view);
          view.served = true;
          return { written: r.socket.bytesWritten, read: r.socket.bytesRead };
        },
      });
    }
    if (ok) {
      // It ended while the relay was asked: let the terminal go again.
      if (this.subs.get(view.id) !== view || view.state !== 'live') this.unserve(view);
      return;
    }
    view.served = false;
    if (this.closed) return;
    const soon = attempt < RELAY_TRIES;
    if (!soon && !this.opts.app.shells.relayable(view.shellId, view.viewerId)) return;
    const t = setTimeout(
      () => void this.serveViaRelay(view, attempt + 1),
      soon ? RELAY_RETRY_MS : RELAY_SLOW_RETRY_MS,
    );
    t.unref();
  }

  private unserve(view: ShellView): void {
    if (!view.served) return;
    view.served = false;
    this.opts.app.shells.unserveRelay(view.shellId, view.viewerId);
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

  private refuse(id: string, destination: string, key: string): void {
    this.sendEvent(id, destination, { event: RealtimeEvent.refused, error: key });
  }

  private unsubscribe(id: string): void {
    const s = this.subs.get(id);
    if (!s) return;
    this.subs.delete(id);
    s.off?.();
    s.off = null;
    if (s.kind === 'shell') {
      this.unserve(s);
      this.out.forget(s);
      if (s.state !== 'closed')
        this.opts.bus.publish(shellIn(s.shellId), { h: { t: 'detach', v: s.viewerId } });
      s.state = 'closed';
      s.attached?.({ ok: false, key: RealtimeErrorKey.notFound });
    }
  }

  protected released(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
    for (const id of [...this.subs.keys()]) this.unsubscribe(id);
    this.out.clear();
    this.opts.onClose(this);
  }
}
