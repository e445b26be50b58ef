// Sizes, times and Unix modes as the tree shows them, through Intl in the console's language.
import type { FileEntryDto } from '#shared/files.ts';

const UNITS = ['byte', 'kilobyte', 'megabyte', 'gigabyte', 'terabyte'] as const;

export function formatSize(bytes: number, lng: string): string {
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  // Intl's short "byte" unit reads as a word ("27 byte"); a plain B matches kB, MB beside it.
  if (i === 0) return `${new Intl.NumberFormat(lng).format(v)} B`;
  return new Intl.NumberFormat(lng, {
    style: 'unit',
    unit: UNITS[i],
    unitDisplay: 'short',
    maximumFractionDigits: i === 0 ? 0 : 1,
  }).format(v);
}

export function formatTime(ms: number, lng: string): string {
  return new Intl.DateTimeFormat(lng, { dateStyle: 'short', timeStyle: 'short' }).format(new Date(ms));
}

const TYPE_CHAR: Record<FileEntryDto['type'], string> = { dir: 'd', file: '-', symlink: 'l', other: '?' };

/** `drwxr-xr-x` from the mode bits, with setuid/setgid/sticky shown the way `ls` does. */
export function modeString(mode: number, type: FileEntryDto['type']): string {
  const rwx = (bits: number, special: boolean, ch: string) =>
    `${bits & 4 ? 'r' : '-'}${bits & 2 ? 'w' : '-'}${special ? (bits & 1 ? ch : ch.toUpperCase()) : bits & 1 ? 'x' : '-'}`;
  return (
    TYPE_CHAR[type] +
    rwx((mode >> 6) & 7, (mode & 0o4000) !== 0, 's') +
    rwx((mode >> 3) & 7, (mode & 0o2000) !== 0, 's') +
    rwx(mode & 7, (mode & 0o1000) !== 0, 't')
  );
}

export function percent(loaded: number, total?: number): number | null {
  if (!total) return null;
  return Math.min(100, Math.round((loaded / total) * 100));
}
