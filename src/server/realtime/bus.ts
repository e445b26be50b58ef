// The bus carries realtime traffic between instances: shell input, output and acknowledgements
// (channels keyed by shell id), board state, user notifications and control broadcasts. In one
// process it is a synchronous in-process dispatcher; with REDIS_URL it is Redis pub/sub, so any
// instance delivers what any other publishes.
//
// Delivery order is the publisher's order for each channel. The Redis bus also delivers a message
// to subscribers in its own process directly (no round trip through Redis) and drops the copy that
// comes back, so one instance with Redis is as fast as one without it.
import crypto from 'node:crypto';
import { Redis } from 'ioredis';

export interface BusMessage {
  /** Small JSON-able header: message type and fields. */
  h: Record<string, unknown>;
  /** Optional raw bytes (shell output, input). */
  data?: Buffer;
}

export type BusHandler = (msg: BusMessage) => void;

/** What a bus holds in this process: channels with a handler, and handlers (tests, metrics). */
export interface BusStats {
  channels: number;
  handlers: number;
}

export interface Bus {
  readonly kind: 'memory' | 'redis' | 'link';
  /** Unique per process: tells instances apart in logs and control messages. */
  readonly instanceId: string;
  publish(channel: string, msg: BusMessage): void;
  /**
   * Publishes as `publish` does, and answers how many subscriptions it reached: this process's
   * handlers, and with Redis every instance subscribed to the channel (this one included). 0 means
   * nobody listens, so a request sent this way will get no answer; -1 that the count is unknown.
   */
  publishReach(channel: string, msg: BusMessage): Promise<number>;
  /** Resolves once messages published after it are guaranteed to arrive. */
  subscribe(channel: string, handler: BusHandler): Promise<() => void>;
  stats(): BusStats;
  close(): Promise<void>;
}

class Registry {
  private readonly handlers = new Map<string, Set<BusHandler>>();

  add(channel: string, handler: BusHandler): boolean {
    let set = this.handlers.get(channel);
    const first = !set;
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(handler);
    return first;
  }

  /** True when the channel has no handler left. */
  remove(channel: string, handler: BusHandler): boolean {
    const set = this.handlers.get(channel);
    if (!set) return false;
    set.delete(handler);
    if (set.size === 0) {
      this.handlers.delete(channel);
      return true;
    }
    return false;
  }

  /** Handlers on one channel. */
  count(channel: string): number {
    return this.handlers.get(channel)?.size ?? 0;
  }

  stats(): BusStats {
    let handlers = 0;
    for (const set of this.handlers.values()) handlers += set.size;
    return { channels: this.handlers.size, handlers };
  }

  deliver(channel: string, msg: BusMessage, log: (err: unknown) => void): void {
    const set = this.handlers.get(channel);
    if (!set) return;
    // A handler may unsubscribe (itself or another) while we iterate: iterate over a copy when needed.
    for (const h of set.size === 1 ? set : [...set]) {
      try {
        h(msg);
      } catch (err) {
        log(err);
      }
    }
  }

  clear(): void {
    this.handlers.clear();
  }
}

export class MemoryBus implements Bus {
  readonly kind = 'memory' as const;
  readonly instanceId = crypto.randomUUID();
  private readonly reg = new Registry();

  constructor(private readonly onError: (err: unknown) => void = () => {}) {}

  publish(channel: string, msg: BusMessage): void {
    this.reg.deliver(channel, msg, this.onError);
  }

  publishReach(channel: string, msg: BusMessage): Promise<number> {
    const n = this.reg.count(channel);
    this.reg.deliver(channel, msg, this.onError);
    return Promise.resolve(n);
  }

  async subscribe(channel: string, handler: BusHandler): Promise<() => void> {
    this.reg.add(channel, handler);
    return () => void this.reg.remove(channel, handler);
  }

  stats(): BusStats {
    return this.reg.stats();
  }

  async close(): Promise<void> {
    this.reg.clear();
  }
}

const PREFIX = 'bianbu:rt:';

/** Encodes a message as [u32 header length][header JSON][data]. */
export function encodeBusMessage(origin: string, msg: BusMessage): Buffer {
  const head = Buffer.from(JSON.stringify({ o: origin, h: msg.h }));
  const out = Buffer.allocUnsafe(4 + head.length + (msg.data?.length ?? 0));
  out.writeUInt32BE(head.length, 0);
  head.copy(out, 4);
  if (msg.data) msg.data.copy(out, 4 + head.length);
  return out;
}

export function decodeBusMessage(buf: Buffer): { origin: string; msg: BusMessage } {
  const n = buf.readUInt32BE(0);
  const parsed = JSON.parse(buf.subarray(4, 4 + n).toString('utf8')) as {
    o: string;
    h: Record<string, unknown>;
  };
  const data = buf.length > 4 + n ? buf.subarray(4 + n) : undefined;
  return { origin: parsed.o, msg: { h: parsed.h, data } };
}

export class RedisBus implements Bus {
  readonly kind = 'redis' as const;
  readonly instanceId = crypto.randomUUID();
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly reg = new Registry();
  /** Channels with a SUBSCRIBE sent or confirmed, and the promise of its confirmation. */
  private readonly subscribed = new Map<string, Promise<unknown>>();

  constructor(
    url: string,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    const opts = { maxRetriesPerRequest: null, enableAutoPipelining: true, lazyConnect: false } as const;
    this.pub = new Redis(url, opts);
    this.sub = new Redis(url, opts);
    this.pub.on('error', onError);
    this.sub.on('error', onError);
    this.sub.on('messageBuffer', (channelBuf: Buffer, payload: Buffer) => {
      let decoded: { origin: string; msg: BusMessage };
      try {
        decoded = decodeBusMessage(payload);
      } catch (err) {
        onError(err);
        return;
      }
      // Our own messages were delivered locally when published.
      if (decoded.origin === this.instanceId) return;
      this.reg.deliver(channelBuf.toString('utf8').slice(PREFIX.length), decoded.msg, onError);
    });
  }

  /** Waits for both connections (startup fails fast with a clear error when Redis is unreachable). */
  async ready(timeoutMs = 5000): Promise<void> {
    const wait = (r: Redis) =>
      r.status === 'ready'
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            const t = setTimeout(
              () => reject(new Error(`Redis not reachable within ${timeoutMs} ms`)),
              timeoutMs,
            );
            r.once('ready', () => {
              clearTimeout(t);
              resolve();
            });
          });
    await Promise.all([wait(this.pub), wait(this.sub)]);
  }

  publish(channel: string, msg: BusMessage): void {
    this.reg.deliver(channel, msg, this.onError);
    this.pub.publish(PREFIX + channel, encodeBusMessage(this.instanceId, msg)).catch(this.onError);
  }

  publishReach(channel: string, msg: BusMessage): Promise<number> {
    const local = this.reg.count(channel);
    this.reg.deliver(channel, msg, this.onError);
    // Redis counts the connections subscribed to the channel, this instance's among them.
    return this.pub.publish(PREFIX + channel, encodeBusMessage(this.instanceId, msg)).then(
      (n) => Math.max(n, local),
      (err) => {
        this.onError(err);
        return -1;
      },
    );
  }

  async subscribe(channel: string, handler: BusHandler): Promise<() => void> {
    this.reg.add(channel, handler);
    let confirmed = this.subscribed.get(channel);
    if (!confirmed) {
      confirmed = this.sub.subscribe(PREFIX + channel);
      this.subscribed.set(channel, confirmed);
    }
    await confirmed;
    return () => {
      if (this.reg.remove(channel, handler)) {
        this.subscribed.delete(channel);
        this.sub.unsubscribe(PREFIX + channel).catch(this.onError);
      }
    };
  }

  /** Channels subscribed in Redis match the local registry's: one SUBSCRIBE per channel with a handler. */
  stats(): BusStats & { redisChannels: number } {
    return { ...this.reg.stats(), redisChannels: this.subscribed.size };
  }

  async close(): Promise<void> {
    this.reg.clear();
    this.subscribed.clear();
    await Promise.allSettled([this.pub.quit(), this.sub.quit()]);
  }
}
