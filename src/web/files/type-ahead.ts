// Type-ahead in the file tree: letters typed quickly one after another make a word ("kbd" finds
// kbd.txt, not the first name starting with k, then b, then d), as file managers do.

/** How long after a letter the next one still joins the word (ms). */
export const TYPE_AHEAD_MS = 800;

/**
 * The row to select for the typed word: for one letter, the next name after the selection starting
 * with it (pressing it again cycles); for a longer word, the first name from the selection on
 * (the selection itself included, so typing on keeps it) starting with the word. -1 when none.
 */
export function typeAheadMatch(names: readonly string[], selected: number, word: string): number {
  const n = names.length;
  if (!n || !word) return -1;
  const w = word.toLowerCase();
  // A word of one repeated letter ("kk") cycles like a single one does.
  const single = [...w].every((c) => c === w[0]);
  const start = selected < 0 ? 0 : single ? selected + 1 : selected;
  const prefix = single ? w[0] : w;
  for (let step = 0; step < n; step++) {
    const i = (start + step) % n;
    if (names[i].toLowerCase().startsWith(prefix)) return i;
  }
  return -1;
}
