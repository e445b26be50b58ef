// i18next with every catalogue of locales/<lng>/<namespace>.json bundled at build time, so the
// console never waits on a translation request. The language comes from the `lang` cookie
// (default zh); missing keys fall back to English (spec section 9).
import i18next, { type TFunction } from 'i18next';
import { initReactI18next } from 'react-i18next';
import { DEFAULT_LANGUAGE, FALLBACK_LANGUAGE, LANGUAGES, type Language, STORAGE } from '#shared/constants.ts';
import { readCookie, writeCookie } from '#web/state/storage.ts';

type Catalogue = Record<string, unknown>;

const files = import.meta.glob<Catalogue>('../../../locales/*/*.json', { eager: true, import: 'default' });

export function catalogues(): Record<string, Record<string, Catalogue>> {
  const resources: Record<string, Record<string, Catalogue>> = {};
  for (const [file, content] of Object.entries(files)) {
    const m = /locales\/([^/]+)\/([^/]+)\.json$/.exec(file);
    if (!m) continue;
    resources[m[1]] ??= {};
    resources[m[1]][m[2]] = content;
  }
  return resources;
}

export function isLanguage(v: unknown): v is Language {
  return typeof v === 'string' && (LANGUAGES as readonly string[]).includes(v);
}

export function initialLanguage(): Language {
  const saved = readCookie(STORAGE.languageCookie);
  return isLanguage(saved) ? saved : DEFAULT_LANGUAGE;
}

export async function initI18n(lng: Language = initialLanguage()): Promise<typeof i18next> {
  const resources = catalogues();
  await i18next.use(initReactI18next).init({
    resources,
    lng,
    fallbackLng: FALLBACK_LANGUAGE,
    supportedLngs: [...LANGUAGES],
    ns: Object.keys(resources[FALLBACK_LANGUAGE] ?? { common: {} }),
    defaultNS: 'common',
    interpolation: { escapeValue: false },
    returnNull: false,
  });
  document.documentElement.lang = lng;
  return i18next;
}

/** Switch language: cookie, i18next, and <html lang>; the title follows through `languageChanged`. */
export async function setLanguage(lng: Language, persist = true): Promise<void> {
  if (persist) writeCookie(STORAGE.languageCookie, lng, 365);
  await i18next.changeLanguage(lng);
  document.documentElement.lang = lng;
}

export function currentLanguage(): Language {
  return isLanguage(i18next.language) ? i18next.language : DEFAULT_LANGUAGE;
}

/** For code outside React (the HTTP client, palette commands). */
export const t: TFunction = ((...args: Parameters<TFunction>) => i18next.t(...args)) as TFunction;

/** True when a key exists in the current or the fallback language. */
export function hasKey(key: string, ns: string): boolean {
  return i18next.exists(key, { ns });
}

export const LANGUAGE_LABELS: Record<Language, string> = { zh: '简体中文', en: 'English', ja: '日本語' };
