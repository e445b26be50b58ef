// Board hosts in storage: their credentials (only a hash kept), revocation, which instance holds a
// live link to which host, and the instances hosts should dial. Every instance reads and writes the
// same tables, so any of them answers for any host.
import crypto from 'node:crypto';
import type { Storage } from '#server/db/client.ts';
import { conflict, notFound } from '#server/errors.ts';
import { type BoardHostDto, HOST_TOKEN_RE, HostErrorKey } from '#shared/board-hosts.ts';

/** A link not refreshed for this long is dead (its instance died or lost the host). */
export const LINK_STALE_MS = 8_000;
/** How often an instance refreshes its links and instance row. */
export const LINK_HEARTBEAT_MS = 2_000;

interface HostRow {
  id: string;
  name: string;
  token_hash: string;
  created_at: Date | string;
  revoked_at: Date | string | null;
  last_seen_at: Date | string | null;
  version: string | null;
  address: string | null;
}

const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());
const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

export class HostsRepo {
  constructor(private readonly db: Storage) {}

  /** A new host and its credential (shown once). */
  async create(name: string, createdBy: string | null): Promise<{ id: string; token: string }> {
    const [taken] = await this.db.query('select 1 from board_hosts where name = $1', [name]);
    if (taken) throw conflict(`A board host named ${name} exists`, HostErrorKey.exists);
    const id = crypto
      .randomBytes(9)
      .toString('base64url')
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '0')
      .slice(0, 12);
    const secret = crypto.randomBytes(32).toString('base64url');
    await this.db.query(
      'insert into board_hosts (id, name, token_hash, created_by) values ($1, $2, $3, $4)',
      [id, name, sha256(secret), createdBy],
    );
    return { id, token: `bbh_${id}_${secret}` };
  }

  /** The host a credential names, if it is valid and not revoked (constant-time comparison). */
  async authenticate(token: string): Promise<{ id: string; name: string } | { refused: string }> {
    const m = HOST_TOKEN_RE.exec(token);
    if (!m) return { refused: HostErrorKey.refused };
    const [r] = await this.db.query<HostRow>('select * from board_hosts where id = $1', [m[1]]);
    if (!r) return { refused: HostErrorKey.refused };
    const a = Buffer.from(r.token_hash, 'hex');
    const b = Buffer.from(sha256(m[2]), 'hex');
    if (a.length !== b.length || !crypto.timingSafeEqual(a, b)) return { refused: HostErrorKey.refused };
    if (r.revoked_at) return { refused: HostErrorKey.revoked };
    return { id: r.id, name: r.name };
  }

  async revoke(name: string): Promise<string> {
    const [r] = await this.db.query<{ id: string }>(
      'update board_hosts set revoked_at = coalesce(revoked_at, now()) where name = $1 returning id',
      [name],
    );
    if (!r) throw notFound(`No board host named ${name}`, HostErrorKey.unknown);
    await this.db.query('delete from board_host_links where host_id = $1', [r.id]);
    return r.id;
  }

  async isRevoked(id: string): Promise<boolean> {
    const [r] = await this.db.query<{ revoked: boolean }>(
      'select revoked_at is not null as revoked from board_hosts where id = $1',
      [id],
    );
    return !r || r.revoked;
  }

  async seen(id: string, version: string, address: string | null): Promise<void> {
    await this.db.query(
      'update board_hosts set last_seen_at = now(), version = $2, address = $3 where id = $1',
      [id, version, address],
    );
  }

  /**
   * This instance's links, refreshed, and its own row: every instance says it is alive (its flash
   * jobs are its own while it does); one with a URL is also an instance hosts dial.
   */
  async heartbeat(instanceId: string, hostIds: string[], url: string | null): Promise<void> {
    if (hostIds.length)
      await this.db.query(
        `insert into board_host_links (host_id, instance_id) select unnest($1::text[]), $2
         on conflict (host_id, instance_id) do update set seen_at = now()`,
        [hostIds, instanceId],
      );
    await this.db.query(
      `insert into service_instances (id, url) values ($1, $2)
       on conflict (id) do update set url = coalesce(excluded.url, service_instances.url), seen_at = now()`,
      [instanceId, url],
    );
  }

  /** Rows of instances that died without saying so (kill -9), long stale: nobody reads them any more. */
  async forgetDead(): Promise<void> {
    await this.db.query(`delete from board_host_links where seen_at < now() - interval '10 minutes'`);
    await this.db.query(`delete from service_instances where seen_at < now() - interval '10 minutes'`);
  }

  async linkUp(hostId: string, instanceId: string): Promise<void> {
    await this.heartbeat(instanceId, [hostId], null);
  }

  async linkDown(hostId: string, instanceId: string): Promise<void> {
    await this.db.query('delete from board_host_links where host_id = $1 and instance_id = $2', [
      hostId,
      instanceId,
    ]);
  }

  async instanceGone(instanceId: string): Promise<void> {
    await this.db.query('delete from board_host_links where instance_id = $1', [instanceId]);
    await this.db.query('delete from service_instances where id = $1', [instanceId]);
  }

  /** Instances alive now that hosts should hold links to. */
  async liveInstances(): Promise<{ id: string; url: string }[]> {
    return this.db.query<{ id: string; url: string }>(
      `select id, url from service_instances
        where url is not null and seen_at > now() - ($1::int * interval '1 millisecond') order by id`,
      [LINK_STALE_MS],
    );
  }

  /**
   * Boards of hosts that no instance holds a live link to (or that were revoked) and are not yet
   * shown offline: the caller marks them offline with the reason.
   */
  async orphanedBoards(): Promise<{ id: string; host: string; revoked: boolean }[]> {
    return this.db.query(
      `select b.id, h.name as host, h.revoked_at is not null as revoked
         from boards b join board_hosts h on h.id = b.host_id
        where b.retired_at is null and b.state not in ('offline', 'maintenance')
          and (h.revoked_at is not null or not exists (
                select 1 from board_host_links l
                 where l.host_id = h.id and l.seen_at > now() - ($1::int * interval '1 millisecond')))`,
      [LINK_STALE_MS],
    );
  }

  /** Which of `ids` already belong to a board that is not this host's (another host's, or the service's own). */
  async foreignBoards(hostId: string, ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const rows = await this.db.query<{ id: string }>(
      'select id from boards where id = any($1::text[]) and host_id is distinct from $2',
      [ids, hostId],
    );
    return rows.map((r) => r.id);
  }

  async idOf(name: string): Promise<string | null> {
    const [r] = await this.db.query<{ id: string }>('select id from board_hosts where name = $1', [name]);
    return r?.id ?? null;
  }

  async list(): Promise<BoardHostDto[]> {
    const hosts = await this.db.query<HostRow & { links: number }>(
      `select h.*, (select count(*)::int from board_host_links l where l.host_id = h.id
                     and l.seen_at > now() - ($1::int * interval '1 millisecond')) as links
         from board_hosts h order by h.name`,
      [LINK_STALE_MS],
    );
    const boards = await this.db.query<{ id: string; name: string; state: string; host_id: string }>(
      'select id, name, state, host_id from boards where host_id is not null and retired_at is null order by id',
    );
    return hosts.map((h) => ({
      id: h.id,
      name: h.name,
      createdAt: iso(h.created_at) as string,
      revokedAt: iso(h.revoked_at),
      lastSeenAt: iso(h.last_seen_at),
      version: h.version,
      address: h.address,
      links: h.links,
      health: h.revoked_at ? 'revoked' : h.links > 0 ? 'online' : h.last_seen_at ? 'offline' : 'never',
      boards: boards
        .filter((b) => b.host_id === h.id)
        .map((b) => ({ deviceId: b.id, name: b.name, state: b.state })),
    }));
  }

  async one(name: string): Promise<BoardHostDto> {
    const h = (await this.list()).find((x) => x.name === name);
    if (!h) throw notFound(`No board host named ${name}`, HostErrorKey.unknown);
    return h;
  }
}
