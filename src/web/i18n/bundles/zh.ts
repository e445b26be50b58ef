// Every catalogue of locales/zh, in one chunk the console loads when zh is shown (or is the fallback).
export default import.meta.glob<Record<string, unknown>>(
  // Namespaces of features loaded on use come with them (loadNamespace in i18n.ts).
  [
    '../../../../locales/zh/*.json',
    '!../../../../locales/zh/sequences.json',
    '!../../../../locales/zh/desktop.json',
    '!../../../../locales/zh/files.json',
    '!../../../../locales/zh/terminal.json',
    '!../../../../locales/zh/settings.json',
    '!../../../../locales/zh/snapshots.json',
    '!../../../../locales/zh/workbench.json',
    '!../../../../locales/zh/errors.json',
    '!../../../../locales/zh/admin.json',
    // The embedded identity provider's sign-in pages are the service's (src/server/identity/idp-pages.ts).
    '!../../../../locales/zh/idp.json',
  ],
  {
    eager: true,
    import: 'default',
  },
);
