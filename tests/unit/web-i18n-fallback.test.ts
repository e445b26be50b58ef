// The console's catalogues: a visitor's first load holds only the shown language; the English
// fallback is downloaded only when a key turns out to be missing from it, and then the key reads in
// English (src/web/i18n/i18n.ts).
import { expect, it, vi } from 'vitest';

// i18n.ts sets <html lang> and reads the `lang` cookie: the little of `document` it touches.
vi.stubGlobal('document', { documentElement: { lang: '' }, cookie: '' });
const { initI18n } = await import('#web/i18n/i18n.ts');

it('loads the shown language alone, and the fallback once a key is missing from it', async () => {
  const i18n = await initI18n('zh');
  expect(i18n.language).toBe('zh');
  expect(i18n.hasResourceBundle('zh', 'common')).toBe(true);
  expect(i18n.hasResourceBundle('en', 'common')).toBe(false);
  // Keys present in zh never ask for English.
  i18n.t('common:actions.close');
  await new Promise((r) => setTimeout(r, 300));
  expect(i18n.hasResourceBundle('en', 'common')).toBe(false);

  // A key only English has (as a future catalogue might miss one): shown as the key until the
  // fallback has loaded, then in English.
  i18n.addResource('en', 'common', 'onlyInEnglish', 'English text');
  expect(i18n.t('common:onlyInEnglish')).toBe('English text');
  i18n.removeResourceBundle('en', 'common');
  expect(i18n.t('common:onlyInEnglish')).toBe('onlyInEnglish');
  await vi.waitFor(() => expect(i18n.hasResourceBundle('en', 'common')).toBe(true));
  expect(i18n.t('common:actions.close')).toBe('关闭');
});
