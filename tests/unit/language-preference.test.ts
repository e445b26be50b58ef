// Which language a first visit gets with no `lang` cookie: the browser's preference, matched by the
// primary subtag, else Chinese (the console uses navigator.languages, the provider's pages the
// Accept-Language header).
import { describe, expect, it } from 'vitest';
import { languageOf } from '#server/identity/idp-pages.ts';
import { acceptLanguageTags, preferredLanguage } from '#shared/constants.ts';

describe('the browser language preference', () => {
  it.each([
    [['en-US', 'en'], 'en'],
    [['ja'], 'ja'],
    [['zh-TW', 'en'], 'zh'],
    [['fr-FR', 'de', 'ja-JP'], 'ja'],
    [['EN_gb'], 'en'],
    [['fr', 'de'], null],
    [[], null],
  ] as const)('%j → %s', (prefs, want) => {
    expect(preferredLanguage(prefs)).toBe(want);
  });

  it('orders Accept-Language tags by q, drops q=0 and *', () => {
    expect(acceptLanguageTags('fr;q=0.4, ja;q=0.9, en-US, *;q=0.1, zh;q=0')).toEqual(['en-US', 'ja', 'fr']);
    expect(acceptLanguageTags(undefined)).toEqual([]);
    expect(acceptLanguageTags('garbage;q=x')).toEqual([]);
  });

  it('the provider pages take ?lang=, then the cookie, then Accept-Language, then zh', () => {
    expect(languageOf('lang=ja', 'en', 'zh')).toBe('en');
    expect(languageOf('a=1; lang=ja', undefined, 'en-US,en;q=0.9')).toBe('ja');
    expect(languageOf(undefined, undefined, 'en-US,en;q=0.9')).toBe('en');
    expect(languageOf('lang=xx', undefined, 'fr, ja;q=0.5')).toBe('ja');
    expect(languageOf(undefined, undefined, 'fr')).toBe('zh');
  });
});
