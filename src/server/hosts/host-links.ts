// The board hosts' side of this instance (`app.hosts`): accepts their links at /api/host/link
// (a per-host credential, checked against storage; a revoked one is refused and its links end at
// once on every instance), takes the boards each declares (never another host's or the service's
// own), makes them reachable through RemoteDrivers, bridges the bus for the shells hosts keep, and
// shows a host's boards offline once no instance holds a live link to it.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import { applyAdminNetworkOnHost } from '#server/boards/lab-network.ts';
import type { BusMessage } from '#server/realtime/bus.ts';
import { CONTROL_CHANNEL } from '#server/shells/bus-protocol.ts';
import {
  HOST_LINK_PATH,
  type HostBoard,
  HostErrorKey,
  type HostHello,
  hostHello,
} from '#shared/board-hosts.ts';
import { BoardState } from '#shared/boards.ts';
import { HostsRepo, LINK_HEARTBEAT_MS } from './hosts.repo.ts';
import { type Header, Link } from './link.ts';
import { RemoteDriver } from './remote-driver.ts';

/** Where revocations travel between instances. */
const HOSTS_CHANNEL = 'hosts.ctl';
const HELLO_TIMEOUT_MS = 10_000;
export const LINK_PING_MS = 1_000;
export const LINK_DEAD_MS = 4_000;

interface HostLink {
  hostId: string;
  name: string;
  link: Link;
  drivers: RemoteDriver[];
  subs: Map<string, () => void>;
}

export class HostLinks {
  readonly repo: HostsRepo;
  private readonly links = new Map<string, HostLink>();
  private readonly wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 8 << 20,
  });
  private timer: NodeJS.Timeout | null = null;
  private offCtl: (() => void) | null = null;
  private sweeping = false;
  private ticks = 0;

  constructor(private readonly app: FastifyInstance) {
    this.repo = new HostsRepo(app.storage);
  }

  private get instanceId(): string {
    return this.app.bus.instanceId;
  }

  async start(): Promise<void> {
    this.app.server.on('upgrade', this.onUpgrade);
    this.offCtl = await this.app.bus.subscribe(HOSTS_CHANNEL, (m) => {
      if (m.h.t === 'revoke' && typeof m.h.hostId === 'string') this.drop(m.h.hostId, 'revoked');
    });
    this.timer = setInterval(() => void this.tick(), LINK_HEARTBEAT_MS);
    this.timer.unref();
    await this.tick();
  }

  async stop(): Promise<void> {
    this.app.server.off('upgrade', this.onUpgrade);
    if (this.timer) clearInterval(this.timer);
    this.offCtl?.();
    for (const l of [...this.links.values()]) l.link.close(1001, 'service stopping');
    await this.repo.instanceGone(this.instanceId).catch(() => {});
  }

  /** Hosts linked to this instance now (tests, the admin list). */
  linked(): string[] {
    return [...this.links.values()].map((l) => l.name);
  }

  /** Revokes a host: storage first (no new link is accepted), then every instance ends its links. */
  async revoke(name: string): Promise<void> {
    const id = await this.repo.revoke(name);
    this.drop(id, 'revoked');
    this.app.bus.publish(HOSTS_CHANNEL, { h: { t: 'revoke', hostId: id } });
    await this.markOrphansOffline();
  }

  private drop(hostId: string, why: string): void {
    const l = this.links.get(hostId);
    if (l) l.link.close(4403, `board host ${why}`);
  }

  /** Heartbeat of this instance's links and instance row, then boards of lost hosts offline. */
  private async tick(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      await this.repo.heartbeat(
        this.instanceId,
        [...this.links.keys()],
        this.app.config.BIANBU_INSTANCE_URL ?? null,
      );
      await this.markOrphansOffline();
      if (this.ticks++ % 150 === 0) await this.repo.forgetDead();
    } catch (err) {
      this.app.log.warn({ err: (err as Error).message }, 'board hosts: heartbeat failed');
    } finally {
      this.sweeping = false;
    }
  }

  private async markOrphansOffline(): Promise<void> {
    for (const b of await this.repo.orphanedBoards()) {
      if (this.app.boards.driverIfAny(b.id)) continue;
      await this.app.boards
        .transition(
          b.id,
          null,
          BoardState.offline,
          b.revoked ? `board host ${b.host} revoked` : `board host ${b.host} disconnected`,
        )
        .catch(() => {});
    }
  }

  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== HOST_LINK_PATH) return;
    const auth = String(req.headers.authorization ?? '');
    const token = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
    this.repo.authenticate(token).then(
      (who) => {
        if ('refused' in who) {
          this.app.log.warn({ key: who.refused, address: req.socket.remoteAddress }, 'board host refused');
          socket.end(
            `HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nX-Bianbu-Key: ${who.refused}\r\nContent-Length: 0\r\n\r\n`,
          );
          return;
        }
        this.wss.handleUpgrade(req, socket, head, (ws) => {
          const link = new Link(ws, 'service', { call: (m, a) => this.onCall(who.id, who.name, m, a) });
          void this.welcome(link, who.id, who.name, req.socket.remoteAddress ?? null);
        });
      },
      () => socket.destroy(),
    );
  };

  /** Waits for the host's hello, takes its boards, and answers where else it should link. */
  private async welcome(link: Link, hostId: string, name: string, address: string | null): Promise<void> {
    link.event('who', { name, instanceId: this.instanceId });
    const hello = await new Promise<HostHello | string>((resolve) => {
      const t = setTimeout(() => resolve('no hello in time'), HELLO_TIMEOUT_MS);
      link.onClose(() => resolve('closed'));
      link.onEvent((h) => {
        if (h.e !== 'hello') return;
        clearTimeout(t);
        const p = hostHello.safeParse(h.hello);
        resolve(p.success ? p.data : `bad hello: ${p.error.issues[0]?.message}`);
      });
    });
    const refuse = (key: string, msg: string) => {
      this.app.log.warn({ host: name, key, msg }, 'board host refused');
      link.event('refused', { key, msg });
      link.close(4403, key);
    };
    if (typeof hello === 'string') return refuse(HostErrorKey.badHello, hello);
    if (hello.name !== name)
      return refuse(HostErrorKey.refused, `this credential is host ${name}'s, not ${hello.name}'s`);
    const ids = hello.boards.map((b) => b.declaration.id);
    if (new Set(ids).size !== ids.length)
      return refuse(HostErrorKey.badHello, 'a board id is declared twice');
    const foreign = await this.repo.foreignBoards(hostId, ids);
    if (foreign.length)
      return refuse(HostErrorKey.boardTaken, `boards owned elsewhere: ${foreign.slice(0, 10).join(', ')}`);
    if (await this.repo.isRevoked(hostId)) return refuse(HostErrorKey.revoked, 'revoked');
    for (const b of hello.boards) await this.declare(hostId, b);

    // One link per host on an instance: a newer one (a reconnect after a partition) replaces the older.
    this.links.get(hostId)?.link.close(4000, 'replaced by a newer link');
    this.app.boards.hostNames.set(hostId, name);
    const entry: HostLink = { hostId, name, link, drivers: [], subs: new Map() };
    this.links.set(hostId, entry);
    link.keepAlive(LINK_PING_MS, LINK_DEAD_MS);
    link.onEvent((h, data) => this.onEvent(entry, h, data));
    link.onClose((reason) => void this.lost(entry, reason));
    await this.repo.linkUp(hostId, this.instanceId);
    await this.repo.seen(hostId, hello.version, address);
    link.event('welcome', {
      welcome: { instanceId: this.instanceId, instances: await this.repo.liveInstances() },
    });
    for (const b of hello.boards) {
      const d = new RemoteDriver(b.declaration.id, name, link, b);
      entry.drivers.push(d);
      await this.app.boards.attachRemote(d);
      // An administrator's network for a riscv64 board outlives its host's restarts.
      await applyAdminNetworkOnHost(this.app.storage, d).catch((err: Error) =>
        this.app.log.warn({ host: name, boardId: d.boardId, err: err.message }, 'board network not applied'),
      );
    }
    this.app.log.info({ host: name, boards: ids.length, address }, 'board host linked');
  }

  /** A host's board in storage: new ones are added as the host's; its own ones follow its lab file. */
  private async declare(hostId: string, b: HostBoard): Promise<void> {
    const d = b.declaration;
    const rows = await this.app.storage.query<{ inserted: boolean }>(
      `insert into boards (id, name, model, attributes, driver, driver_options, source, host_id)
       values ($1, $2, $3, $4::jsonb, $5, $6::jsonb, 'host', $7)
       on conflict (id) do update set name = excluded.name, model = excluded.model,
         attributes = boards.attributes || excluded.attributes, driver = excluded.driver,
         driver_options = excluded.driver_options, retired_at = null, updated_at = now()
       where boards.host_id = excluded.host_id
       returning (xmax = 0) as inserted`,
      [d.id, d.name, d.model, JSON.stringify(d.attributes), d.driver, JSON.stringify(d.options), hostId],
    );
    if (rows[0]?.inserted)
      await this.app.storage.query(
        `insert into board_events (board_id, kind, from_state, to_state, reason) values ($1, 'added', null, 'idle', 'board host')`,
        [d.id],
      );
  }

  private async lost(entry: HostLink, reason: string): Promise<void> {
    for (const off of entry.subs.values()) off();
    entry.subs.clear();
    for (const d of entry.drivers) this.app.boards.detachRemote(d);
    if (this.links.get(entry.hostId) === entry) {
      this.links.delete(entry.hostId);
      await this.repo.linkDown(entry.hostId, this.instanceId).catch(() => {});
    }
    this.app.log.warn({ host: entry.name, reason }, 'board host link ended');
    await this.markOrphansOffline().catch(() => {});
  }

  /**
   * What a host may do on the bus: listen to the control channel and to the input of the shells it
   * keeps (ids `<name>_…`), and publish their output. Nothing else: a host never reads another
   * host's shells or speaks for the service.
   */
  private mayListen(name: string, ch: string): boolean {
    return ch === CONTROL_CHANNEL || (ch.startsWith(`shell.${name}_`) && ch.endsWith('.in'));
  }

  private mayPublish(name: string, ch: string): boolean {
    return ch.startsWith(`shell.${name}_`) && ch.endsWith('.out');
  }

  private async onCall(hostId: string, name: string, m: string, a: unknown[]): Promise<unknown> {
    const entry = this.links.get(hostId);
    const ch = String(a[0] ?? '');
    if (m === 'bus.sub') {
      if (!entry || !this.mayListen(name, ch))
        throw Object.assign(new Error(`may not listen to ${ch}`), { key: HostErrorKey.refused });
      if (!entry.subs.has(ch)) {
        const link = entry.link;
        const off = await this.app.bus.subscribe(ch, (msg: BusMessage) =>
          link.event('msg', { ch, h: msg.h }, msg.data),
        );
        entry.subs.set(ch, off);
      }
      return true;
    }
    if (m === 'bus.unsub') {
      entry?.subs.get(ch)?.();
      entry?.subs.delete(ch);
      return true;
    }
    if (m === 'bus.reach') {
      if (!this.mayPublish(name, ch) && !(ch.startsWith(`shell.${name}_`) && ch.endsWith('.in')))
        throw Object.assign(new Error(`may not publish on ${ch}`), { key: HostErrorKey.refused });
      return this.app.bus.publishReach(ch, { h: (a[1] ?? {}) as Record<string, unknown> });
    }
    throw Object.assign(new Error(`unknown call ${m}`), { key: 'capability.unsupported' });
  }

  private onEvent(entry: HostLink, h: Header, data: Buffer): void {
    if (h.e === 'pub' && typeof h.ch === 'string') {
      if (!this.mayPublish(entry.name, h.ch)) return;
      this.app.bus.publish(h.ch, {
        h: (h.h ?? {}) as Record<string, unknown>,
        ...(data.length ? { data } : {}),
      });
      return;
    }
    if (h.e === 'facts' && typeof h.board === 'string' && entry.drivers.some((d) => d.boardId === h.board)) {
      const facts = (h.facts ?? {}) as Record<string, string | number>;
      void this.app.boards.recordFacts(h.board, facts);
    }
  }
}
