// The bus as a board host sees it: the service's bus (Redis across instances) reached over one of
// the host's links. The shells the host keeps (src/server/shells/session.ts) speak their usual
// protocol on it, so any instance's consoles reach them; when the link carrying the subscriptions
// dies, another link takes them over and the consoles attach again from their offsets, losing nothing.
import crypto from 'node:crypto';
import type { Link } from '#server/hosts/link.ts';
import type { Bus, BusHandler, BusMessage, BusStats } from '#server/realtime/bus.ts';

export class HostBus implements Bus {
  readonly kind = 'link' as const;
  readonly instanceId = crypto.randomUUID();
  private readonly handlers = new Map<string, Set<BusHandler>>();
  private primary: Link | null = null;
  private offEvent: (() => void) | null = null;

  /** The link subscriptions and publications go through now (null: none is up). */
  get link(): Link | null {
    return this.primary;
  }

  /** Moves everything to `link` (or to nothing), subscribing again there to every channel held. */
  async use(link: Link | null): Promise<void> {
    if (link === this.primary) return;
    this.offEvent?.();
    this.offEvent = null;
    this.primary = link;
    if (!link) return;
    this.offEvent = link.onEvent((h, data) => {
      if (h.e !== 'msg' || typeof h.ch !== 'string' || link !== this.primary) return;
      const set = this.handlers.get(h.ch);
      if (!set) return;
      const msg: BusMessage = { h: (h.h ?? {}) as Record<string, unknown>, ...(data.length ? { data } : {}) };
      for (const fn of [...set]) fn(msg);
    });
    await Promise.all([...this.handlers.keys()].map((ch) => link.call('bus.sub', [ch]).catch(() => {})));
  }

  publish(channel: string, msg: BusMessage): void {
    this.primary?.event('pub', { ch: channel, h: msg.h }, msg.data);
  }

  async publishReach(channel: string, msg: BusMessage): Promise<number> {
    const link = this.primary;
    if (!link) return 0;
    return link.call<number>('bus.reach', [channel, msg.h]).catch(() => -1);
  }

  async subscribe(channel: string, handler: BusHandler): Promise<() => void> {
    let set = this.handlers.get(channel);
    const first = !set;
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(handler);
    if (first && this.primary) await this.primary.call('bus.sub', [channel]).catch(() => {});
    return () => {
      const s = this.handlers.get(channel);
      if (!s) return;
      s.delete(handler);
      if (s.size === 0) {
        this.handlers.delete(channel);
        this.primary?.call('bus.unsub', [channel]).catch(() => {});
      }
    };
  }

  stats(): BusStats {
    let handlers = 0;
    for (const s of this.handlers.values()) handlers += s.size;
    return { channels: this.handlers.size, handlers };
  }

  async close(): Promise<void> {
    await this.use(null);
    this.handlers.clear();
  }
}
