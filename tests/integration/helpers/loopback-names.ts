// `*.localhost` on loopback for Node's clients, as browsers resolve it (RFC 6761 §6.3): the code window
// is served on `{label}.code.localhost` (src/server/desktop/code-hosts.ts), and the host's resolver
// (glibc without systemd-resolved) answers only `localhost` itself. Pass as `lookup` to http and ws;
// `fetch` takes no lookup, so loopbackGet stands in for it there.
import dns, { type LookupAddress } from 'node:dns';
import http from 'node:http';

type Callback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

export function loopbackLookup(hostname: string, options: dns.LookupOptions | Callback, cb?: Callback): void {
  const opts = typeof options === 'function' ? {} : options;
  const done = (typeof options === 'function' ? options : cb) as Callback;
  if (!/(^|\.)localhost\.?$/i.test(hostname)) {
    dns.lookup(hostname, { ...opts, all: opts.all ?? false } as dns.LookupAllOptions, done as never);
    return;
  }
  if (opts.all) done(null, [{ address: '127.0.0.1', family: 4 }]);
  else done(null, '127.0.0.1', 4);
}

export interface LoopbackAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A GET that follows no redirect, resolving `*.localhost` (where `fetch` cannot be told to). */
export function loopbackGet(url: string, headers: Record<string, string> = {}): Promise<LoopbackAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false, lookup: loopbackLookup }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}
