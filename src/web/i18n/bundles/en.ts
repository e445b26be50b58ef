// Every catalogue of locales/en, in one chunk the console loads when en is shown (or is the fallback).
export default import.meta.glob<Record<string, unknown>>('../../../../locales/en/*.json', {
  eager: true,
  import: 'default',
});
