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
  /** Other titles scored as titles: the English one while the console speaks another language. */
  titles?: readonly string[];
  /** It deletes or ends something: a harmless command matching as well ranks above it. */
  destructive?: boolean;
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

/**
 * Optimal string alignment distance (edits, with a swap of two neighbouring letters as one), stopped
 * early above `max`: "uplaod" is 1 from "upload", "reneww" 1 from "renew".
 */
export function editDistance(a: string, b: string, max = 2): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0].push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, rows[i - 2][j - 2] + 1);
      rows[i].push(v);
    }
    if (i > 0 && Math.min(...rows[i]) > max) return max + 1;
  }
  return rows[a.length][b.length];
}

/** A query word typed with one slip (a swap, a letter too many, too few or wrong) for a word. */
function typoOf(q: string, w: string): boolean {
  if (q.length < 4 || w.length < 3) return false;
  if (editDistance(q, w, 1) <= 1) return true;
  // Still typing a longer word: its beginning.
  return w.length > q.length && editDistance(q, w.slice(0, q.length), 1) <= 1;
}

/** The tier of one title for the query (see the head of the file); 0 when nothing matches. */
function titleTier(
  q: string,
  qWords: string[],
  title: string,
  aliases: string[],
  keywords: string[],
): number {
  const rest = withoutCategory(title);
  const titleWords = words(title);
  if (title === q || rest === q || aliases.includes(q)) return 1000;
  if (title.startsWith(q)) return 900;
  if (rest?.startsWith(q)) return 880;
  // Every word starting a word of the title; the words together as typed ("share group" in "Create
  // a share group") a little more.
  if (qWords.length > 0 && qWords.every((w) => titleWords.some((tw) => tw.startsWith(w))))
    return qWords.length > 1 && title.includes(q) ? 850 : 800;
  if (aliases.some((a) => a.startsWith(q))) return 750;
  if (title.includes(q)) return 700;
  if (aliases.some((a) => a.includes(q) || words(a).some((w) => w.startsWith(q)))) return 650;
  if (qWords.length > 1 && qWords.every((w) => title.includes(w))) return 600;
  if (keywords.includes(q)) return 550;
  if (keywords.some((k) => k.startsWith(q))) return 500;
  if (keywords.some((k) => k.includes(q))) return 400;
  if (
    qWords.length > 1 &&
    qWords.every(
      (w) => title.includes(w) || keywords.some((k) => k.startsWith(w)) || aliases.some((a) => a.includes(w)),
    )
  )
    return 350;
  // Slips of the fingers: every word of the query is a word of the title (or an alias) but for one
  // swapped, missing, extra or wrong letter; the title's words count a little more.
  const aliasWords = aliases.flatMap(words);
  const near = (pool: string[]) =>
    qWords.length > 0 && qWords.every((w) => pool.some((tw) => tw.startsWith(w) || typoOf(w, tw)));
  if (qWords.some((w) => w.length >= 4)) {
    if (titleWords.length && near(titleWords.slice(0, 1)) && qWords.length === 1) return 330;
    if (near(titleWords)) return 320;
    if (near(aliasWords) || near(keywords.flatMap(words))) return 300;
  }
  const f = fuzzy(title, q);
  if (f >= 0 && q.length >= 2) return 100 + Math.round(f * 90);
  const fk = Math.max(-1, ...keywords.map((k) => fuzzy(k, q)));
  if (fk >= 0.5 && q.length >= 3) return 20 + Math.round(fk * 40);
  return 0;
}

/** The tier from which the query names the title itself (every word starts a word of it). */
export const TITLE_WORDS = 800;

/** What a destructive command (delete, sign out) loses against a harmless one that matches as well. */
export const DESTRUCTIVE_PENALTY = 30;

/**
 * The command's score for the query and the length of the title that matched (ties go to the shorter);
 * score 0 means it does not match and is not shown. Its other titles (the English one while the
 * console speaks zh or ja) are scored as titles too, so an English word ranks the same in every language.
 */
function scoreWithLength(query: string, c: RankInput, env: RankEnv): { score: number; len: number } {
  const q = normalize(query);
  const bonus = contextBonus(c, env);
  if (!q) return { score: 1 + bonus, len: c.title.length };
  const aliases = (c.aliases ?? []).map(normalize).filter(Boolean);
  const keywords = (c.keywords ?? []).map(normalize).filter(Boolean);
  const qWords = words(q);
  let base = 0;
  let len = c.title.length;
  for (const title of [c.title, ...(c.titles ?? [])]) {
    const tier = titleTier(q, qWords, normalize(title), aliases, keywords);
    if (tier > base) {
      base = tier;
      len = title.length;
    }
  }
  if (base === 0) return { score: 0, len };
  // Matched by an alias or a keyword, the same in every language: ties go by the English title's
  // length (the last title), so the first row is the same whatever the console speaks.
  if (c.titles?.length && titleTier(q, qWords, '', aliases, keywords) === base)
    len = c.titles[c.titles.length - 1].length;
  return { score: Math.max(1, base + bonus - (c.destructive ? DESTRUCTIVE_PENALTY : 0)), len };
}

/** The command's score for the query; 0 means it does not match and is not shown. */
export function scoreCommand(query: string, c: RankInput, env: RankEnv = {}): number {
  return scoreWithLength(query, c, env).score;
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
    .map((c, i) => ({ c, i, ...scoreWithLength(query, c, env) }))
    .map((x) => ({ ...x, s: x.score }))
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
