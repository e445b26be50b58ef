// The administration area's words (locales/<lng>/admin.json): left out of the language chunks and of the
// lazy namespaces the first load knows (each would cost every visitor bytes), loaded by this chunk when
// an administration page or command needs them, and again in the new language when it changes.
import i18next from 'i18next';
import { currentLanguage } from '#web/i18n/i18n.ts';

const files = import.meta.glob<Record<string, unknown>>('../../../locales/*/admin.json', {
  import: 'default',
});

async function add(lng: string): Promise<void> {
  if (i18next.hasResourceBundle(lng, 'admin')) return;
  const file = files[`../../../locales/${lng}/admin.json`];
  if (file) i18next.addResourceBundle(lng, 'admin', await file(), true, true);
}

let following = false;

export function loadAdminWords(): Promise<void> {
  if (!following) {
    following = true;
    i18next.on('languageChanged', (lng) => void add(lng).catch(() => {}));
  }
  return add(currentLanguage());
}
