// i18next with the catalogues of locales/<lng>/<namespace>.json, one chunk per language built into the
// console (src/web/i18n/bundles): the shown language loads before the first render, another language
// when the user switches to it. The English fallback loads only if a key is ever missing: every key
// exists in every language (tests/unit/i18n-keys.test.ts), so a visitor in zh or ja never downloads it. The language comes from the `lang` cookie
// (the user's choice), else the browser's preferred languages, else zh; missing keys fall back to
// English (spec section 9).
import i18next, { type TFunction } from 'i18next';
import { initReactI18next } from 'react-i18next';
import {
  DEFAULT_LANGUAGE,
  FALLBACK_LANGUAGE,
  LANGUAGES,
  type Language,
  preferredLanguage,
  STORAGE,
} from '#shared/constants.ts';
import { readCookie, writeCookie } from '#web/state/storage.ts';

type Catalogue = Record<string, unknown>;

const bundles: Record<Language, () => Promise<{ default: Record<string, Catalogue> }>> = {
  zh: () => import('./bundles/zh.ts'),
  en: () => import('./bundles/en.ts'),
  ja: () => import('./bundles/ja.ts'),
};

/** The catalogues of one language by namespace (loaded once). */
const loaded = new Map<Language, Promise<Record<string, Catalogue>>>();
export function catalogueOf(lng: Language): Promise<Record<string, Catalogue>> {
  let p = loaded.get(lng);
  if (!p) {
    p = bundles[lng]().then(({ default: files }) => {
      const byNs: Record<string, Catalogue> = {};
      for (const [file, content] of Object.entries(files)) {
        const m = /\/([^/]+)\.json$/.exec(file);
        if (m) byNs[m[1]] = content;
      }
      return byNs;
    });
    p.catch(() => loaded.delete(lng));
    loaded.set(lng, p);
  }
  return p;
}

/**
 * Namespaces left out of the language chunks (bundles/*.ts): a feature loaded on use loads its own
 * with `loadNamespace` first, in the shown language and the fallback; a later language switch loads
 * them too.
 */
const lazyFiles = import.meta.glob<Catalogue>(
  '../../../locales/*/{sequences,desktop,files,terminal,settings,snapshots,workbench,errors}.json',
  {
    import: 'default',
  },
);
export type LazyNamespace =
  | 'sequences'
  | 'desktop'
  | 'files'
  | 'terminal'
  | 'settings'
  | 'snapshots'
  | 'workbench'
  // The words of failures: loaded by the HTTP client's first failure (api/transport.ts), or when idle.
  | 'errors';
const lazyUsed = new Set<LazyNamespace>();

async function addLazy(lng: Language, ns: LazyNamespace): Promise<void> {
  if (i18next.hasResourceBundle(lng, ns)) return;
  const file = lazyFiles[`../../../locales/${lng}/${ns}.json`];
  if (file) i18next.addResourceBundle(lng, ns, await file(), true, true);
}

export async function loadNamespace(...names: LazyNamespace[]): Promise<void> {
  for (const ns of names) lazyUsed.add(ns);
  const lngs = [...new Set([currentLanguage(), ...(fallbackWanted ? [FALLBACK_LANGUAGE] : [])])];
  await Promise.all(names.flatMap((ns) => lngs.map((l) => addLazy(l, ns))));
}

async function ensureLanguage(lng: Language): Promise<void> {
  await Promise.all([...lazyUsed].map((ns) => addLazy(lng, ns)));
  if (i18next.hasResourceBundle(lng, 'common')) return;
  const byNs = await catalogueOf(lng);
  for (const [ns, content] of Object.entries(byNs)) i18next.addResourceBundle(lng, ns, content, true, true);
}

export function isLanguage(v: unknown): v is Language {
  return typeof v === 'string' && (LANGUAGES as readonly string[]).includes(v);
}

/** The `lang` cookie (the user's choice), else the browser's preferred languages, else zh. */
export function initialLanguage(): Language {
  const saved = readCookie(STORAGE.languageCookie);
  if (isLanguage(saved)) return saved;
  const prefs = typeof navigator === 'undefined' ? [] : (navigator.languages ?? [navigator.language]);
  return preferredLanguage(prefs) ?? DEFAULT_LANGUAGE;
}

// Whether the fallback language was needed (a key missing from the shown one): from then on it loads
// along with the shown language's namespaces.
let fallbackWanted = false;

/** Loads the fallback language once a key turns out to be missing; the views then render again. */
function wantFallback(): void {
  if (fallbackWanted) return;
  fallbackWanted = true;
  void ensureLanguage(FALLBACK_LANGUAGE).catch(() => {
    fallbackWanted = false;
  });
}

export async function initI18n(lng: Language = initialLanguage()): Promise<typeof i18next> {
  const main = await catalogueOf(lng);
  const resources: Record<string, Record<string, Catalogue>> = { [lng]: main };
  await i18next.use(initReactI18next).init({
    resources,
    lng,
    fallbackLng: FALLBACK_LANGUAGE,
    supportedLngs: [...LANGUAGES],
    ns: Object.keys(main),
    defaultNS: 'common',
    interpolation: { escapeValue: false },
    returnNull: false,
    // A key missing from the shown language (none today) asks for the fallback; until it has loaded
    // the key shows as itself, then the views render again (react-i18next listens for "added").
    saveMissing: true,
    missingKeyHandler: () => wantFallback(),
    react: { bindI18nStore: 'added' },
  });
  document.documentElement.lang = lng;
  if (lng === FALLBACK_LANGUAGE) fallbackWanted = true;
  return i18next;
}

/** Switch language: cookie, i18next, and <html lang>; the title follows through `languageChanged`. */
export async function setLanguage(lng: Language, persist = true): Promise<void> {
  if (persist) writeCookie(STORAGE.languageCookie, lng, 365);
  await ensureLanguage(lng);
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
