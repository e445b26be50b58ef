// What the console keeps in the browser (spec section 9): the token in local storage; apply info,
// language, redirect path, sidebar and tab state in cookies. Every read and write goes through here.
// The cookies are host-only (no Domain) and JavaScript-readable, so they hold no credential, and a read
// is untrusted input: another page on a parent or sibling name could have set one (a board's code
// window is on a host name of its own, src/server/desktop/code-hosts.ts). Each reader validates what
// it reads; the applyId is only a hint the server checks against the token on every call.
import Cookies from 'js-cookie';
import { STORAGE } from '#shared/constants.ts';
import { CONTROL_CHARS, ID_MAX } from '#shared/ids.ts';

/** Some clients store the token JSON-encoded; the quotes are never part of the credential. */
export function stripQuotes(value: string): string {
  return value.trim().replace(/^["']+|["']+$/g, '');
}

export function readToken(): string {
  try {
    const raw = localStorage.getItem(STORAGE.tokenKey);
    return raw ? stripQuotes(raw) : '';
  } catch {
    return '';
  }
}

export function writeToken(token: string): void {
  localStorage.setItem(STORAGE.tokenKey, stripQuotes(token));
}

export function removeToken(): void {
  localStorage.removeItem(STORAGE.tokenKey);
}

/** The apply the browser works on. Written by the device pages after a successful apply. */
export interface ApplyInfo {
  applyId: string;
  deviceId?: string;
  serverName?: string;
}

/**
 * An id as the server's `entityId` accepts it (1..ID_MAX characters, no control characters), checked by
 * hand: this runs at the first load, before the lazy zod of src/shared is (src/web/lazy-zod.ts).
 */
const idOrUndefined = (v: unknown, max = ID_MAX): string | undefined =>
  typeof v === 'string' && v.length > 0 && v.length <= max && !CONTROL_CHARS.test(v) ? v : undefined;

/** The cookie holds JSON; a bare applyId (older format) is accepted too; anything else reads as none. */
export function readApplyInfo(): ApplyInfo | null {
  const raw = Cookies.get(STORAGE.applyInfoCookie);
  if (!raw) return null;
  let parsed: unknown = raw.trim();
  try {
    parsed = JSON.parse(raw) as unknown;
  } catch {
    // not JSON: a bare id
  }
  if (typeof parsed === 'string' || typeof parsed === 'number') parsed = { applyId: String(parsed) };
  if (!parsed || typeof parsed !== 'object') return null;
  const p = parsed as Record<string, unknown>;
  const applyId = idOrUndefined(p.applyId);
  if (!applyId) return null;
  return { applyId, deviceId: idOrUndefined(p.deviceId), serverName: idOrUndefined(p.serverName, 128) };
}

/** Only the ids: the apply's device row (lease id, board facts) stays in memory, out of any cookie. */
export function writeApplyInfo(info: ApplyInfo): void {
  const { applyId, deviceId, serverName } = info;
  Cookies.set(STORAGE.applyInfoCookie, JSON.stringify({ applyId, deviceId, serverName }), {
    sameSite: 'Lax',
    path: '/',
  });
}

export function removeApplyInfo(): void {
  Cookies.remove(STORAGE.applyInfoCookie, { path: '/' });
}

export function readCookie(name: string): string | undefined {
  return Cookies.get(name);
}

export function writeCookie(name: string, value: string, days?: number): void {
  Cookies.set(name, value, { sameSite: 'Lax', path: '/', ...(days ? { expires: days } : {}) });
}

export function removeCookie(name: string): void {
  Cookies.remove(name, { path: '/' });
}
