// Every catalogue of locales/ja, in one chunk the console loads when ja is shown (or is the fallback).
export default import.meta.glob<Record<string, unknown>>(
  // Namespaces of features loaded on use come with them (loadNamespace in i18n.ts).
  [
    '../../../../locales/ja/*.json',
    '!../../../../locales/ja/sequences.json',
    '!../../../../locales/ja/desktop.json',
    '!../../../../locales/ja/files.json',
    '!../../../../locales/ja/terminal.json',
    '!../../../../locales/ja/settings.json',
    '!../../../../locales/ja/snapshots.json',
    '!../../../../locales/ja/workbench.json',
    '!../../../../locales/ja/errors.json',
    '!../../../../locales/ja/admin.json',
    // The embedded identity provider's sign-in pages are the service's (src/server/identity/idp-pages.ts).
    '!../../../../locales/ja/idp.json',
  ],
  {
    eager: true,
    import: 'default',
  },
);
