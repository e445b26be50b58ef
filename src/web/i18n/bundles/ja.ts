// Every catalogue of locales/ja, in one chunk the console loads when ja is shown (or is the fallback).
export default import.meta.glob<Record<string, unknown>>('../../../../locales/ja/*.json', {
  eager: true,
  import: 'default',
});
