// The journal of a board's temporary upload files. A write or upload lands in a temporary file beside
// its target and is renamed into place when complete; a service killed in between (kill -9, a crash)
// would leave that file on the board for good. So each temporary path is written to this host-side
// journal before the file is created and taken out after the commit or abort; at the next driver start
// `sweep()` removes the files a previous run left behind.
//
// The journal is a small JSON file on the host, in a directory only the service writes (the caller
// chooses it, e.g. `<data>/boards/<id>/uploads.journal`). It is replaced atomically: written to a new
// file (mode 0600, created exclusively, never through a symlink) and renamed over the old one, so a
// crash mid-write leaves the old or the new list, never half of one. It survives the death of the
// service process; a power loss may lose its last change (no fsync): at worst a temporary file stays.
//
// The board side is hostile: by the time of the sweep a journalled path may have been replaced by a
// symlink (pointing anywhere), a directory or some other file. The sweep removes a path only when
// lstat says it is a regular file, its name has the shape of our temporary names and its directory
// resolves to itself (no symlink on the way); anything else is left alone and forgotten.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { SFTPWrapper, Stats } from 'ssh2';
import { isType, S_IFREG, sftpCall, statusOf } from './sftp-errors.ts';

/** `.<name>.<12 hex>.tmp`: the temporary file of a write to `<name>`, beside it. */
const TEMP_NAME = /^\..+\.[0-9a-f]{12}\.tmp$/s;
const FORMAT = 1;

export const isTempName = (name: string) => TEMP_NAME.test(name);

/** A fresh temporary path beside `target` (a server-side path), on the same filesystem as it. */
export function tempPathBeside(target: string): string {
  const name = `.${path.posix.basename(target).slice(0, 200)}.${crypto.randomBytes(6).toString('hex')}.tmp`;
  return path.posix.join(path.posix.dirname(target), name);
}

/** The SFTP session itself failed (as opposed to a status answer about the file). */
const sessionLost = (err: unknown) => typeof statusOf(err) !== 'number';

export interface SweepResult {
  /** Temporary files found and removed. */
  removed: string[];
  /** Journalled paths left alone: gone already, not a regular file, not a temporary name, or moved. */
  skipped: string[];
  /** Kept in the journal for a later sweep: the session failed while they were looked at. */
  kept: string[];
}

export class TempJournal {
  /** Temporary files of this process's transfers in progress. */
  private readonly active = new Set<string>();
  /** Entries found in the file (a previous run's), not yet swept. */
  private stale = new Set<string>();
  private loaded: Promise<void> | null = null;
  private chain: Promise<void> = Promise.resolve();
  private version = 0;
  private written = 0;

  constructor(readonly file: string) {}

  /** Records `tempPath` (as the SFTP server names it); resolves once the journal on disk holds it. */
  async add(tempPath: string): Promise<void> {
    await this.load();
    this.active.add(tempPath);
    await this.persist();
  }

  /** Forgets `tempPath` after its commit or removal. */
  async remove(tempPath: string): Promise<void> {
    await this.load();
    if (!this.active.delete(tempPath) && !this.stale.delete(tempPath)) return;
    await this.persist();
  }

  /** Every journalled path: this process's transfers and those a previous run left. */
  async entries(): Promise<string[]> {
    await this.load();
    return [...new Set([...this.stale, ...this.active])];
  }

  /**
   * Removes the temporary files a previous run left behind (entries of transfers running in this
   * process are not touched) and empties the journal of them.
   */
  async sweep(sftp: SFTPWrapper): Promise<SweepResult> {
    await this.load();
    const result: SweepResult = { removed: [], skipped: [], kept: [] };
    for (const p of [...this.stale]) {
      if (this.active.has(p)) {
        this.stale.delete(p);
        continue;
      }
      const outcome = await this.sweepOne(sftp, p);
      result[outcome].push(p);
      if (outcome !== 'kept') this.stale.delete(p);
    }
    await this.persist();
    return result;
  }

  private async sweepOne(sftp: SFTPWrapper, p: string): Promise<keyof SweepResult> {
    const dir = path.posix.dirname(p);
    if (!path.posix.isAbsolute(p) || !isTempName(path.posix.basename(p))) return 'skipped';
    try {
      // A directory on the way swapped for a symlink would move the name elsewhere: leave it.
      if ((await sftpCall<string>((cb) => sftp.realpath(dir, cb))) !== dir) return 'skipped';
      const st = await sftpCall<Stats>((cb) => sftp.lstat(p, cb));
      if (!isType(st.mode, S_IFREG)) return 'skipped';
      await sftpCall<void>((cb) => sftp.unlink(p, (err) => cb(err, undefined)));
      return 'removed';
    } catch (err) {
      return sessionLost(err) ? 'kept' : 'skipped';
    }
  }

  private load(): Promise<void> {
    this.loaded ??= (async () => {
      let text: string;
      try {
        const fh = await fs.promises.open(this.file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
        try {
          text = await fh.readFile('utf8');
        } finally {
          await fh.close();
        }
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      try {
        const data = JSON.parse(text) as { format?: number; temps?: unknown };
        if (data.format === FORMAT && Array.isArray(data.temps)) {
          for (const t of data.temps) if (typeof t === 'string') this.stale.add(t);
        }
      } catch {
        // A journal that does not parse names nothing we could safely remove.
      }
    })();
    return this.loaded;
  }

  /** Writes the current set; concurrent changes share one write when they can. */
  private persist(): Promise<void> {
    const want = ++this.version;
    const run = this.chain.then(async () => {
      if (this.written >= want) return;
      const v = this.version;
      await this.writeFile([...new Set([...this.stale, ...this.active])]);
      this.written = v;
    });
    this.chain = run.catch(() => {});
    return run;
  }

  private async writeFile(temps: string[]): Promise<void> {
    const next = `${this.file}.${crypto.randomBytes(6).toString('hex')}.new`;
    const fh = await fs.promises.open(
      next,
      fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW,
      0o600,
    );
    try {
      await fh.writeFile(JSON.stringify({ format: FORMAT, temps }));
      await fh.close();
      await fs.promises.rename(next, this.file);
    } catch (err) {
      await fh.close().catch(() => {});
      await fs.promises.rm(next, { force: true });
      throw err;
    }
  }
}
