// The socket half of a STOMP session over one WebSocket (connection.ts is the session): frames are
// read no faster than they are handled (past INBOUND_QUEUE_BYTES the socket is paused) and handled one
// after another in arrival order; sends are counted until the socket takes them (a socket that takes
// nothing for SLOW_CONSUMER_MS is closed); silence beyond the heart-beat window terminates it; an
// ERROR frame is followed by the close. Shell output and its bound per socket live in shell-output.ts.
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { AppError } from '#server/errors.ts';
import { ResultCode } from '#shared/codes.ts';
import { INBOUND_QUEUE_BYTES, RealtimeErrorKey, SLOW_CONSUMER_MS, STOMP_LIMITS } from '#shared/realtime.ts';
import { parseMessage, StompCodecError, type StompFrame, serializeFrame } from '#shared/stomp-codec.ts';
import type { Bus } from './bus.ts';
import { ShellOutput } from './shell-output.ts';

/** What the socket half needs of the service. */
export interface SocketOptions {
  app: FastifyInstance;
  bus: Bus;
  connectTimeoutMs: number;
  /** The client's address (trust-aware: a trusted proxy's X-Forwarded-For, else the socket peer). */
  ip: string;
  /** A socket that takes nothing queued for this long is closed (default SLOW_CONSUMER_MS). */
  slowConsumerMs?: number;
}

/** After a close handshake is started, a peer that does not answer is cut after this long. */
const CLOSE_GRACE_MS = 2000;

export abstract class StompSocket<O extends SocketOptions = SocketOptions> {
  readonly sessionId = crypto.randomUUID();
  protected state: 'awaiting' | 'connected' | 'closed' = 'awaiting';
  protected chain: Promise<void> = Promise.resolve();
  protected inflight = 0;
  /** Since when a send has waited for the socket to take it (while inflight > 0). */
  protected waitingSince = 0;
  protected readonly out: ShellOutput;
  protected messageSeq = 0;
  /** Bytes of client frames read but not handled yet. */
  protected inbound = 0;
  protected readPaused = false;
  /** Set while the socket is not read because a shell holds too much of its input (SHELL_INPUT_HELD). */
  protected inputHeld: NodeJS.Timeout | null = null;
  lastSeen = Date.now();
  protected readonly timers: NodeJS.Timeout[] = [];
  constructor(
    readonly ws: WebSocket,
    protected readonly opts: O,
  ) {
    this.out = new ShellOutput({
      inflight: () => this.inflight,
      buffered: () => this.ws.bufferedAmount,
      sendFrame: (frame, release) => this.sendFrame(frame, release),
      sendEvent: (id, destination, headers) => this.sendEvent(id, destination, headers),
      messageId: () => String(++this.messageSeq),
      publish: (channel, msg) => this.opts.bus.publish(channel, msg),
    });
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

  /** The client's address, as records of this connection name it. */
  get ip(): string {
    return this.opts.ip;
  }

  /** Bytes coalesced for this connection's shell views, waiting for the socket to drain. */
  get pendingBytes(): number {
    return this.out.pendingBytes;
  }

  /** Bytes the service holds for this socket: in its buffer and coalesced (bounded by SHELL_FLOW.socketBacklogBytes). */
  get backlogBytes(): number {
    return this.out.backlog();
  }

  /** Bytes of client frames read and not handled yet (bounded by about INBOUND_QUEUE_BYTES). */
  get queuedInboundBytes(): number {
    return this.inbound;
  }

  /** Called by the hub's liveness sweep. */
  checkAlive(now: number, windowMs: number, pingAfterMs: number): void {
    if (this.state === 'closed') return;
    const slowMs = this.opts.slowConsumerMs ?? SLOW_CONSUMER_MS;
    if (this.inflight > 0 && now - this.waitingSince > slowMs) {
      this.opts.app.log.info(
        { session: this.sessionId, backlog: this.backlogBytes },
        'realtime client takes nothing from its socket; closing',
      );
      this.fail(RealtimeErrorKey.slowConsumer, 'The connection is too far behind', ResultCode.BadRequest);
      return;
    }
    this.out.catchUp();
    // A socket we stopped reading ourselves says nothing about the client's liveness.
    if (this.readPaused || this.inputHeld) this.lastSeen = now;
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

  protected onMessage(data: Buffer, _isBinary: boolean): void {
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
    // Frames wait for the one before (a SUBSCRIBE may wait seconds for a shell's owner): past the
    // bound, stop reading the socket until they are handled, so a flood queues in the client.
    this.inbound += data.length;
    if (this.inbound > INBOUND_QUEUE_BYTES && !this.readPaused && this.ws.readyState === this.ws.OPEN) {
      this.readPaused = true;
      this.ws.pause();
    }
    // A lone SEND (a keystroke, an acknowledgement) while nothing waits before it is handled now:
    // there is nothing to keep it in order with, and its echo should not wait for a promise's turn.
    const f0 = frames[0];
    if (
      frames.length === 1 &&
      f0.command === 'SEND' &&
      this.state === 'connected' &&
      this.inbound === data.length
    ) {
      try {
        this.sendAndReceipt(f0);
      } catch (err) {
        this.failFromError(err, f0);
      }
      this.handled(data.length);
      return;
    }
    for (const f of frames) {
      this.chain = this.chain.then(() => this.handle(f)).catch((err) => this.failFromError(err, f));
    }
    this.chain = this.chain.then(() => this.handled(data.length));
  }

  protected handled(n: number): void {
    this.inbound -= n;
    if (this.readPaused && this.inbound <= INBOUND_QUEUE_BYTES / 2 && this.state !== 'closed') {
      this.readPaused = false;
      this.lastSeen = Date.now();
      if (!this.inputHeld) this.ws.resume();
    }
  }

  protected readonly drained = (): void => {
    this.inflight--;
    this.waitingSince = Date.now();
    if (this.state !== 'closed') this.out.drained();
  };

  /** `release`: the frame's buffer may be reused once this runs (after ws has written it, or at once). */
  protected sendFrame(frame: Uint8Array, release?: () => void): void {
    if (this.ws.readyState !== this.ws.OPEN) {
      release?.();
      return;
    }
    if (this.inflight++ === 0) this.waitingSince = Date.now();
    this.ws.send(
      frame,
      { binary: true },
      release
        ? () => {
            release();
            this.drained();
          }
        : this.drained,
    );
  }

  protected sendEvent(subId: string, destination: string, headers: Record<string, string | undefined>): void {
    this.sendFrame(
      serializeFrame({
        command: 'MESSAGE',
        headers: { subscription: subId, 'message-id': String(++this.messageSeq), destination, ...headers },
      }),
    );
  }

  protected receipt(f: StompFrame): void {
    const id = f.headers.receipt;
    if (id !== undefined)
      this.sendFrame(serializeFrame({ command: 'RECEIPT', headers: { 'receipt-id': id } }));
  }

  protected failFromError(err: unknown, f: StompFrame): void {
    if (err instanceof AppError) {
      this.fail(err.key, err.message, err.code, f);
      return;
    }
    this.opts.app.log.error({ err }, 'realtime frame handling failed');
    this.fail('server.error', 'Server Error', ResultCode.ServerError, f);
  }

  /** ERROR frame, then the socket is closed (STOMP 1.2: the server closes after an ERROR). */
  protected fail(key: string, message: string, code: number, f?: StompFrame): void {
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
      return;
    }
    // A peer that does not read never answers the close handshake; ws would hold the socket (and
    // what it buffered) for 30 s.
    const cut = setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS);
    cut.unref();
    this.ws.once('close', () => clearTimeout(cut));
  }

  protected cleanup(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    for (const t of this.timers) clearTimeout(t);
    this.timers.length = 0;
    if (this.inputHeld) clearInterval(this.inputHeld);
    this.inputHeld = null;
    this.released();
  }

  /** Handles one client frame, in arrival order. */
  protected abstract handle(f: StompFrame): Promise<void>;
  /** A SEND handled at once (nothing waits before it), then its receipt. */
  protected abstract sendAndReceipt(f: StompFrame): void;
  /** The session lets go of what it holds (subscriptions, timers, shell output) as the socket closes. */
  protected abstract released(): void;
}
