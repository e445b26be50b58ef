// Every catalogue of locales/zh, in one chunk the console loads when zh is shown (or is the fallback).
export default import.meta.glob<Record<string, unknown>>('../../../../locales/zh/*.json', {
  eager: true,
  import: 'default',
});
