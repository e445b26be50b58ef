// What the console keeps in the browser (spec section 9): the token in local storage; apply info,
// language, redirect path, sidebar and tab state in cookies. Every read and write goes through here.
import Cookies from 'js-cookie';
import { STORAGE } from '#shared/constants.ts';

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

/** The cookie holds JSON; a bare applyId (older format) is accepted too. */
export function readApplyInfo(): ApplyInfo | null {
  const raw = Cookies.get(STORAGE.applyInfoCookie);
  if (!raw) return null;
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (parsed && typeof parsed === 'object' && typeof (parsed as ApplyInfo).applyId === 'string') {
      const p = parsed as ApplyInfo;
      return { applyId: p.applyId, deviceId: p.deviceId, serverName: p.serverName };
    }
    if (typeof parsed === 'string' || typeof parsed === 'number') return { applyId: String(parsed) };
  } catch {
    // not JSON: a bare id
  }
  return raw.trim() ? { applyId: raw.trim() } : null;
}

export function writeApplyInfo(info: ApplyInfo): void {
  Cookies.set(STORAGE.applyInfoCookie, JSON.stringify(info), { sameSite: 'Lax', path: '/' });
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
