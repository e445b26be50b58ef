// Test helpers for shells: open one over HTTP, follow a shell subscription's output by offset, and
// acknowledge it the way the console does.
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { HOUR_MS } from '#shared/constants.ts';
import { Destinations } from '#shared/realtime.ts';
import type { StompFrame } from '#shared/stomp-codec.ts';
import type { TestStompClient } from './stomp-client.ts';
import type { TestUser } from './users.ts';

/** Leases a board for 48 hours (named `serverName`) and applies for it, through the lifecycle's calls. */
export async function leaseAndApply(
  app: FastifyInstance,
  user: TestUser,
  serverName: string,
): Promise<{ deviceId: string; applyId: string }> {
  const post = async (url: string, payload: object) =>
    (await app.inject({ method: 'POST', url, headers: user.headers, payload })).json();
  const requestDate = new Date(Date.now() + 48 * HOUR_MS).toISOString();
  const lease = await post('/api/device/request-device', { requestDate, filterReq: {}, serverName });
  expect(lease.code).toBe(20000);
  const apply = await post('/api/device/apply-device', { deviceId: lease.data.deviceId });
  expect(apply.code).toBe(20000);
  return { deviceId: lease.data.deviceId as string, applyId: apply.data.applyId as string };
}

export async function openShell(
  app: FastifyInstance,
  user: TestUser,
  applyId: string,
  shellType: 'login' | 'serial' = 'login',
): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/device/apply-device-shell',
    headers: { ...user.headers, applyaccess: applyId },
    payload: { applyId, shellType },
  });
  expect(res.json()).toMatchObject({ code: 20000 });
  return res.json().data.clientId as string;
}

/** Follows one shell subscription: checks offsets are contiguous, keeps the bytes, optionally acks. */
export class ShellFollower {
  chunks: Buffer[] = [];
  next: number;
  closedReason: string | null = null;
  private seen = 0;
  constructor(
    readonly c: TestStompClient,
    readonly subId: string,
    readonly shellId: string,
    from: number,
    private readonly autoAck: boolean,
  ) {
    this.next = from;
  }

  static async subscribe(
    c: TestStompClient,
    shellId: string,
    opts: { subId?: string; offset?: number; ack?: boolean } = {},
  ) {
    const subId = opts.subId ?? `s-${shellId.slice(0, 6)}`;
    const headers: Record<string, string> = {
      id: subId,
      destination: Destinations.shellOutput(shellId),
      receipt: `r-${subId}`,
    };
    if (opts.offset !== undefined) headers.offset = String(opts.offset);
    c.sendFrame('SUBSCRIBE', headers);
    await c.waitFor((f) => f.command === 'RECEIPT' && f.headers['receipt-id'] === `r-${subId}`);
    const f = new ShellFollower(c, subId, shellId, opts.offset ?? -1, opts.ack ?? true);
    f.pump();
    return f;
  }

  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }

  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /** Consumes frames received so far. */
  pump(): void {
    const frames = this.c.frames;
    for (; this.seen < frames.length; this.seen++) this.take(frames[this.seen]);
  }

  private take(f: StompFrame): void {
    if (f.command !== 'MESSAGE' || f.headers.subscription !== this.subId) return;
    if (f.headers.event === 'closed') {
      this.closedReason = f.headers.reason;
      return;
    }
    // Presence (joined shells) says who watches; it carries no output.
    if (f.headers.event === 'presence') return;
    if (f.headers.event) throw new Error(`subscription ${f.headers.event}: ${f.headers.error}`);
    const o = Number(f.headers.offset);
    if (this.next < 0) this.next = o;
    if (o !== this.next) throw new Error(`gap: expected offset ${this.next}, got ${o}`);
    this.chunks.push(Buffer.from(f.body));
    this.next = o + f.body.length;
    if (this.autoAck) this.ack();
  }

  ack(offset = this.next): void {
    this.c.sendFrame('SEND', { destination: Destinations.shellAck(this.shellId), offset: String(offset) });
  }

  input(text: string): void {
    this.c.sendFrame('SEND', { destination: Destinations.shellInput(this.shellId) }, text);
  }

  async until(pred: (text: string) => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.pump();
      if (pred(this.text)) return;
      if (Date.now() > deadline)
        throw new Error(`timed out; last output: ${JSON.stringify(this.text.slice(-300))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}
