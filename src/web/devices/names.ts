// The name the apply form suggests for a new board.

/**
 * The first `my-board-N` not yet used among the user's boards. Not `board-N`: the lab names its
 * hardware that way, and "board-1" landing on hardware board-2 read as a mistake.
 */
export function suggestName(taken: readonly string[]): string {
  const used = new Set(taken.map((n) => n.toLowerCase()));
  for (let i = 1; ; i++) if (!used.has(`my-board-${i}`)) return `my-board-${i}`;
}
