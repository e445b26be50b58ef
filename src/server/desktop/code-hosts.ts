// Which host names the code window is served on. Browsers separate cookies by host name, not by port
// (RFC 6265 §8.5): a board's page on the console's host, even on another port, reads and sets the
// console's cookies. So the code listener never answers on the console's host name, and each apply gets
// an origin of its own where a wildcard allows it (as Coder serves workspace apps on subdomains):
//
//   BIANBU_CODE_ORIGIN  https://*.code.example.com  or  https://code.example.com   (behind a proxy)
//   BIANBU_CODE_HOST    *.code.example.com          or  code.example.com           (scheme and port
//                                                   are the console's scheme and BIANBU_CODE_PORT)
//   neither             *.code.localhost, but only for a console reached on a loopback name
//                       (localhost, 127.0.0.1, ::1): browsers resolve every *.localhost to loopback
//                       and none lets such a page set a cookie for `localhost` itself. A console on
//                       any other name gets no code window until one of the two is set.
//
// A `*` pattern gives every apply the label `a` + 24 hex digits of SHA-256(applyId): a new lease is a
// new origin, so nothing a board left in the browser (storage, service workers, cookies) meets the
// next holder.
import crypto from 'node:crypto';
import { isIP } from 'node:net';

export interface CodeHostRule {
  /** `*.suffix` (one label per apply) or one host name; lower case, no port. */
  pattern: string;
  /** 'http' | 'https', or null: the console request's scheme. */
  scheme: string | null;
  /** The public port, '' for the scheme's default, or null: the listener's own port. */
  port: string | null;
  /** From BIANBU_CODE_ORIGIN: a reverse proxy in front, which may rewrite the Host header. */
  proxied: boolean;
}

/** The default for a loopback console: every board on a subdomain of code.localhost. */
export const LOOPBACK_CODE_PATTERN = '*.code.localhost';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A host name or `*.name` pattern as the config accepts it (lower case, at least two labels after a
 * `*`), or an IPv4 address (which no page can set a Domain cookie for).
 */
export function validCodeHostPattern(v: string): boolean {
  if (isIP(v) === 4) return true;
  const rest = v.startsWith('*.') ? v.slice(2) : v;
  if (v !== v.toLowerCase() || isIP(rest)) return false;
  const labels = rest.split('.');
  return labels.every((l) => LABEL.test(l)) && (!v.startsWith('*.') || labels.length >= 2);
}

/** The configured rule (BIANBU_CODE_ORIGIN before BIANBU_CODE_HOST), or null when neither is set. */
export function codeHostRule(cfg: { origin?: string; host?: string }): CodeHostRule | null {
  if (cfg.origin) {
    const u = new URL(cfg.origin);
    return { pattern: u.hostname, scheme: u.protocol.slice(0, -1), port: u.port, proxied: true };
  }
  if (cfg.host) return { pattern: cfg.host, scheme: null, port: null, proxied: false };
  return null;
}

/** A host name without brackets or a trailing dot, lower case. */
function normal(hostname: string): string {
  return hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

/** localhost, *.localhost, 127.0.0.0/8 and ::1: names only this machine answers. */
export function isLoopbackName(hostname: string): boolean {
  const h = normal(hostname);
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/** Whether `hostname` is one the rule serves. */
export function matchesCodeHost(pattern: string, hostname: string): boolean {
  const h = normal(hostname);
  if (!pattern.startsWith('*.')) return h === pattern;
  const suffix = pattern.slice(1);
  return h.endsWith(suffix) && LABEL.test(h.slice(0, -suffix.length));
}

/** The label of an apply under a `*` pattern. */
export function codeLabel(applyId: string): string {
  return `a${crypto.createHash('sha256').update(applyId).digest('hex').slice(0, 24)}`;
}

/** The host name an apply's code window is served on. */
export function codeHostOf(pattern: string, applyId: string): string {
  return pattern.startsWith('*.') ? `${codeLabel(applyId)}${pattern.slice(1)}` : pattern;
}

/**
 * The rule that holds for a console reached at `consoleHostname`: the configured one, else the loopback
 * default for a loopback console; null when the code window has no host of its own there (unset, or
 * a configured name that is the console's own, one its pattern covers, or one under the console's).
 */
export function effectiveRule(configured: CodeHostRule | null, consoleHostname: string): CodeHostRule | null {
  const rule =
    configured ??
    (isLoopbackName(consoleHostname)
      ? { pattern: LOOPBACK_CODE_PATTERN, scheme: null, port: null, proxied: false }
      : null);
  if (!rule || matchesCodeHost(rule.pattern, consoleHostname)) return null;
  // A board on a subdomain of the console's name could set cookies with Domain={console} — except
  // under `localhost`, a top-level name for which browsers refuse a Domain attribute.
  const base = rule.pattern.replace(/^\*\./, '');
  const c = normal(consoleHostname);
  if (base === c || (c !== 'localhost' && base.endsWith(`.${c}`))) return null;
  return rule;
}

/** The origin of an apply's code window under `rule`, for a console call made over `consoleScheme`. */
export function codeOriginOf(
  rule: CodeHostRule,
  applyId: string,
  consoleScheme: string,
  listenerPort: number,
): string {
  const scheme = rule.scheme ?? consoleScheme;
  const port = rule.port ?? String(listenerPort);
  return new URL(`${scheme}://${codeHostOf(rule.pattern, applyId)}${port ? `:${port}` : ''}`).origin;
}

/**
 * Whether the code session's cookie can be third-party: over https, or on a loopback name (which
 * browsers count as secure), it is `SameSite=None; Secure; Partitioned`, so the console's iframe on
 * another site carries it. Over plain http elsewhere only a same-site console's iframe (or a tab) can.
 */
export function codeCookieAttributes(codeOrigin: string): string {
  const u = new URL(codeOrigin);
  return u.protocol === 'https:' || isLoopbackName(u.hostname)
    ? 'SameSite=None; Secure; Partitioned'
    : 'SameSite=Lax';
}
