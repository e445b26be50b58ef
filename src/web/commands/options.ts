// Matching of typed text against a command's choices while it asks (PaletteArg.options): every word
// typed must be found in the choice's label, detail or keywords; a whole word counts more than the
// start of one, which counts more than a piece. "7" and "7 days" pick "7 days", not "72 hours".

import { normalize } from './rank.ts';
import type { PaletteCommand, PaletteOption } from './registry.ts';

function wordsOf(s: string): string[] {
  return normalize(s)
    .split(/[\s\-_/.,:：、，·()（）]+/)
    .filter(Boolean);
}

/** How well `typed` names the choice: 0 when one of its words is found nowhere. */
export function optionScore(typed: string, o: PaletteOption): number {
  const q = wordsOf(typed);
  if (!q.length) return 1;
  const pool = [o.label, o.detail ?? '', o.value, ...(o.keywords ?? [])];
  const whole = normalize(pool.join(' '));
  const ws = pool.flatMap(wordsOf);
  let score = 0;
  for (const w of q) {
    if (ws.includes(w)) score += 3;
    else if (ws.some((x) => x.startsWith(w))) score += 2;
    else if (whole.includes(w)) score += 1;
    else return 0;
  }
  // The whole text as typed in the label first ("rv-main" over a board of that model).
  if (normalize(o.label) === normalize(typed)) score += 5;
  else if (normalize(o.label).startsWith(normalize(typed))) score += 2;
  return score;
}

/** The choices matching `typed`, best first, the given order among equals. */
export function matchOptions(typed: string, options: readonly PaletteOption[]): PaletteOption[] {
  if (!typed.trim()) return [...options];
  return options
    .map((o, i) => ({ o, i, s: optionScore(typed, o) }))
    .filter((x) => x.s > 0)
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .map((x) => x.o);
}

/**
 * The commands offered for a query typed as "verb text" (`renew 7d`): those whose quick verbs
 * include the first word; with the text after it.
 */
export function quickMatches<T extends { cmd: PaletteCommand }>(
  query: string,
  rows: readonly T[],
): { row: T; text: string }[] {
  const m = /^\s*(\S+)\s+(.*\S)\s*$/.exec(query);
  if (!m) return [];
  const verb = m[1].toLowerCase();
  return rows
    .filter((r) => r.cmd.quick?.verbs.some((v) => v.toLowerCase() === verb))
    .map((row) => ({ row, text: m[2] }));
}
