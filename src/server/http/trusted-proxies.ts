// Which peers may speak for the client: BIANBU_TRUSTED_PROXIES, a comma-separated list of addresses
// and CIDR ranges (IPv4 or IPv6). Only a request whose socket peer is in the list has its
// X-Forwarded-For, -Proto and -Host honoured (Fastify's trustProxy takes the list as is); from any
// other peer the socket address is the client and forwarded headers are ignored everywhere.
//
// One predicate decides trust for HTTP (Fastify's trustProxy is given it) and for the realtime
// socket's upgrade request, which reaches the service before Fastify sees it: both name the same
// client and the same public host.
import type { IncomingMessage } from 'node:http';
import net from 'node:net';

/** The entries of the list, trimmed, empty ones dropped. */
function entriesOf(text: string): string[] {
  return text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
}

function validEntry(entry: string): boolean {
  const slash = entry.indexOf('/');
  if (slash === -1) return net.isIP(entry) !== 0;
  const address = entry.slice(0, slash);
  const bits = entry.slice(slash + 1);
  const family = net.isIP(address);
  if (family === 0 || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

/** The first entry that is neither an address nor a CIDR range, or undefined when all are. */
export function invalidProxyEntry(text: string): string | undefined {
  return entriesOf(text).find((e) => !validEntry(e));
}

/** The validated list (empty: no proxy is trusted). */
export function parseTrustedProxies(text: string): string[] {
  const bad = invalidProxyEntry(text);
  if (bad !== undefined) throw new Error(`"${bad}" is not an IP address or CIDR range`);
  return entriesOf(text);
}

/** An IPv4 address a dual-stack socket reports as `::ffff:a.b.c.d` is that IPv4 address. */
function plainAddress(address: string): string {
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return m ? m[1] : address;
}

/** Whether a peer address is one of the list's: a predicate built once per list. */
export type ProxyTrust = (address: string | undefined) => boolean;

export function proxyTrust(list: readonly string[]): ProxyTrust {
  if (list.length === 0) return () => false;
  const block = new net.BlockList();
  for (const entry of list) {
    const [given, bits] = entry.split('/');
    const address = plainAddress(given);
    const type = net.isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) block.addAddress(address, type);
    else block.addSubnet(address, Number(bits), type);
  }
  return (raw) => {
    if (!raw) return false;
    const address = plainAddress(raw.trim());
    const family = net.isIP(address);
    if (family === 0) return false;
    return block.check(address, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/** Fastify's `trustProxy` for the list: false (trust no one) when it is empty. */
export function trustProxyOption(
  list: readonly string[],
): false | ((address: string, hop: number) => boolean) {
  if (!list.length) return false;
  const trusted = proxyTrust(list);
  return (address) => trusted(address);
}

const lastEntry = (value: string) => value.slice(value.lastIndexOf(',') + 1).trim();
const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
};

/**
 * The client of a raw request, as Fastify's trust-aware `req.ip` names it: starting from the socket
 * peer, each trusted hop hands over to the address it forwarded for (X-Forwarded-For, read from the
 * right); the first address that is not a trusted proxy is the client.
 */
export function clientAddress(req: IncomingMessage, trusted: ProxyTrust): string {
  let client = req.socket.remoteAddress ?? '';
  if (!trusted(client)) return client;
  const hops = (header(req, 'x-forwarded-for') ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean)
    .reverse();
  for (const hop of hops) {
    client = hop;
    if (!trusted(hop)) break;
  }
  return client;
}

/**
 * The host the client asked for, as Fastify's `req.host` names it: from a trusted proxy its
 * X-Forwarded-Host (the last one, the proxy's own), from anyone else the Host header.
 */
export function publicHost(req: IncomingMessage, trusted: ProxyTrust): string | undefined {
  const forwarded = header(req, 'x-forwarded-host');
  if (forwarded && trusted(req.socket.remoteAddress)) return lastEntry(forwarded);
  return req.headers.host;
}
