// Which peers may speak for the client: BIANBU_TRUSTED_PROXIES, a comma-separated list of addresses
// and CIDR ranges (IPv4 or IPv6). Only a request whose socket peer is in the list has its
// X-Forwarded-For, -Proto and -Host honoured (Fastify's trustProxy takes the list as is); from any
// other peer the socket address is the client and forwarded headers are ignored everywhere.
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

/** Fastify's `trustProxy` for the list: false (trust no one) when it is empty. */
export function trustProxyOption(list: readonly string[]): false | string[] {
  return list.length ? [...list] : false;
}
