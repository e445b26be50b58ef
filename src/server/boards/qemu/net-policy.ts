// Pure parts of a riscv64 board's network (issue 36): the host's default, which policy a board gets,
// and the nftables text that enforces it. The firewall (firewall.ts) runs this text; tests read it.
//
// The rules live in one table of the service's own, `inet bianbu_boards`, shared by every instance on
// the host (boards of several data directories never share a uid: uid-slots.ts). Its base chain hooks
// `output` and sends a socket's packets, by the socket owner's uid (`meta skuid`), into that board's
// chain through a verdict map. Only a board's network stack (passt, run as the board's uid in the
// host's network namespace) opens sockets as that uid, so the chain sees exactly what the guest sends
// out. Each board chain:
//
//   fib daddr type { local, broadcast, multicast }  reject   the host: loopback, its own addresses
//   (none)                                           reject   everything else too
//   (nat, allow list)  ip daddr != { … }             reject   anything not listed, per family
//
// `reject` rather than `drop`: the stack sees the refusal at once and the guest's connection fails
// instead of hanging for a TCP timeout. Each rule counts what it refused (`counter`), for tests and for
// an administrator reading `nft list table inet bianbu_boards`.
import fs from 'node:fs';
import {
  type Cidr,
  Egress,
  formatCidr,
  type NetworkPolicy,
  NetworkSource,
  parseCidr,
} from '#shared/board-network.ts';

export const NFT_TABLE = 'bianbu_boards';
/** The verdict map from a socket owner's uid to its board's chain. */
export const NFT_MAP = 'boards';

/** A board's chain in the table, by its host uid. */
export function boardChain(uid: number): string {
  return `b_${uid}`;
}

/** The uid a board chain's name stands for, or null for any other chain. */
export function chainUid(name: string): number | null {
  const m = /^b_(\d{1,10})$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** Whether /proc/net/route (IPv4) or /proc/net/ipv6_route (IPv6) has a default route. */
export function hasDefaultRoute(route4: string, route6: string): boolean {
  for (const line of route4.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // Iface Destination Gateway Flags RefCnt Use Metric Mask …: destination and mask 0, route up (RTF_UP).
    if (f.length >= 8 && f[1] === '00000000' && f[7] === '00000000' && (Number.parseInt(f[3], 16) & 1) === 1)
      return true;
  }
  for (const line of route6.split('\n')) {
    const f = line.trim().split(/\s+/);
    // dest dest_len src src_len next_hop metric refcnt use flags iface: ::/0, up, not the loopback.
    if (f.length < 10) continue;
    const up = (Number.parseInt(f[8], 16) & 1) === 1;
    if (/^0{32}$/.test(f[0]) && f[1] === '00' && up && f[9] !== 'lo') return true;
  }
  return false;
}

/** The host's default egress: `nat` when it has a route out, `none` when it has none. */
export function hostDefaultEgress(
  read: (file: string) => string = (f) => fs.readFileSync(f, 'utf8'),
): Egress {
  const text = (f: string) => {
    try {
      return read(f);
    } catch {
      return '';
    }
  };
  return hasDefaultRoute(text('/proc/net/route'), text('/proc/net/ipv6_route')) ? Egress.nat : Egress.none;
}

/** The policy a board gets, first found wins: the administrator's, the board's, the lab's, the host's. */
export function resolvePolicy(
  layers: { admin?: NetworkPolicy | null; board?: NetworkPolicy | null; lab?: NetworkPolicy | null },
  hostDefault: Egress,
): { policy: NetworkPolicy; source: NetworkSource } {
  if (layers.admin) return { policy: layers.admin, source: NetworkSource.admin };
  if (layers.board) return { policy: layers.board, source: NetworkSource.board };
  if (layers.lab) return { policy: layers.lab, source: NetworkSource.lab };
  return { policy: { egress: hostDefault, allow: [] }, source: NetworkSource.host };
}

const REJECT = 'counter reject with icmpx type admin-prohibited';

/** The rules of one board's chain (without the chain's header), one per line. */
export function boardRules(policy: NetworkPolicy): string[] {
  const rules = [`fib daddr type { local, broadcast, multicast } ${REJECT} comment "the host"`];
  if (policy.egress === Egress.none) {
    rules.push(`${REJECT} comment "egress none"`);
    return rules;
  }
  const allow = policy.allow.map((a) => parseCidr(a)).filter((c): c is Cidr => c !== null);
  if (!allow.length) return rules;
  for (const family of [4, 6] as const) {
    const set = [...new Set(allow.filter((c) => c.family === family).map(formatCidr))];
    const proto = family === 4 ? 'ip' : 'ip6';
    const nfproto = family === 4 ? 'ipv4' : 'ipv6';
    // A family the list does not name is refused whole (nft has no empty anonymous set).
    rules.push(
      set.length
        ? `meta nfproto ${nfproto} ${proto} daddr != { ${set.join(', ')} } ${REJECT} comment "allow list"`
        : `meta nfproto ${nfproto} ${REJECT} comment "allow list"`,
    );
  }
  return rules;
}

/** The table, its base chain and map: idempotent, safe to send before every change. */
export function tableText(): string {
  return [
    `add table inet ${NFT_TABLE}`,
    `add map inet ${NFT_TABLE} ${NFT_MAP} { type uid : verdict; }`,
    `add chain inet ${NFT_TABLE} output { type filter hook output priority 0; policy accept; }`,
    // The one rule of the base chain: added once (a flush first keeps it one rule however often sent).
    `flush chain inet ${NFT_TABLE} output`,
    `add rule inet ${NFT_TABLE} output meta skuid vmap @${NFT_MAP}`,
  ].join('\n');
}

/**
 * One nft transaction that gives `uid` the policy's chain: the chain made (or emptied), its rules, and
 * the map's entry to it. nft applies a file whole or not at all: there is no moment where the board's
 * packets pass unfiltered, nor half a policy.
 */
export function applyText(uid: number, policy: NetworkPolicy, hasEntry: boolean): string {
  const chain = boardChain(uid);
  return [
    tableText(),
    `add chain inet ${NFT_TABLE} ${chain}`,
    `flush chain inet ${NFT_TABLE} ${chain}`,
    ...boardRules(policy).map((r) => `add rule inet ${NFT_TABLE} ${chain} ${r}`),
    ...(hasEntry ? [] : [`add element inet ${NFT_TABLE} ${NFT_MAP} { ${uid} : jump ${chain} }`]),
    '',
  ].join('\n');
}

/** One transaction that removes a board's map entry and chain (those that exist). */
export function removeText(uid: number, has: { entry: boolean; chain: boolean }): string {
  const chain = boardChain(uid);
  return [
    ...(has.entry ? [`delete element inet ${NFT_TABLE} ${NFT_MAP} { ${uid} }`] : []),
    ...(has.chain ? [`delete chain inet ${NFT_TABLE} ${chain}`] : []),
    '',
  ].join('\n');
}
