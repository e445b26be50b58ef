// One shell on a board, as the console holds one: opened with apply-device-shell, its bytes followed
// over /ws by absolute offset, acknowledged once the consumer has processed them (flow control: the
// board's program pauses when we fall behind), input in chunks of SHELL_INPUT_CHUNK_BYTES, resize as
// JSON. Lifecycle: open() → data/closed callbacks → close() (unapply-device-shell). A dropped socket
// reconnects every second for up to a minute and resubscribes from the next byte it needs, so no
// output is lost or repeated (the server's ring replays it); input typed meanwhile waits. Input sent
// just before a drop may not have reached the service: with `confirmInput` every chunk asks for a
// receipt, and a drop with chunks unconfirmed calls onInputLost (exec's stdin must arrive whole).
import type { LeaseDto } from '#shared/leases.ts';
import { Destinations, SHELL_FLOW, SHELL_INPUT_CHUNK_BYTES } from '#shared/realtime.ts';
import { shellCalls } from '#shared/shells.ts';
import type { StompFrame } from '#shared/stomp-codec.ts';
import { applyFor, type Ctx } from './context.ts';
import type { CliError } from './errors.ts';
import { StompConnection } from './realtime.ts';

const applyShell = shellCalls.find((c) => c.name === 'applyDeviceShell')!;
const unapplyShell = shellCalls.find((c) => c.name === 'unapplyDeviceShell')!;

const RECONNECT_FOR_MS = 60_000;
const ACK_IDLE_MS = 20;

export interface ShellOpenOpts {
  cols?: number;
  rows?: number;
  type?: 'login' | 'serial';
}

export class ShellSession {
  /** The next output offset we need. */
  next = 0;
  private acked = 0;
  private ackTimer: NodeJS.Timeout | null = null;
  private pendingInput: Uint8Array[] = [];
  private ended = false;
  private subId = '';
  onData: (chunk: Buffer, endOffset: number) => void = () => {};
  onClosed: (reason: string) => void = () => {};
  onNotice: (text: string) => void = () => {};
  /** Ask a receipt for every input chunk (see onInputLost). */
  confirmInput = false;
  /** The socket dropped while input sent on it was not confirmed: some of it may never reach the board. */
  onInputLost: () => void = () => {};
  private unconfirmed = 0;

  private constructor(
    private readonly ctx: Ctx,
    readonly applyId: string,
    readonly shellId: string,
    private conn: StompConnection,
  ) {}

  static async open(ctx: Ctx, lease: LeaseDto, opts: ShellOpenOpts = {}): Promise<ShellSession> {
    const applyId = await applyFor(ctx, lease);
    const [{ clientId }, conn] = await Promise.all([
      ctx.call(
        applyShell,
        { applyId, shellType: opts.type ?? 'login', cols: opts.cols ?? 80, rows: opts.rows ?? 24 },
        { applyId },
      ),
      (async () => {
        const c = new StompConnection(ctx.cfg.url, ctx.cfg.key ?? '', applyId);
        await c.connect();
        return c;
      })(),
    ]);
    const s = new ShellSession(ctx, applyId, clientId, conn);
    await s.attach();
    return s;
  }

  private async attach(): Promise<void> {
    this.conn.onDrop = (err) => void this.reconnect(err);
    this.subId = await this.conn.subscribe(Destinations.shellOutput(this.shellId), (f) => this.take(f), {
      offset: String(this.next),
    });
    const queued = this.pendingInput;
    this.pendingInput = [];
    for (const q of queued) this.write(q);
  }

  private take(f: StompFrame): void {
    if (this.ended) return;
    if (f.headers.event === 'closed' || f.headers.event === 'refused') {
      this.finish(f.headers.reason ?? f.headers.error ?? 'shell.closed');
      return;
    }
    const o = Number(f.headers.offset);
    let body = Buffer.from(f.body.buffer, f.body.byteOffset, f.body.byteLength);
    if (f.headers.truncated) this.onNotice(`[${f.headers.truncated} bytes of output lost]`);
    if (o < this.next) {
      // A replay overlapping what we have: keep only the new part.
      body = body.subarray(Math.min(body.length, this.next - o));
    } else if (o > this.next) this.next = o;
    if (!body.length) return;
    this.next += body.length;
    this.onData(body, this.next);
  }

  /** The consumer has handled output up to `offset`: acknowledged soon, at once past ackEveryBytes. */
  processed(offset: number): void {
    if (offset <= this.acked) return;
    const send = () => {
      this.ackTimer = null;
      if (offset > this.acked && this.conn.open) {
        this.acked = offset;
        this.conn.send(Destinations.shellAck(this.shellId), '', { offset: String(offset) });
      }
    };
    if (offset - this.acked >= SHELL_FLOW.ackEveryBytes / 2) {
      if (this.ackTimer) clearTimeout(this.ackTimer);
      send();
    } else if (!this.ackTimer) this.ackTimer = setTimeout(() => send(), ACK_IDLE_MS);
    else {
      clearTimeout(this.ackTimer);
      this.ackTimer = setTimeout(() => send(), ACK_IDLE_MS);
    }
  }

  write(data: Uint8Array | string): void {
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    for (let i = 0; i < buf.length; i += SHELL_INPUT_CHUNK_BYTES) {
      const chunk = buf.subarray(i, i + SHELL_INPUT_CHUNK_BYTES);
      if (!this.conn.open || !this.subId || !this.sendInput(chunk)) this.pendingInput.push(chunk);
    }
  }

  private sendInput(chunk: Uint8Array): boolean {
    const to = Destinations.shellInput(this.shellId);
    if (!this.confirmInput) return this.conn.send(to, chunk);
    const conn = this.conn;
    const sent = conn.sendConfirmed(to, chunk, () => {
      if (this.conn === conn) this.unconfirmed--;
    });
    if (sent) this.unconfirmed++;
    return sent;
  }

  /** Resolves once the socket has handed queued input to the kernel (for large stdin). */
  async drained(): Promise<void> {
    while (this.conn.open && this.conn.buffered > 1 << 20) await new Promise((r) => setTimeout(r, 5));
  }

  resize(cols: number, rows: number): void {
    if (this.conn.open)
      this.conn.send(Destinations.shellResize(this.shellId), JSON.stringify({ cols, rows }));
  }

  private async reconnect(err: CliError): Promise<void> {
    if (this.ended) return;
    if (this.conn.fatal) return this.finish(this.conn.fatal.key);
    this.subId = '';
    const lost = this.unconfirmed > 0;
    this.unconfirmed = 0;
    this.onNotice(`[connection lost (${err.key}); reconnecting]`);
    if (lost) this.onInputLost();
    const until = Date.now() + RECONNECT_FOR_MS;
    while (!this.ended && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 1000));
      const c = new StompConnection(this.ctx.cfg.url, this.ctx.cfg.key ?? '', this.applyId);
      try {
        await c.connect(5000);
        this.conn = c;
        this.acked = Math.min(this.acked, this.next);
        await this.attach();
        this.onNotice('[reconnected]');
        return;
      } catch (e) {
        if (c.fatal) return this.finish((e as CliError).key);
      }
    }
    this.finish('cli.network');
  }

  private finish(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.conn.close();
    this.onClosed(reason);
  }

  /** Closes the shell on the service (best effort) and the socket. */
  async close(): Promise<void> {
    const wasEnded = this.ended;
    this.ended = true;
    if (this.ackTimer) clearTimeout(this.ackTimer);
    if (!wasEnded)
      await this.ctx
        .call(unapplyShell, { applyId: this.applyId, clientId: this.shellId }, { applyId: this.applyId })
        .catch(() => {});
    this.conn.close();
  }
}
