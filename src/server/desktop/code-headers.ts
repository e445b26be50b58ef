// Headers across the /code/ proxy. The board is hostile: what it answers may only act on its own path
// (/code/{applyId}/{key}/) of the code origin. Its cookies are moved under that path; its redirects
// must stay inside it, and so must the scope its service worker may claim; headers that act on the
// whole host (HSTS, Clear-Site-Data, CORS grants, Alt-Svc) are dropped; and every answer carries our CSP, so
// only the console (and the board's own pages) may frame it. Towards the board, hop-by-hop headers and
// our own cookie are removed.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { CODE_COOKIE } from '#shared/desktop.ts';

/** RFC 9110 7.6.1 connection-specific headers, plus the historical ones proxies still see. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Board answer headers that would act beyond the board's path, or on the console's host. */
const DROPPED_FROM_BOARD = new Set([
  'strict-transport-security',
  'public-key-pins',
  'public-key-pins-report-only',
  'clear-site-data',
  'alt-svc',
  'set-cookie2',
  'content-security-policy-report-only',
]);

function connectionListed(headers: IncomingHttpHeaders): Set<string> {
  const c = headers.connection;
  const list = (Array.isArray(c) ? c.join(',') : (c ?? '')).split(',');
  return new Set(list.map((v) => v.trim().toLowerCase()).filter(Boolean));
}

/** The request headers the board gets: no hop-by-hop ones, no forwarding claims of the client, no CODE_COOKIE. */
export function headersToBoard(
  headers: IncomingHttpHeaders,
  forwarded: { proto: string; host: string; prefix: string },
): OutgoingHttpHeaders {
  const listed = connectionListed(headers);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    if (name.startsWith('x-forwarded-') || name === 'forwarded' || name === 'x-real-ip') continue;
    if (name === 'cookie') {
      const kept = withoutCookie(Array.isArray(value) ? value.join('; ') : value, CODE_COOKIE);
      if (kept) out.cookie = kept;
      continue;
    }
    out[name] = value;
  }
  out['x-forwarded-proto'] = forwarded.proto;
  out['x-forwarded-host'] = forwarded.host;
  out['x-forwarded-prefix'] = forwarded.prefix;
  return out;
}

/** A Cookie header without the pairs named `name`. */
export function withoutCookie(header: string, name: string): string {
  return header
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p && p.slice(0, p.indexOf('=') < 0 ? p.length : p.indexOf('=')).trim() !== name)
    .join('; ');
}

/** Every value of the cookie `name` in a Cookie header, in the header's order. */
export function cookieValues(header: string | undefined, name: string): string[] {
  const out: string[] = [];
  for (const p of (header ?? '').split(';')) {
    const i = p.indexOf('=');
    if (i > 0 && p.slice(0, i).trim() === name) out.push(p.slice(i + 1).trim());
  }
  return out;
}

/** Our cookie's value in a Cookie header, or null. */
export function cookieValue(header: string | undefined, name: string): string | null {
  for (const p of (header ?? '').split(';')) {
    const i = p.indexOf('=');
    if (i > 0 && p.slice(0, i).trim() === name) return p.slice(i + 1).trim();
  }
  return null;
}

const SAFE_PATH = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/;

/**
 * A board's Set-Cookie moved under `prefix` (which ends without a slash): Domain dropped (host-only),
 * Path prefixed, our cookie's name and `__Host-` names refused (null). Other attributes stay.
 */
export function scopeSetCookie(value: string, prefix: string): string | null {
  const [pair, ...attrs] = value.split(';');
  const eq = pair.indexOf('=');
  const name = (eq < 0 ? '' : pair.slice(0, eq)).trim();
  if (!name || name === CODE_COOKIE || name.toLowerCase().startsWith('__host-')) return null;
  let path = '/';
  const kept: string[] = [];
  for (const a of attrs) {
    const t = a.trim();
    if (!t) continue;
    const k = t.split('=')[0].trim().toLowerCase();
    if (k === 'domain') continue;
    if (k === 'path') {
      const p = t.slice(t.indexOf('=') + 1).trim();
      path = SAFE_PATH.test(p) && !p.split('/').some((seg) => seg === '..' || seg === '.') ? p : '/';
      continue;
    }
    kept.push(t);
  }
  return [`${pair.trim()}`, `Path=${prefix}${path}`, ...kept].join('; ');
}

/**
 * Where a board's redirect may lead: resolved against the public URL of the request, a path of the
 * board (absolute, or on the board's own address) is moved under `prefix`; the result must stay under
 * `prefix` on the code origin, else null (refused).
 */
export function scopeLocation(
  location: string,
  o: { codeOrigin: string; prefix: string; requestPath: string; boardHosts: readonly string[] },
): string | null {
  const base = `${o.codeOrigin}${o.prefix}${o.requestPath}`;
  let url: URL;
  try {
    const v = location.trim();
    if (v.startsWith('/') && !v.startsWith('//') && !v.startsWith('/\\')) {
      url = new URL(v.startsWith(`${o.prefix}/`) || v === o.prefix ? v : `${o.prefix}${v}`, o.codeOrigin);
    } else {
      url = new URL(v, base);
      if ((url.protocol === 'http:' || url.protocol === 'https:') && o.boardHosts.includes(url.host))
        url = new URL(`${o.prefix}${url.pathname}${url.search}${url.hash}`, o.codeOrigin);
    }
  } catch {
    return null;
  }
  if (url.origin !== o.codeOrigin) return null;
  if (url.pathname !== o.prefix && !url.pathname.startsWith(`${o.prefix}/`)) return null;
  return `${url.pathname}${url.search}${url.hash}`;
}

/** The CSP every answer of the code origin carries (beside any the board sends, which can only narrow it). */
export function codeCsp(consoleOrigin: string): string {
  return `frame-ancestors 'self' ${consoleOrigin}; base-uri 'self'; form-action 'self'`;
}

export class RedirectRefused extends Error {}

/** The board's answer headers as the browser gets them; throws RedirectRefused for a Location outside. */
export function headersFromBoard(
  headers: IncomingHttpHeaders,
  o: {
    codeOrigin: string;
    consoleOrigin: string;
    prefix: string;
    requestPath: string;
    boardHosts: readonly string[];
  },
): OutgoingHttpHeaders {
  const listed = connectionListed(headers);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    if (DROPPED_FROM_BOARD.has(name) || name.startsWith('access-control-')) continue;
    if (name === 'set-cookie') {
      const list = (Array.isArray(value) ? value : [value])
        .map((v) => scopeSetCookie(v, o.prefix))
        .filter((v): v is string => v !== null);
      if (list.length) out['set-cookie'] = list;
      continue;
    }
    if (name === 'location') {
      const loc = scopeLocation(String(value), o);
      if (loc === null) throw new RedirectRefused(String(value));
      out.location = loc;
      continue;
    }
    if (name === 'service-worker-allowed') {
      // The widest scope a service worker may claim: a path of the board, so at most the board's path
      // here (code-server asks for its root, "/"); anything that leads outside is dropped.
      const scope = scopeLocation(String(value), o);
      if (scope !== null) out[name] = scope.replace(/[?#].*$/, '');
      continue;
    }
    if (name === 'content-security-policy') {
      // A comma separates policies: each is enforced, so the board's can only narrow ours.
      out[name] = [...(Array.isArray(value) ? value : [value]), codeCsp(o.consoleOrigin)].join(', ');
      continue;
    }
    out[name] = value;
  }
  if (!out['content-security-policy']) out['content-security-policy'] = codeCsp(o.consoleOrigin);
  out['referrer-policy'] = 'no-referrer';
  out['x-content-type-options'] = 'nosniff';
  return out;
}
