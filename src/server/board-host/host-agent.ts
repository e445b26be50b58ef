// A board host's links to the service (issue 37, docs/board-hosts.md). It dials the service's URL
// with its credential, learns its name, says which boards it runs, and then holds a link to every
// instance the service names, so any instance reaches any of its boards directly. Links that die
// are dialled again (backoff up to 5 s); the shells this host keeps stay, and move their bus traffic
// to another link (host-bus.ts). No inbound port is needed: a host behind NAT joins the farm.
import fs from 'node:fs';
import { WebSocket } from 'ws';
import type { CallHandler, StreamHandler } from '#server/hosts/link.ts';
import { Link } from '#server/hosts/link.ts';
import { HOST_LINK_PATH, type HostBoard, type HostHello, hostWelcome } from '#shared/board-hosts.ts';
import type { HostBus } from './host-bus.ts';

export const HOST_LINK_PING_MS = 1_000;
export const HOST_LINK_DEAD_MS = 4_000;

export interface AgentLog {
  info(o: Record<string, unknown>, msg: string): void;
  warn(o: Record<string, unknown>, msg: string): void;
}

export interface AgentOptions {
  serviceUrl: string;
  token: string;
  /** PEM of the CA (or the certificate itself) the service's TLS certificate must chain to. */
  ca?: string;
  version: string;
  bus: HostBus;
  log: AgentLog;
  /** Called once with the host's name, the first time a link learns it: the boards, started. */
  boards(name: string): Promise<HostBoard[]>;
  call: CallHandler;
  stream: StreamHandler;
  /** Where the instances the service names are remembered across restarts. */
  known?: { load(): string[]; save(urls: string[]): void };
}

/** ws:// and http:// only to this machine, or with BIANBU_HOST_INSECURE: a host's link is encrypted. */
export function linkUrl(serviceUrl: string, insecure: boolean): string {
  const u = new URL(serviceUrl);
  const tls = u.protocol === 'https:' || u.protocol === 'wss:';
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);
  if (!tls && !loopback && !insecure)
    throw new Error(
      `BIANBU_SERVICE_URL=${serviceUrl}: a board host's link must be TLS (https://) unless the service is on this machine (set BIANBU_HOST_INSECURE=1 to allow it)`,
    );
  u.protocol = tls ? 'wss:' : 'ws:';
  u.pathname = HOST_LINK_PATH;
  u.search = '';
  return u.toString();
}

export class HostAgent {
  private name: string | null = null;
  private boards: Promise<HostBoard[]> | null = null;
  /** Live links by instance id. */
  private readonly links = new Map<string, Link>();
  /** URLs being dialled (the service's, and each instance's). */
  private readonly dialling = new Set<string>();
  private stopped = false;
  private refusedKey: string | null = null;
  readonly ready: Promise<void>;
  private markReady!: () => void;
  private readonly insecure: boolean;

  constructor(private readonly o: AgentOptions & { insecure?: boolean }) {
    this.insecure = !!o.insecure;
    this.ready = new Promise((r) => {
      this.markReady = r;
    });
  }

  start(): void {
    this.dial(linkUrl(this.o.serviceUrl, this.insecure), true);
    // The instances the service named last time: a host restarting while the service's URL is down
    // still reaches the others.
    for (const url of this.o.known?.load() ?? []) {
      try {
        this.dial(linkUrl(url, this.insecure), false);
      } catch {}
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const l of this.links.values()) l.close(1001, 'board host stopping');
    this.links.clear();
    await this.o.bus.use(null);
  }

  /** Instances this host is linked to now. */
  linkedInstances(): string[] {
    return [...this.links.keys()];
  }

  /** Sends an event on one live link (any instance records what it says in storage). */
  event(e: string, fields: Record<string, unknown>): void {
    const l = this.o.bus.link ?? this.links.values().next().value;
    l?.event(e, fields);
  }

  private dial(url: string, always: boolean): void {
    if (this.dialling.has(url) || this.stopped) return;
    this.dialling.add(url);
    let failures = 0;
    const once = async (): Promise<void> => {
      while (!this.stopped) {
        const outcome = await this.connect(url);
        if (this.stopped) break;
        if (outcome === 'duplicate' && !always) break;
        failures = outcome === 'ended' ? 0 : failures + 1;
        // An instance that is gone (not the service's own URL) is forgotten after a few tries; the
        // service names it again if it comes back.
        if (!always && failures >= 5) break;
        await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** Math.min(failures, 5))));
      }
      this.dialling.delete(url);
    };
    void once();
  }

  /** One link's life: resolves when it ends ('ended'), could not start ('failed'), or was a duplicate. */
  private connect(url: string): Promise<'ended' | 'failed' | 'duplicate'> {
    return new Promise((resolve) => {
      const ws = new WebSocket(url, {
        headers: { authorization: `Bearer ${this.o.token}` },
        ...(this.o.ca ? { ca: this.o.ca } : {}),
        perMessageDeflate: false,
        handshakeTimeout: 5000,
        maxPayload: 8 << 20,
      });
      let settled = false;
      const done = (v: 'ended' | 'failed' | 'duplicate') => {
        if (!settled) {
          settled = true;
          resolve(v);
        }
      };
      ws.on('unexpected-response', (_req, res) => {
        const key = String(res.headers['x-bianbu-key'] ?? `HTTP ${res.statusCode}`);
        if (this.refusedKey !== key) this.o.log.warn({ url, key }, 'the service refused this board host');
        this.refusedKey = key;
        ws.terminate();
        done('failed');
      });
      ws.on('error', (err) => {
        if (!settled) this.o.log.warn({ url, err: err.message }, 'board host link failed');
        done('failed');
      });
      ws.on('open', () => {
        this.refusedKey = null;
        const link = new Link(ws, 'host', { call: this.o.call, stream: this.o.stream });
        link.keepAlive(HOST_LINK_PING_MS, HOST_LINK_DEAD_MS);
        link.onClose(() => done('ended'));
        void this.handshake(link).then(
          (r) => {
            if (r === 'duplicate') {
              link.close(1000, 'duplicate link');
              done('duplicate');
            }
          },
          (err: Error) => {
            this.o.log.warn({ url, err: err.message }, 'board host link refused');
            link.close(1000, 'handshake failed');
            done('failed');
          },
        );
      });
    });
  }

  private async handshake(link: Link): Promise<'linked' | 'duplicate'> {
    const who = await waitEvent(link, 'who');
    const name = String(who.name ?? '');
    const instanceId = String(who.instanceId ?? '');
    if (this.name !== null && this.name !== name)
      throw new Error(`the service calls this host ${name}, not ${this.name}`);
    this.name = name;
    if (this.links.has(instanceId)) return 'duplicate';
    this.boards ??= this.o.boards(name);
    const hello: HostHello = { name, version: this.o.version, boards: await this.boards };
    link.event('hello', { hello });
    const answer = await Promise.race([waitEvent(link, 'welcome'), waitEvent(link, 'refused')]);
    if (answer.e === 'refused') throw new Error(`${answer.key}: ${answer.msg}`);
    const welcome = hostWelcome.parse(answer.welcome);
    if (this.links.has(instanceId)) return 'duplicate';
    this.links.set(instanceId, link);
    link.onClose((reason) => {
      if (this.links.get(instanceId) === link) this.links.delete(instanceId);
      this.o.log.warn({ instance: instanceId, reason }, 'link to a service instance ended');
      if (this.o.bus.link === link) void this.o.bus.use(this.links.values().next().value ?? null);
    });
    if (!this.o.bus.link) await this.o.bus.use(link);
    this.o.log.info({ instance: instanceId, boards: hello.boards.length }, 'linked to a service instance');
    this.o.known?.save(welcome.instances.map((i) => i.url));
    for (const i of welcome.instances) {
      if (this.links.has(i.id)) continue;
      try {
        this.dial(linkUrl(i.url, this.insecure), false);
      } catch (err) {
        this.o.log.warn({ url: i.url, err: (err as Error).message }, 'an instance this host cannot link to');
      }
    }
    this.markReady();
    return 'linked';
  }
}

function waitEvent(link: Link, e: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const off = link.onEvent((h) => {
      if (h.e === e) {
        off();
        resolve(h);
      }
    });
    link.onClose((reason) => reject(new Error(reason)));
  });
}

export function readCa(file: string | undefined): string | undefined {
  return file ? fs.readFileSync(file, 'utf8') : undefined;
}

/** The instances' URLs in a file of the host's data dir (written atomically). */
export function knownInstances(file: string): { load(): string[]; save(urls: string[]): void } {
  return {
    load: () => {
      try {
        const v = JSON.parse(fs.readFileSync(file, 'utf8'));
        return Array.isArray(v) ? v.filter((u): u is string => typeof u === 'string').slice(0, 64) : [];
      } catch {
        return [];
      }
    },
    save: (urls) => {
      const tmp = `${file}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(urls), { mode: 0o600 });
      fs.renameSync(tmp, file);
    },
  };
}
