// Every catalogue of locales/en, in one chunk the console loads when en is shown (or is the fallback).
export default import.meta.glob<Record<string, unknown>>(
  // Namespaces of features loaded on use come with them (loadNamespace in i18n.ts).
  [
    '../../../../locales/en/*.json',
    '!../../../../locales/en/sequences.json',
    '!../../../../locales/en/desktop.json',
    '!../../../../locales/en/files.json',
    '!../../../../locales/en/terminal.json',
    '!../../../../locales/en/settings.json',
    '!../../../../locales/en/snapshots.json',
    '!../../../../locales/en/workbench.json',
    '!../../../../locales/en/errors.json',
    '!../../../../locales/en/admin.json',
    // The embedded identity provider's sign-in pages are the service's (src/server/identity/idp-pages.ts).
    '!../../../../locales/en/idp.json',
  ],
  {
    eager: true,
    import: 'default',
  },
);
