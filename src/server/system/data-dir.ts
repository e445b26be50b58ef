// The data directory is the service's own: its database (PGlite's files, whose write-ahead log holds
// the sign-in key pair and the provider's cookie keys), avatars and anything else it keeps. Everything
// in it is private to the service's user — files 0600, directories 0700, group and other bits
// removed — with three exceptions:
//   - the data directory itself is 0711, so that board sandboxes (which run as their own host uids)
//     can pass through it to their roots without being able to list it;
//   - `<data>/boards` is 0711 for the same reason, and nothing below it is touched here: the sandbox
//     code sets the modes of each board's files;
//   - the plugins directory, when it lies in the data directory, is left as it is (0755 when made
//     here): its executables run inside the boards, as the boards' uids, which must read them.
//
// The process runs with umask 077 (main.ts) and the code that writes here passes private modes, but
// PGlite (Emscripten's file system) creates its files 0666 whatever the umask, and a data directory
// from an older version has world-readable files: `secureDataDir` runs at start, again once the
// database is open, and at stop. It never follows a symbolic link and never changes a file through
// one (links are left as they are, with whatever they point at), nor a file with several hard links.
import fs from 'node:fs';
import path from 'node:path';

export const DATA_DIR_MODE = 0o711;
export const BOARDS_DIR_MODE = 0o711;
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
export const PLUGINS_DIR_MODE = 0o755;

export interface DataDirOptions {
  /** The plugins directory (BIANBU_PLUGINS_DIR or `<data>/plugins`): left alone when inside the data dir. */
  pluginsDir?: string;
  /** Told about entries left as they were (several hard links) and modes that could not be set. */
  warn?: (msg: string, detail: Record<string, unknown>) => void;
}

export interface SecureReport {
  /** Entries whose mode was changed. */
  changed: number;
  /** Entries examined. */
  seen: number;
}

const { O_RDONLY, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = fs.constants;

/**
 * Sets the mode of `p` without following a symbolic link: opened with O_NOFOLLOW, checked to be the
 * entry `lstat` saw, changed with fchmod. Answers whether the mode changed.
 */
function setModeNoFollow(p: string, seen: fs.Stats, mode: number): boolean {
  if ((seen.mode & 0o7777) === mode) return false;
  let fd: number;
  try {
    fd = fs.openSync(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (seen.isDirectory() ? O_DIRECTORY : 0));
  } catch (err) {
    // A file the owner may not read (mode 0000, say) cannot be opened to fchmod it; it was no
    // symbolic link a moment ago (lstat), and the directory it is in belongs to the service.
    if ((err as NodeJS.ErrnoException).code !== 'EACCES') throw err;
    fs.chmodSync(p, mode);
    return true;
  }
  try {
    const now = fs.fstatSync(fd);
    if (now.ino !== seen.ino || now.dev !== seen.dev) return false;
    fs.fchmodSync(fd, mode);
    return true;
  } finally {
    fs.closeSync(fd);
  }
}

/** The private mode of an entry: directories 0700, files 0600 keeping the owner's execute bit. */
function privateMode(st: fs.Stats): number {
  if (st.isDirectory()) return PRIVATE_DIR_MODE;
  return (st.mode & 0o100) | PRIVATE_FILE_MODE;
}

/**
 * Creates the data directory when missing and makes everything in it private (see the header).
 * Idempotent; cheap enough to run at every start (one lstat per entry, a chmod only where needed).
 */
export function secureDataDir(dataDir: string, opts: DataDirOptions = {}): SecureReport {
  const report: SecureReport = { changed: 0, seen: 0 };
  const apply = (p: string, st: fs.Stats, mode: number) => {
    try {
      if (setModeNoFollow(p, st, mode)) report.changed++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // removed meanwhile
      opts.warn?.('data directory entry mode not set', { path: p, error: (err as Error).message });
    }
  };
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  // The configured location may itself be a link (./data → /srv/bianbu): the directory it names is
  // the data directory. Below it, links are never followed.
  const root = fs.realpathSync(dataDir);
  const rootStat = fs.lstatSync(root);
  apply(root, rootStat, DATA_DIR_MODE);

  // Made here with their modes (mkdir's mode passes through the umask: set exactly afterwards).
  const boards = path.join(root, 'boards');
  if (!lexists(boards)) fs.mkdirSync(boards, { mode: BOARDS_DIR_MODE });
  const boardsStat = fs.lstatSync(boards);
  if (boardsStat.isDirectory()) apply(boards, boardsStat, BOARDS_DIR_MODE);

  const skip = new Set([boards]);
  const pluginsRel = path.relative(path.resolve(dataDir), path.resolve(opts.pluginsDir ?? path.join(dataDir, 'plugins')));
  if (pluginsRel && !pluginsRel.startsWith('..') && !path.isAbsolute(pluginsRel)) {
    const plugins = path.join(root, pluginsRel);
    skip.add(plugins);
    if (path.dirname(plugins) === root && !lexists(plugins)) {
      fs.mkdirSync(plugins, { mode: PLUGINS_DIR_MODE });
      apply(plugins, fs.lstatSync(plugins), PLUGINS_DIR_MODE);
    }
  }

  const walk = (dir: string) => {
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch (err) {
      opts.warn?.('data directory entry not readable', { path: dir, error: (err as Error).message });
      return;
    }
    for (const name of names) {
      const p = path.join(dir, name);
      if (skip.has(p)) continue;
      const st = fs.lstatSync(p, { throwIfNoEntry: false });
      if (!st) continue; // gone meanwhile (a database file removed by the running database)
      report.seen++;
      if (st.isSymbolicLink()) continue;
      if (!st.isDirectory() && !st.isFile()) continue; // sockets, FIFOs: nothing to open safely
      if (st.isFile() && st.nlink > 1) {
        opts.warn?.('data directory file with several hard links left as it is', { path: p });
        continue;
      }
      apply(p, st, privateMode(st));
      if (st.isDirectory()) walk(p);
    }
  };
  walk(root);
  return report;
}

/** Whether anything (a dangling link too) is at `p`. */
function lexists(p: string): boolean {
  return fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;
}
