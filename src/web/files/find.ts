// "Open file…" (Ctrl+P) and "Download…": the board's files offered as the user types, like VS Code's
// quick open. A bounded walk of the board from the tree's folder (folders nearest first, system and
// build folders left out) makes an index kept for a while per apply; typed text is matched against
// it (name first, then the path, letters in order). Text with a slash lists that folder instead, as
// "Go to folder…" does.
import type { FileEntryDto } from '#shared/files.ts';
import { normalize } from '#web/commands/rank.ts';
import type { PaletteOption } from '#web/commands/registry.ts';
import { listDir } from './api.ts';
import { completionTarget } from './complete.ts';

/** Bounds of one walk: folders listed, entries kept, depth below the start, listings at once. */
export const WALK = { folders: 80, entries: 5000, depth: 6, parallel: 4 } as const;
/** How long an index is used before the board is walked again (ms). */
export const INDEX_TTL_MS = 60_000;
export const MAX_MATCHES = 50;

/** Folders not worth walking: the kernel's, devices, caches, version control and dependencies. */
const SKIP = new Set([
  'proc',
  'sys',
  'dev',
  'run',
  'tmp',
  'lost+found',
  'node_modules',
  '.git',
  '.cache',
  '__pycache__',
  'snap',
]);
const SKIP_PATHS = new Set([
  '/proc',
  '/sys',
  '/dev',
  '/run',
  '/var/lib',
  '/var/cache',
  '/usr/lib',
  '/usr/share',
  '/usr/include',
  '/usr/src',
  '/boot',
  '/lib',
  '/lib64',
  '/usr/lib64',
  '/bin',
  '/sbin',
  '/usr/bin',
  '/usr/sbin',
]);

export type Lister = (path: string) => Promise<{ path: string; entries: FileEntryDto[] }>;

/**
 * Walks from `start` breadth first (home folders and the starting folder's own first), listing at
 * most WALK.folders folders; answers every entry seen.
 */
export async function walkBoard(
  list: Lister,
  start: string,
  first: readonly string[] = [],
): Promise<FileEntryDto[]> {
  const out: FileEntryDto[] = [];
  const seen = new Set<string>();
  const queue: { path: string; depth: number }[] = [];
  const push = (path: string, depth: number) => {
    if (seen.has(path) || SKIP_PATHS.has(path)) return;
    seen.add(path);
    queue.push({ path, depth });
  };
  for (const p of first) push(p, 0);
  push(start, 0);
  let listed = 0;
  while (queue.length && listed < WALK.folders && out.length < WALK.entries) {
    const batch = queue.splice(0, Math.min(WALK.parallel, WALK.folders - listed));
    listed += batch.length;
    const results = await Promise.all(
      batch.map((b) =>
        list(b.path).then(
          (r) => ({ b, r }),
          () => null,
        ),
      ),
    );
    for (const res of results) {
      if (!res) continue;
      for (const e of res.r.entries) {
        out.push(e);
        if (e.type === 'dir' && res.b.depth < WALK.depth && !SKIP.has(e.name)) push(e.path, res.b.depth + 1);
      }
    }
  }
  return out.slice(0, WALK.entries);
}

/** Letters of `q` in order in `s`: higher when closer together; -1 when not all there. */
function inOrder(s: string, q: string): number {
  let pos = -1;
  let first = -1;
  for (const ch of q) {
    pos = s.indexOf(ch, pos + 1);
    if (pos < 0) return -1;
    if (first < 0) first = pos;
  }
  return q.length / (pos - first + 1);
}

/** How well typed text names an entry (0: not at all): name exact, prefix, piece, path piece, letters. */
export function fileScore(typed: string, e: Pick<FileEntryDto, 'path' | 'name'>): number {
  const q = normalize(typed).replace(/\s+/g, '');
  if (!q) return 1;
  const name = e.name.toLowerCase();
  const path = e.path.toLowerCase();
  if (name === q) return 1000;
  if (name.startsWith(q)) return 900 - name.length;
  if (name.includes(q)) return 800 - name.length;
  if (path.includes(q)) return 700 - path.length / 10;
  const n = inOrder(name, q);
  if (n >= 0) return 400 + n * 100;
  const p = inOrder(path, q);
  if (p >= 0 && q.length >= 3) return 100 + p * 100;
  return 0;
}

/** The entries matching typed text, best first (files before folders among equals), at most MAX_MATCHES. */
export function matchFiles(
  typed: string,
  entries: readonly FileEntryDto[],
  kinds: 'files' | 'any',
): FileEntryDto[] {
  return entries
    .filter((e) => (kinds === 'files' ? e.type === 'file' || e.type === 'symlink' : true))
    .map((e) => ({ e, s: fileScore(typed, e) }))
    .filter((x) => x.s > 0)
    .sort(
      (a, b) =>
        b.s - a.s ||
        Number(a.e.type === 'dir') - Number(b.e.type === 'dir') ||
        a.e.path.length - b.e.path.length,
    )
    .slice(0, MAX_MATCHES)
    .map((x) => x.e);
}

const indexes = new Map<string, { at: number; root: string; entries: Promise<FileEntryDto[]> }>();

/** The walked index of an apply's board from `root` (walked again when old or from another folder). */
export function boardIndex(
  applyId: string,
  root: string,
  first: readonly string[] = [],
): Promise<FileEntryDto[]> {
  const have = indexes.get(applyId);
  if (have && have.root === root && Date.now() - have.at < INDEX_TTL_MS) return have.entries;
  const entries = walkBoard((p) => listDir(applyId, p), root, first);
  indexes.set(applyId, { at: Date.now(), root, entries });
  entries.catch(() => indexes.delete(applyId));
  return entries;
}

/** Forgets an apply's index (a file was created, renamed or deleted through the console). */
export function forgetIndex(applyId: string): void {
  indexes.delete(applyId);
}

function optionOf(e: FileEntryDto): PaletteOption {
  const dir = e.path.slice(0, e.path.lastIndexOf('/')) || '/';
  return {
    value: e.type === 'dir' ? `${e.path}/` : e.path,
    label: e.type === 'dir' ? `${e.name}/` : e.name,
    detail: dir,
  };
}

/**
 * Completions for "Open file…" / "Download…": with a slash in the text, the entries of the folder it
 * names starting with its last part; else the index's matches (plus `known` entries already listed).
 */
export async function completeFiles(
  applyId: string,
  root: string,
  typed: string,
  known: readonly FileEntryDto[],
  kinds: 'files' | 'any',
): Promise<PaletteOption[]> {
  const text = typed.trim();
  if (text.includes('/')) {
    const target = completionTarget(root, text);
    if (!target) return [];
    try {
      const listed = await listDir(applyId, target.dir);
      const lower = target.prefix.toLowerCase();
      return listed.entries
        .filter(
          (e) => e.name.toLowerCase().startsWith(lower) && (lower.startsWith('.') || !e.name.startsWith('.')),
        )
        .sort((a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name))
        .slice(0, MAX_MATCHES)
        .map((e) => ({ ...optionOf(e), label: optionOf(e).value }));
    } catch {
      return [];
    }
  }
  const home = ['/root', '/home'];
  const walked = await boardIndex(applyId, root, root === '/' ? home : []).catch(() => [] as FileEntryDto[]);
  const byPath = new Map<string, FileEntryDto>();
  for (const e of [...known, ...walked]) byPath.set(e.path, e);
  return matchFiles(text, [...byPath.values()], kinds).map(optionOf);
}
