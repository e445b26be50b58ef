// Completion of a board folder path typed in the palette ("Go to folder…"): the folder part of the text
// is listed on the board, its subfolders whose names start with the last part are offered, closest
// first. Relative text is taken from the tree's root, as a shell takes it from the working directory.
import { normalizeBoardPath } from '#shared/files.ts';
import type { PaletteOption } from '#web/commands/registry.ts';
import { listDir } from './api.ts';

/** The most completions offered at once (a folder may hold thousands). */
export const MAX_COMPLETIONS = 50;

/** Splits typed text into the folder to list (absolute) and the name prefix, or null when it climbs out. */
export function completionTarget(root: string, typed: string): { dir: string; prefix: string } | null {
  const text = typed.trim();
  const slash = text.lastIndexOf('/');
  const dirPart = slash === -1 ? '' : text.slice(0, slash + 1);
  const prefix = text.slice(slash + 1);
  const dir = normalizeBoardPath(dirPart || (text.startsWith('/') ? '/' : '.'), root);
  return dir === null ? null : { dir, prefix };
}

/** Folder names that complete `prefix`: exact case first, then by name; at most MAX_COMPLETIONS. */
export function matchFolders(names: readonly string[], prefix: string): string[] {
  const lower = prefix.toLowerCase();
  const hit = names.filter(
    (n) => n.toLowerCase().startsWith(lower) && (prefix.startsWith('.') || !n.startsWith('.')),
  );
  const rank = (n: string) => (n.startsWith(prefix) ? 0 : 1);
  return hit.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).slice(0, MAX_COMPLETIONS);
}

export async function completeFolder(applyId: string, root: string, typed: string): Promise<PaletteOption[]> {
  const target = completionTarget(root, typed);
  if (!target) return [];
  let listed: Awaited<ReturnType<typeof listDir>>;
  try {
    listed = await listDir(applyId, target.dir);
  } catch {
    return [];
  }
  const folders = listed.entries.filter((e) => e.type === 'dir' || e.type === 'symlink').map((e) => e.name);
  const base = listed.path === '/' ? '' : listed.path;
  return matchFolders(folders, target.prefix).map((name) => ({
    value: `${base}/${name}/`,
    label: `${base}/${name}/`,
  }));
}
