// Ranking of the palette's commands: one number per command for what was typed, so the first row is
// the best and is the one Enter runs. cmdk's own filter scores fuzzy keyword hits close to exact title
// hits and its sections were ordered before scores (issue 13: "rename" ran Open Documentation), so the
// palette ranks here and tells cmdk not to filter.
//
// Tiers, highest first (a tier is 100 wide, bonuses stay below that so they only break near-ties):
//   exact title or alias · title prefix · prefix after the title's "Files:" category · every word
//   of the query starting a word of the title · alias prefix · title substring · keyword hits ·
//   fuzzy (letters in order) on the title · fuzzy on keywords.
// Bonuses: the command belongs to the board in front of the user, to a mounted pane, to the focused
// pane; it was run recently. Pure: no DOM, no i18n — the caller passes worded titles.

/** Where a command belongs. `board`: the board in front of the user; the others: a pane of the workbench. */
export type CommandContext = 'board' | 'shell' | 'files' | 'editor' | 'desktop';

export interface RankInput {
  id: string;
  /** The title in the current language. */
  title: string;
  /** Other names the command answers to as well as its title (any language, e.g. the English title). */
  aliases?: readonly string[];
  keywords?: readonly string[];
  context?: CommandContext;
}

export interface RankEnv {
  /** The pane that had the focus when the palette opened. */
  focusedPane?: CommandContext | null;
  /** Ids of recently run commands, most recent first. */
  recent?: readonly string[];
}

export const BONUS = { board: 40, pane: 50, focusedPane: 100, recentMax: 30 } as const;

/** Lower case, compatibility forms folded, quotes and ellipses dropped, spaces collapsed. */
export function normalize(s: string): string {
  return s
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\.{3}|[“”"'‘’「」『』…]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The title without a leading category ("Files: upload…" → "upload…"). */
function withoutCategory(title: string): string | null {
  const m = /^[^:：]{1,16}[:：]\s*(.+)$/.exec(title);
  return m ? m[1] : null;
}

function words(s: string): string[] {
  return s.split(/[\s\-_/.,:：、，()（）]+/).filter(Boolean);
}

/** Letters of `q` in order inside `s`: 0..1, higher when they sit closer together and earlier; -1 when not. */
function fuzzy(s: string, q: string): number {
  const qs = q.replace(/\s+/g, '');
  if (!qs) return -1;
  let pos = -1;
  let first = -1;
  for (const ch of qs) {
    pos = s.indexOf(ch, pos + 1);
    if (pos < 0) return -1;
    if (first < 0) first = pos;
  }
  const span = pos - first + 1;
  return Math.max(0, Math.min(1, qs.length / span - first / (s.length * 4)));
}

/** The command's score for the query; 0 means it does not match and is not shown. */
export function scoreCommand(query: string, c: RankInput, env: RankEnv = {}): number {
  const q = normalize(query);
  const bonus = contextBonus(c, env);
  if (!q) return 1 + bonus;
  const title = normalize(c.title);
  const rest = withoutCategory(title);
  const aliases = (c.aliases ?? []).map(normalize).filter(Boolean);
  const keywords = (c.keywords ?? []).map(normalize).filter(Boolean);
  const qWords = words(q);
  const titleWords = words(title);
  let base = 0;
  if (title === q || rest === q || aliases.includes(q)) base = 1000;
  else if (title.startsWith(q)) base = 900;
  else if (rest?.startsWith(q)) base = 880;
  else if (qWords.length > 0 && qWords.every((w) => titleWords.some((tw) => tw.startsWith(w)))) base = 800;
  else if (aliases.some((a) => a.startsWith(q))) base = 750;
  else if (title.includes(q)) base = 700;
  else if (aliases.some((a) => a.includes(q) || words(a).some((w) => w.startsWith(q)))) base = 650;
  else if (qWords.length > 1 && qWords.every((w) => title.includes(w))) base = 600;
  else if (keywords.includes(q)) base = 550;
  else if (keywords.some((k) => k.startsWith(q))) base = 500;
  else if (keywords.some((k) => k.includes(q))) base = 400;
  else if (
    qWords.length > 1 &&
    qWords.every(
      (w) => title.includes(w) || keywords.some((k) => k.startsWith(w)) || aliases.some((a) => a.includes(w)),
    )
  )
    base = 350;
  else {
    const f = fuzzy(title, q);
    if (f >= 0 && q.length >= 2) base = 100 + Math.round(f * 90);
    else {
      const fk = Math.max(-1, ...keywords.map((k) => fuzzy(k, q)));
      if (fk >= 0.5 && q.length >= 3) base = 20 + Math.round(fk * 40);
    }
  }
  return base === 0 ? 0 : base + bonus;
}

function contextBonus(c: RankInput, env: RankEnv): number {
  let b = 0;
  if (c.context === 'board') b += BONUS.board;
  else if (c.context) b += env.focusedPane === c.context ? BONUS.focusedPane : BONUS.pane;
  const r = env.recent?.indexOf(c.id) ?? -1;
  if (r >= 0) b += Math.max(1, BONUS.recentMax - r * 5);
  return b;
}

/**
 * The matching commands, best first. Equal scores keep the shorter title first (the more specific
 * command names less), then the order of registration.
 */
export function rankCommands<T extends RankInput>(query: string, list: readonly T[], env: RankEnv = {}): T[] {
  return list
    .map((c, i) => ({ c, i, s: scoreCommand(query, c, env), len: c.title.length }))
    .filter((x) => x.s > 0)
    .sort((a, b) => b.s - a.s || a.len - b.len || a.i - b.i)
    .map((x) => x.c);
}

/** Empty query: recently run commands (most recent first), then the ones of the current context, then the rest. */
export function emptyQueryOrder<T extends RankInput>(
  list: readonly T[],
  env: RankEnv = {},
): { recent: T[]; rest: T[] } {
  const recentIds = env.recent ?? [];
  const byId = new Map(list.map((c) => [c.id, c]));
  const recent = recentIds.map((id) => byId.get(id)).filter((c): c is T => !!c);
  const taken = new Set(recent.map((c) => c.id));
  const ctxRank = (c: T) =>
    !c.context ? 0 : c.context === 'board' ? 1 : env.focusedPane === c.context ? 3 : 2;
  const rest = list
    .map((c, i) => ({ c, i }))
    .filter((x) => !taken.has(x.c.id))
    .sort((a, b) => ctxRank(b.c) - ctxRank(a.c) || a.i - b.i)
    .map((x) => x.c);
  return { recent, rest };
}

// Recently run commands, kept per browser (a palette habit, not an account setting).
const RECENT_KEY = 'bianbu.palette.recent';
const RECENT_MAX = 5;

export function readRecent(): string[] {
  try {
    const raw = globalThis.localStorage?.getItem(RECENT_KEY);
    const v: unknown = raw ? JSON.parse(raw) : [];
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string').slice(0, RECENT_MAX) : [];
  } catch {
    return [];
  }
}

export function pushRecent(id: string): string[] {
  const next = [id, ...readRecent().filter((x) => x !== id)].slice(0, RECENT_MAX);
  try {
    globalThis.localStorage?.setItem(RECENT_KEY, JSON.stringify(next));
  } catch {
    // Storage full or denied: recents are a convenience.
  }
  return next;
}
