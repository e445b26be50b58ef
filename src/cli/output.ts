// How commands print: one JSON document with --json (the shape each command documents in its
// help), a plain aligned table otherwise (cli-table3 without borders), nothing but ids with --quiet.
// Messages for people go to stderr so stdout stays data.
import Table from 'cli-table3';

export interface OutputOpts {
  json: boolean;
  quiet: boolean;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

const PLAIN = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '  ',
};

/** A plain table: a header row in upper case, columns separated by two spaces. */
export function renderTable(head: string[], rows: (string | number | null | undefined)[][]): string {
  const t = new Table({
    head: head.map((h) => h.toUpperCase()),
    chars: PLAIN,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  for (const r of rows) t.push(r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  return t
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

export function printTable(head: string[], rows: (string | number | null | undefined)[][]): void {
  process.stdout.write(`${renderTable(head, rows)}\n`);
}

/** A line for people (progress, confirmations): stderr, silenced by --quiet. */
export function note(o: OutputOpts, text: string): void {
  if (!o.quiet) process.stderr.write(`${text}\n`);
}

export function formatDuration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 60_000) return `${Math.round(ms / 1000)}s`;
  const m = Math.floor(ms / 60_000);
  const d = Math.floor(m / 1440);
  const h = Math.floor((m % 1440) / 60);
  const mm = m % 60;
  if (d) return `${d}d${h}h`;
  if (h) return `${h}h${mm}m`;
  return `${mm}m`;
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

/** One value per line (--quiet listings). */
export function printLines(values: string[]): void {
  if (values.length) process.stdout.write(`${values.join('\n')}\n`);
}
