// Business constants and limits of spec section 9, in one place for web, server and cli.

export const PRODUCT_TITLE = 'Bianbu Cloud';

export const LANGUAGES = ['zh', 'en', 'ja'] as const;
export type Language = (typeof LANGUAGES)[number];
export const DEFAULT_LANGUAGE: Language = 'zh';
export const FALLBACK_LANGUAGE: Language = 'en';

/**
 * The first supported language among a browser's preferences (`navigator.languages`, or the tags of
 * an Accept-Language header in its order), matched by primary subtag: `en-GB` → en, `zh-TW` → zh.
 * Null when none is supported; the caller then uses DEFAULT_LANGUAGE.
 */
export function preferredLanguage(prefs: readonly string[]): Language | null {
  for (const p of prefs) {
    const primary = p.trim().toLowerCase().split(/[-_;]/)[0];
    if ((LANGUAGES as readonly string[]).includes(primary)) return primary as Language;
  }
  return null;
}

/** The tags of an Accept-Language header, best first (q=0 dropped, ties keep their order). */
export function acceptLanguageTags(header: string | undefined): string[] {
  return (header ?? '')
    .split(',')
    .map((part, i) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((x) => x.trim()).find((x) => x.startsWith('q='));
      return { tag: tag.trim(), q: q ? Number(q.slice(2)) : 1, i };
    })
    .filter((x) => x.tag && x.tag !== '*' && Number.isFinite(x.q) && x.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((x) => x.tag);
}

/** Terminal font sizes in px: the default and the bounds of Ctrl+Alt+= / Ctrl+Alt+-. */
export const TERM_FONT = { initial: 13, min: 8, max: 28 } as const;

/** Where the console keeps client state (spec section 9: token in local storage, the rest in cookies). */
export const STORAGE = {
  tokenKey: 'token',
  applyInfoCookie: 'applyInfo',
  languageCookie: 'lang',
  redirectCookie: 'redirect',
  sidebarCookie: 'sidebarStatus',
  activeTabCookie: 'activeTab',
  termThemeCookie: 'termTheme',
  /** The terminals' font size in px (TERM_FONT bounds it). */
  termFontCookie: 'termFont',
  showVncCookie: 'showVnc',
  showCodeCookie: 'showCode',
  themeCookie: 'theme',
} as const;

export const HTTP_TIMEOUT_MS = 5_000;
export const TRANSFER_TIMEOUT_MS = 600_000;
export const HTTP_RETRIES = 0;

export const STOMP_HEARTBEAT_OUT_MS = 20_000;
export const STOMP_HEARTBEAT_IN_MS = 0;
export const STOMP_CHECK_INTERVAL_MS = 2_000;
export const STOMP_RECONNECT_DELAY_MS = 1_000;

export const RECENT_APPLIES_LIMIT = 10;
export const MOBILE_BREAKPOINT_PX = 992;
export const SIDEBAR_WIDTH_PX = 180;
export const AVATAR_FRAME_PX = 150;
export const AVATAR_MAX_KB = 10_240;
export const DRAG_DIALOG_MIN = { width: 100, height: 100 } as const;

export const LICENCE_WARN_DAYS = 7;
export const SQL_COUNTER_KEEP = 10;
export const SQL_COUNTER_DANGER_ABOVE = 10;
export const SQL_COUNTER_WARNING_ABOVE = 5;

export const ACTIVE_TAB_COOKIE_DAYS = 1;
export const COPY_THROTTLE_MS = 1_400;
export const COPY_NOTICE_MS = 1_000;
export const DEFAULT_VNC_QUALITY = 5;

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** Lease durations offered on /riscvhouse (spec section 9). `1 month` is taken as 30 days. */
export const LEASE_DURATIONS = [
  { key: '48h', ms: 48 * HOUR_MS },
  { key: '7d', ms: 7 * DAY_MS },
  { key: '1m', ms: 30 * DAY_MS },
] as const;
export type LeaseDurationKey = (typeof LEASE_DURATIONS)[number]['key'];
export const LONGEST_LEASE_MS = 30 * DAY_MS;
/** A requested end matches an offered duration when it is within this much of now + duration. */
export const LEASE_END_TOLERANCE_MS = 10 * 60_000;
