// The cli's realtime connection: STOMP 1.2 over WebSocket at /ws, spoken with the shared frame codec
// and destinations (the console's client is browser-bound: valtio state, window.location, a worker
// ticker). Lifecycle: connect() sends CONNECT with `token` and `applyId` and resolves on CONNECTED
// (an ERROR rejects with its stable key); heart-beats go out at the rate CONNECTED asks; close()
// ends it. A dropped socket calls onDrop: ShellSession reconnects and resubscribes from its offset.
import { WebSocket } from 'ws';
import { SESSION_END_CODES } from '#shared/codes.ts';
import { STOMP_HEARTBEAT_OUT_MS } from '#shared/constants.ts';
import { WS_PATH } from '#shared/realtime.ts';
import { parseMessage, type StompCommand, type StompFrame, serializeFrame } from '#shared/stomp-codec.ts';
import { CliError, classify } from './errors.ts';

const LIMITS = {
  maxFrameBytes: 64 << 20,
  maxHeaders: 64,
  maxHeaderLineBytes: 1 << 16,
  maxFramesPerMessage: 10_000,
};

export function wsUrlOf(serviceUrl: string): string {
  const u = new URL(WS_PATH, serviceUrl);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.toString();
}

export class StompConnection {
  private ws: WebSocket | null = null;
  private beat: NodeJS.Timeout | null = null;
  private readonly handlers = new Map<string, (f: StompFrame) => void>();
  private readonly receipts = new Map<string, () => void>();
  private nextId = 1;
  onDrop: (err: CliError) => void = () => {};
  /** Set once the server refused the session (ERROR): no reconnect makes sense. */
  fatal: CliError | null = null;

  constructor(
    private readonly serviceUrl: string,
    private readonly token: string,
    private readonly applyId: string,
  ) {}

  /**
   * Opens the socket and waits for CONNECTED. A handshake that fails on the network before any STOMP
   * frame (reset, garbled HTTP answer) is tried once more: nothing was sent to the board yet. A
   * refusal (ERROR frame) or a timeout is final.
   */
  async connect(timeoutMs = 15_000): Promise<void> {
    try {
      await this.connectOnce(timeoutMs);
    } catch (err) {
      if (this.fatal || !(err instanceof CliError) || err.key !== 'cli.network') throw err;
      await new Promise((r) => setTimeout(r, 250));
      await this.connectOnce(timeoutMs);
    }
  }

  private connectOnce(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(wsUrlOf(this.serviceUrl), { perMessageDeflate: false });
      this.ws = ws;
      let connected = false;
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new CliError('realtime: no CONNECTED in time', 'cli.timeout', 'network'));
      }, timeoutMs);
      ws.on('open', () => {
        this.raw('CONNECT', {
          'accept-version': '1.2',
          host: new URL(this.serviceUrl).host,
          'heart-beat': `${STOMP_HEARTBEAT_OUT_MS},0`,
          token: this.token,
          applyId: this.applyId,
        });
      });
      ws.on('message', (data: Buffer) => {
        let frames: StompFrame[];
        try {
          frames = parseMessage(data, LIMITS);
        } catch {
          return;
        }
        for (const f of frames) {
          if (f.command === 'CONNECTED') {
            connected = true;
            clearTimeout(timer);
            const wants = Number((f.headers['heart-beat'] ?? '0,0').split(',')[1]) || 0;
            if (wants > 0)
              this.beat = setInterval(
                () => ws.readyState === ws.OPEN && ws.send('\n'),
                Math.max(1000, wants / 2),
              );
            resolve();
          } else if (f.command === 'ERROR') {
            const code = Number(f.headers.code) || 0;
            const key = f.headers.error ?? 'realtime.error';
            const err = new CliError(
              `realtime: ${f.headers.message ?? key}`,
              key,
              SESSION_END_CODES.includes(code) ? 'auth' : classify(code, key),
              code,
            );
            this.fatal = err;
            if (!connected) {
              clearTimeout(timer);
              reject(err);
            }
          } else if (f.command === 'RECEIPT') {
            const id = f.headers['receipt-id'];
            this.receipts.get(id)?.();
            this.receipts.delete(id);
          } else if (f.command === 'MESSAGE') {
            this.handlers.get(f.headers.subscription)?.(f);
          }
        }
      });
      ws.on('error', (e) => {
        if (!connected) {
          clearTimeout(timer);
          reject(new CliError(`realtime: ${(e as Error).message}`, 'cli.network', 'network'));
        }
      });
      ws.on('close', () => {
        if (this.beat) clearInterval(this.beat);
        this.beat = null;
        if (this.ws !== ws) return;
        this.ws = null;
        if (connected)
          this.onDrop(
            this.fatal ?? new CliError('realtime: the connection dropped', 'cli.network', 'network'),
          );
      });
    });
  }

  get open(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  private raw(command: StompCommand, headers: Record<string, string>, body?: Uint8Array | string): void {
    this.ws?.send(serializeFrame({ command, headers, body }));
  }

  /** Subscribes and waits for the receipt; answers the subscription id. */
  async subscribe(
    destination: string,
    onFrame: (f: StompFrame) => void,
    headers: Record<string, string> = {},
  ): Promise<string> {
    const id = `s${this.nextId++}`;
    const receipt = `r-${id}`;
    this.handlers.set(id, onFrame);
    await new Promise<void>((resolve) => {
      this.receipts.set(receipt, resolve);
      this.raw('SUBSCRIBE', { id, destination, receipt, ...headers });
    });
    return id;
  }

  unsubscribe(id: string): void {
    this.handlers.delete(id);
    if (this.open) this.raw('UNSUBSCRIBE', { id });
  }

  send(destination: string, body: Uint8Array | string, headers: Record<string, string> = {}): boolean {
    if (!this.open) return false;
    this.raw('SEND', { destination, ...headers }, body);
    return true;
  }

  /** As send, with a receipt: `confirmed` runs once the service has the frame (never if the socket drops first). */
  sendConfirmed(destination: string, body: Uint8Array | string, confirmed: () => void): boolean {
    if (!this.open) return false;
    const receipt = `c${this.nextId++}`;
    this.receipts.set(receipt, confirmed);
    this.raw('SEND', { destination, receipt }, body);
    return true;
  }

  /** Bytes written to the socket and not yet taken by the kernel (input backpressure). */
  get buffered(): number {
    return this.ws?.bufferedAmount ?? 0;
  }

  close(): void {
    const ws = this.ws;
    this.ws = null;
    if (this.beat) clearInterval(this.beat);
    if (ws && ws.readyState === WebSocket.OPEN) {
      try {
        ws.send(serializeFrame({ command: 'DISCONNECT', headers: {} }));
      } catch {}
      ws.close();
    } else ws?.terminate();
  }
}
