// A real board reached over SSH. Lifecycle: `start()` only prepares the pool (an unreachable board
// must not hold up the service; the health prober finds out), every call takes a pooled connection
// and has a timeout. Shell: an SSH PTY. Files: SFTP, resolved with the server's realpath and kept
// inside the configured root by comparing path components. Metrics: /proc over an exec channel.
// Serial console, power reset, flash, reimage and plugins: argv commands from the lab file, quoted for
// the remote shell.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Duplex, Readable, Writable } from 'node:stream';
import type { ClientChannel, FileEntryWithStats, SFTPWrapper, Stats } from 'ssh2';
import type { SshDriverOptions } from '#shared/boards.ts';
import {
  type BoardDriver,
  Capability,
  DriverError,
  type FileEntry,
  type FlashProgress,
  type MetricsSample,
  type PtyHandle,
  type PtySize,
} from '../driver.ts';
import { boardPathOf, isWithin, normaliseBoardPath } from '../paths.ts';
import { withTimeout } from '../util.ts';
import { SshPool } from './pool.ts';
import { shCommand, shQuote } from './quote.ts';

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const DEFAULT_READ_MAX = 16 * 1024 * 1024;

export interface SshBoardInit {
  boardId: string;
  name: string;
  options: SshDriverOptions;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
}

function typeOf(mode: number): FileEntry['type'] {
  const t = mode & S_IFMT;
  return t === S_IFDIR ? 'dir' : t === S_IFREG ? 'file' : t === S_IFLNK ? 'symlink' : 'other';
}

/** SFTP status codes (draft-ietf-secsh-filexfer) to our keys. */
function sftpError(err: unknown, p: string): DriverError {
  if (err instanceof DriverError) return err;
  const code = (err as { code?: number }).code;
  if (code === 2) return new DriverError('path.not_found', `No such file: ${p}`);
  if (code === 3) return new DriverError('path.denied', `Not permitted: ${p}`);
  return new DriverError('driver.failed', `${(err as Error).message} (${p})`);
}

function sftpCall<T>(fn: (cb: (err: Error | null | undefined, v: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

export class SshDriver implements BoardDriver {
  readonly kind = 'ssh' as const;
  readonly boardId: string;
  private readonly pool: SshPool;
  private readonly o: SshDriverOptions;
  private rootReal: string | null = null;
  private lastCpu: { busy: number; total: number } | null = null;
  private readonly open = new Set<ClientChannel>();
  readonly files: BoardDriver['files'];

  constructor(init: SshBoardInit) {
    this.boardId = init.boardId;
    this.o = init.options;
    this.pool = new SshPool(init.options, init.log);
    this.files = this.makeFiles();
  }

  capabilities(): ReadonlySet<Capability> {
    const c = this.o.commands ?? {};
    return new Set<Capability>([
      Capability.shell,
      Capability.files,
      Capability.metrics,
      Capability.vnc,
      Capability.codeServer,
      ...(c.serial ? [Capability.serial] : []),
      ...(c.powerReset ? [Capability.powerReset] : []),
      ...(c.flash ? [Capability.flash] : []),
      ...(c.plugin ? [Capability.plugin] : []),
    ]);
  }

  private need(cap: Capability, what: string): string[] {
    const c = this.o.commands ?? {};
    const argv = { serial: c.serial, powerReset: c.powerReset, flash: c.flash, plugin: c.plugin }[cap as string];
    if (!argv) throw new DriverError('capability.unsupported', `This board has no ${what} command configured`);
    return argv;
  }

  async start(): Promise<void> {
    this.pool.reopen();
  }

  async stop(): Promise<void> {
    for (const ch of this.open) ch.close();
    this.open.clear();
    this.pool.close();
  }

  async probe(timeoutMs = 3000): Promise<void> {
    const r = await this.exec('true', Math.min(timeoutMs, this.o.timeoutMs));
    if (r.code !== 0) throw new DriverError('driver.failed', 'The board did not run a trivial command');
  }

  /** Runs one command line (already quoted) and collects its output. `code` is null when the channel dropped. */
  exec(command: string, timeoutMs = this.o.timeoutMs, maxBytes = 4 * 1024 * 1024): Promise<{ code: number | null; stdout: string; stderr: string }> {
    let channel: ClientChannel | undefined;
    const work = this.pool.with(
      (c) =>
        new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
          c.client.exec(command, (err, ch) => {
            if (err) return reject(new DriverError('driver.failed', `exec failed: ${err.message}`));
            channel = ch;
            let out = '';
            let errText = '';
            let code: number | null = null;
            ch.on('data', (b: Buffer) => {
              if (out.length < maxBytes) out += b.toString();
            });
            ch.stderr.on('data', (b: Buffer) => {
              if (errText.length < 65536) errText += b.toString();
            });
            ch.on('exit', (c2: number | null) => {
              code = c2;
            });
            ch.on('close', () => resolve({ code, stdout: out, stderr: errText }));
          });
        }),
    );
    return withTimeout(work, timeoutMs, 'board command', () => channel?.close());
  }

  private async runArgv(argv: string[], timeoutMs = this.o.timeoutMs): Promise<string> {
    const r = await this.exec(shCommand(argv), timeoutMs);
    if (r.code !== 0) throw new DriverError('driver.command_failed', r.stderr.trim().slice(-500) || `exit code ${r.code}`);
    return r.stdout;
  }

  private channelHandle(ch: ClientChannel, release: () => void): PtyHandle {
    this.open.add(ch);
    let closed = false;
    const exits: Array<(i: { exitCode: number | null; reason?: string }) => void> = [];
    let exitCode: number | null = null;
    ch.on('exit', (code: number | null) => {
      exitCode = code;
    });
    ch.on('close', () => {
      closed = true;
      this.open.delete(ch);
      release();
      for (const fn of exits) fn({ exitCode, reason: exitCode === null ? 'connection closed' : undefined });
    });
    return {
      write: (d) => {
        if (!closed) ch.write(d);
      },
      resize: (s) => {
        if (!closed) ch.setWindow(s.rows, s.cols, 0, 0);
      },
      onData: (fn) => {
        ch.on('data', fn);
        ch.stderr.on('data', fn);
        return () => {
          ch.off('data', fn);
          ch.stderr.off('data', fn);
        };
      },
      onExit: (fn) => {
        exits.push(fn);
        return () => {
          const i = exits.indexOf(fn);
          if (i >= 0) exits.splice(i, 1);
        };
      },
      // Not reading the channel stops the SSH window from growing: the remote program blocks.
      pause: () => ch.pause(),
      resume: () => ch.resume(),
      close: () => {
        if (!closed) ch.close();
      },
    };
  }

  async openShell(size: PtySize, env: Record<string, string> = {}): Promise<PtyHandle> {
    const { conn, release } = await this.pool.hold();
    try {
      const ch = await withTimeout(
        new Promise<ClientChannel>((resolve, reject) =>
          conn.client.shell({ term: env.TERM ?? 'xterm-256color', cols: size.cols, rows: size.rows }, { env }, (err, s) =>
            err ? reject(new DriverError('driver.failed', `shell refused: ${err.message}`)) : resolve(s),
          ),
        ),
        this.o.timeoutMs,
        'shell open',
      );
      return this.channelHandle(ch, release);
    } catch (err) {
      release();
      throw err;
    }
  }

  async openSerial(size: PtySize): Promise<PtyHandle> {
    const argv = this.need(Capability.serial, 'serial console');
    const { conn, release } = await this.pool.hold();
    try {
      const ch = await withTimeout(
        new Promise<ClientChannel>((resolve, reject) =>
          conn.client.exec(shCommand(argv), { pty: { term: 'xterm-256color', cols: size.cols, rows: size.rows } }, (err, s) =>
            err ? reject(new DriverError('driver.failed', `serial console refused: ${err.message}`)) : resolve(s),
          ),
        ),
        this.o.timeoutMs,
        'serial open',
      );
      return this.channelHandle(ch, release);
    } catch (err) {
      release();
      throw err;
    }
  }

  // ---- files ----------------------------------------------------------------------------------

  private async root(sftp: SFTPWrapper): Promise<string> {
    this.rootReal ??= await sftpCall<string>((cb) => sftp.realpath(this.o.rootDir, cb)).catch((err) => {
      throw new DriverError('driver.failed', `The board's root directory is not usable: ${(err as Error).message}`);
    });
    return this.rootReal;
  }

  private toBoard(root: string, real: string): string {
    return boardPathOf(path.posix.relative(root, real).split('/').filter(Boolean));
  }

  /** The server's realpath of an existing board path, refused unless inside the root. */
  private async real(sftp: SFTPWrapper, p: string): Promise<{ real: string; board: string }> {
    const comps = normaliseBoardPath(p);
    const root = await this.root(sftp);
    const real = await sftpCall<string>((cb) => sftp.realpath(path.posix.join(root, ...comps), cb)).catch((err) => {
      throw sftpError(err, boardPathOf(comps));
    });
    if (!isWithin(root, real)) throw new DriverError('path.outside_root', 'Path leaves the board root');
    // realpath of a missing file may still answer; existence is checked by the operation itself.
    return { real, board: this.toBoard(root, real) };
  }

  /** The resolved parent directory and the final name (not followed). */
  private async parentOf(sftp: SFTPWrapper, p: string): Promise<{ real: string; board: string; name: string }> {
    const comps = normaliseBoardPath(p);
    if (!comps.length) throw new DriverError('path.invalid', 'The board root itself cannot be replaced');
    const parent = await this.real(sftp, boardPathOf(comps.slice(0, -1)));
    const name = comps[comps.length - 1];
    return { real: path.posix.join(parent.real, name), board: path.posix.join(parent.board, name), name };
  }

  private async lstatOrNull(sftp: SFTPWrapper, p: string): Promise<Stats | null> {
    return sftpCall<Stats>((cb) => sftp.lstat(p, cb)).catch(() => null);
  }

  /** Where a write lands: through a symlink at the final name (if it resolves inside), else the name. */
  private async writeTarget(sftp: SFTPWrapper, p: string): Promise<{ real: string; board: string; mode: number }> {
    const t = await this.parentOf(sftp, p);
    const st = await this.lstatOrNull(sftp, t.real);
    if (st && (st.mode & S_IFMT) === S_IFLNK) {
      const r = await this.real(sftp, p);
      const target = await this.lstatOrNull(sftp, r.real);
      if (target && (target.mode & S_IFMT) === S_IFDIR) throw new DriverError('path.is_a_directory', `Is a directory: ${r.board}`);
      return { ...r, mode: target ? target.mode & 0o7777 : 0o644 };
    }
    if (st && (st.mode & S_IFMT) === S_IFDIR) throw new DriverError('path.is_a_directory', `Is a directory: ${t.board}`);
    return { real: t.real, board: t.board, mode: st ? st.mode & 0o7777 : 0o644 };
  }

  private async renameOver(sftp: SFTPWrapper, from: string, to: string): Promise<void> {
    // posix-rename@openssh.com replaces the target in one step; plain SFTP rename refuses an existing one.
    await sftpCall<void>((cb) => sftp.ext_openssh_rename(from, to, (err) => cb(err, undefined))).catch(async (err) => {
      if (!/not supported/i.test(String((err as Error).message))) throw err;
      // Without the extension the replacement is not atomic: the old target goes first.
      await sftpCall<void>((cb) => sftp.unlink(to, () => cb(null, undefined)));
      await sftpCall<void>((cb) => sftp.rename(from, to, (e) => cb(e, undefined)));
    });
  }

  private t<T>(work: Promise<T>, what: string): Promise<T> {
    return withTimeout(work, this.o.timeoutMs, what);
  }

  private makeFiles(): BoardDriver['files'] {
    const entry = (name: string, board: string, a: Stats): FileEntry => ({
      name,
      path: board,
      type: typeOf(a.mode),
      size: Number(a.size),
      mtimeMs: a.mtime * 1000,
      mode: a.mode,
    });
    const removeTree = async (sftp: SFTPWrapper, dir: string): Promise<void> => {
      const list = await sftpCall<FileEntryWithStats[]>((cb) => sftp.readdir(dir, cb));
      for (const e of list) {
        const p = path.posix.join(dir, e.filename);
        if ((e.attrs.mode & S_IFMT) === S_IFDIR) await removeTree(sftp, p);
        else await sftpCall<void>((cb) => sftp.unlink(p, (err) => cb(err, undefined)));
      }
      await sftpCall<void>((cb) => sftp.rmdir(dir, (err) => cb(err, undefined)));
    };
    // Every call: one pooled SFTP session, the driver's timeout, and SFTP errors worded for the board path.
    const op = <T,>(what: string, fn: (sftp: SFTPWrapper) => Promise<T>) => this.t(this.pool.sftp().then(fn), what);
    const at = <T,>(board: string, call: Promise<T>) =>
      call.catch((err) => {
        throw sftpError(err, board);
      });
    // Temporary files sit beside their target so the final rename stays on one filesystem.
    const tmpBeside = (real: string) =>
      path.posix.join(path.posix.dirname(real), `.${path.posix.basename(real).slice(0, 200)}.${crypto.randomBytes(6).toString('hex')}.tmp`);
    return {
      list: (dir) =>
        op('list', async (sftp) => {
          const r = await this.real(sftp, dir);
          const list = await at(r.board, sftpCall<FileEntryWithStats[]>((cb) => sftp.readdir(r.real, cb)));
          return list
            .map((e) => entry(e.filename, path.posix.join(r.board, e.filename), e.attrs))
            .sort((a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name));
        }),
      stat: (p) =>
        op('stat', async (sftp) => {
          const comps = normaliseBoardPath(p);
          if (!comps.length) {
            const root = await this.root(sftp);
            return entry('/', '/', await sftpCall<Stats>((cb) => sftp.stat(root, cb)));
          }
          const t = await this.parentOf(sftp, p);
          const st = await at(t.board, sftpCall<Stats>((cb) => sftp.lstat(t.real, cb)));
          return entry(t.name, t.board, st);
        }),
      read: (p, maxBytes = DEFAULT_READ_MAX) =>
        op('read', async (sftp) => {
          const r = await this.real(sftp, p);
          const st = await at(r.board, sftpCall<Stats>((cb) => sftp.stat(r.real, cb)));
          if ((st.mode & S_IFMT) === S_IFDIR) throw new DriverError('path.is_a_directory', `Is a directory: ${r.board}`);
          if (Number(st.size) > maxBytes) throw new DriverError('file.too_large', `File is larger than ${maxBytes} bytes`);
          return at(r.board, sftpCall<Buffer>((cb) => sftp.readFile(r.real, cb)));
        }),
      write: (p, data) =>
        op('write', async (sftp) => {
          const t = await this.writeTarget(sftp, p);
          const tmp = tmpBeside(t.real);
          try {
            await sftpCall<void>((cb) => sftp.writeFile(tmp, data, { mode: t.mode, flag: 'wx' }, (err) => cb(err, undefined)));
            await this.renameOver(sftp, tmp, t.real);
          } catch (err) {
            await sftpCall<void>((cb) => sftp.unlink(tmp, () => cb(null, undefined)));
            throw sftpError(err, t.board);
          }
        }),
      remove: (p, opts) =>
        op('remove', async (sftp) => {
          const t = await this.parentOf(sftp, p);
          const st = await at(t.board, sftpCall<Stats>((cb) => sftp.lstat(t.real, cb)));
          try {
            if ((st.mode & S_IFMT) === S_IFDIR) {
              if (opts?.recursive) await removeTree(sftp, t.real);
              else await sftpCall<void>((cb) => sftp.rmdir(t.real, (err) => cb(err, undefined)));
            } else await sftpCall<void>((cb) => sftp.unlink(t.real, (err) => cb(err, undefined)));
          } catch (err) {
            const e = sftpError(err, t.board);
            throw e.key === 'driver.failed' ? new DriverError('path.exists', `Directory not empty: ${t.board}`) : e;
          }
        }),
      mkdir: (p) =>
        op('mkdir', async (sftp) => {
          const t = await this.parentOf(sftp, p);
          if (await this.lstatOrNull(sftp, t.real)) throw new DriverError('path.exists', `Already exists: ${t.board}`);
          await at(t.board, sftpCall<void>((cb) => sftp.mkdir(t.real, (err) => cb(err, undefined))));
        }),
      rename: (from, to) =>
        op('rename', async (sftp) => {
          const a = await this.parentOf(sftp, from);
          const b = await this.parentOf(sftp, to);
          await at(a.board, this.renameOver(sftp, a.real, b.real));
        }),
      readlink: (p) =>
        op('readlink', async (sftp) => {
          // The parent is resolved inside the root like every other call; the link itself is only read.
          const t = await this.parentOf(sftp, p);
          const st = await at(t.board, sftpCall<Stats>((cb) => sftp.lstat(t.real, cb)));
          if ((st.mode & S_IFMT) !== S_IFLNK) throw new DriverError('path.invalid', `Not a symbolic link: ${t.board}`);
          return at(t.board, sftpCall<string>((cb) => sftp.readlink(t.real, cb)));
        }),
      createReadStream: (p) =>
        this.t(
          (async (): Promise<Readable> => {
            const sftp = await this.pool.sftp();
            const r = await this.real(sftp, p);
            const st = await at(r.board, sftpCall<Stats>((cb) => sftp.stat(r.real, cb)));
            if ((st.mode & S_IFMT) === S_IFDIR) throw new DriverError('path.is_a_directory', `Is a directory: ${r.board}`);
            return sftp.createReadStream(r.real);
          })(),
          'read stream',
        ),
      createWriteStream: (p) =>
        op('write stream', async (sftp) => {
          const t = await this.writeTarget(sftp, p);
          const tmp = tmpBeside(t.real);
          const stream: Writable = sftp.createWriteStream(tmp, { flags: 'wx', mode: t.mode });
          // ssh2 emits 'close' only for a clean close (a stream destroyed with an error emits 'error'
          // instead), and its _final destroys the stream before 'finish', so end()'s callback may never
          // run: the handle's close is the one signal that every write landed.
          let failed: Error | null = null;
          const closed = new Promise<void>((res) => {
            stream.once('close', () => res());
            stream.once('error', (err) => {
              failed = err;
              res();
            });
          });
          return {
            stream,
            commit: async () => {
              if (!stream.writableEnded) stream.end();
              await closed;
              if (failed) throw sftpError(failed, t.board);
              await at(t.board, this.renameOver(sftp, tmp, t.real));
            },
            abort: async () => {
              stream.destroy();
              await closed;
              await sftpCall<void>((cb) => sftp.unlink(tmp, () => cb(null, undefined)));
            },
          };
        }),
      freeSpace: (p) =>
        op('free space', async (sftp) => {
          const r = await this.real(sftp, p);
          // ssh2 names the statvfs@openssh.com fields f_bavail, f_frsize, f_bsize.
          const v = await sftpCall<{ f_bavail: number; f_frsize: number; f_bsize: number }>((cb) => sftp.ext_openssh_statvfs(r.real, cb));
          return Number(v.f_bavail) * Number(v.f_frsize || v.f_bsize);
        }),
    };
  }

  // ---- metrics, power, flash, plugins -------------------------------------------------------

  async sampleMetrics(): Promise<MetricsSample> {
    const cmd = `cat /proc/stat; echo @@; cat /proc/meminfo; echo @@; cat /proc/net/dev; echo @@; df -Pk -- ${shQuote(this.o.rootDir)}`;
    const r = await this.exec(cmd);
    if (r.code !== 0) throw new DriverError('driver.command_failed', `metrics: ${r.stderr.trim().slice(-300)}`);
    const [stat, mem, net, df] = r.stdout.split('@@\n');
    const cpu = (stat ?? '').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
    const total = cpu.slice(0, 8).reduce((a, b) => a + (b || 0), 0);
    let cpuPercent = 0;
    if (this.lastCpu && total > this.lastCpu.total) {
      cpuPercent = ((total - idle - this.lastCpu.busy) / (total - this.lastCpu.total)) * 100;
    }
    this.lastCpu = { busy: total - idle, total };
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(mem ?? '')?.[1] ?? 0) * 1024;
    const memTotal = this.o.memoryMb ? this.o.memoryMb * 1024 * 1024 : kb('MemTotal');
    let rx = 0;
    let tx = 0;
    for (const line of (net ?? '').split('\n').slice(2)) {
      const m = /^\s*([^:]+):\s*(.*)$/.exec(line);
      if (!m || m[1].trim() === 'lo') continue;
      const f = m[2].trim().split(/\s+/);
      rx += Number(f[0]) || 0;
      tx += Number(f[8]) || 0;
    }
    const dfLine = (df ?? '').trim().split('\n')[1]?.trim().split(/\s+/) ?? [];
    return {
      at: Date.now(),
      cpuPercent: Math.round(Math.max(0, Math.min(100, cpuPercent)) * 100) / 100,
      memUsed: Math.max(0, kb('MemTotal') - kb('MemAvailable')),
      memTotal,
      diskUsed: Number(dfLine[2] ?? 0) * 1024,
      diskTotal: Number(dfLine[1] ?? 0) * 1024,
      netRx: rx,
      netTx: tx,
    };
  }

  async powerReset(): Promise<void> {
    const argv = this.need(Capability.powerReset, 'power reset');
    // A reset may take the connection it runs on down with the board: a dropped channel is success.
    const r = await this.exec(shCommand(argv)).catch((err) => {
      if (err instanceof DriverError && err.key === 'driver.timeout') throw err;
      return { code: null, stdout: '', stderr: '' };
    });
    if (r.code !== null && r.code !== 0) throw new DriverError('driver.command_failed', `power reset: ${r.stderr.trim().slice(-300)}`);
    this.pool.reset();
    this.lastCpu = null;
  }

  async flash(image: string, onProgress: (p: FlashProgress) => void): Promise<void> {
    const argv = this.need(Capability.flash, 'flash');
    onProgress({ phase: 'preparing', percent: 0 });
    const size = (await fs.promises.stat(image).catch(() => null))?.size;
    if (!size) throw new DriverError('flash.image_invalid', 'Image file not found or empty');
    const sftp = await this.pool.sftp();
    const remote = `/tmp/bianbu-flash-${crypto.randomBytes(6).toString('hex')}-${path.basename(image).replace(/[^\w.-]/g, '_')}`;
    try {
      await new Promise<void>((resolve, reject) =>
        sftp.fastPut(image, remote, { step: (done: number) => onProgress({ phase: 'writing', percent: Math.round((done / size) * 80) }) }, (err) =>
          err ? reject(sftpError(err, remote)) : resolve(),
        ),
      );
      onProgress({ phase: 'verifying', percent: 85 });
      await this.runArgv(argv.map((a) => a.replaceAll('{image}', remote)), Math.max(this.o.timeoutMs, 30 * 60_000));
      onProgress({ phase: 'booting', percent: 95 });
    } finally {
      await sftpCall<void>((cb) => sftp.unlink(remote, () => cb(null, undefined))).catch(() => {});
    }
    this.pool.reset();
    onProgress({ phase: 'done', percent: 100 });
  }

  async restoreDefault(): Promise<void> {
    const argv = this.o.commands?.reimage;
    if (!argv) throw new DriverError('capability.unsupported', 'This board has no reimage command configured');
    await this.runArgv(argv, Math.max(this.o.timeoutMs, 30 * 60_000));
    this.pool.reset();
  }

  async callPlugin(topic: string, data: string, nodeId: string): Promise<string> {
    const argv = this.need(Capability.plugin, 'plugin');
    try {
      return await this.runArgv([...argv, topic, data, nodeId], this.o.timeoutMs * 2);
    } catch (err) {
      if (err instanceof DriverError && err.key === 'driver.command_failed') throw new DriverError('plugin.failed', err.message);
      throw err;
    }
  }

  async connectPort(port: number): Promise<Duplex> {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new DriverError('driver.failed', 'Bad port');
    const { conn, release } = await this.pool.hold();
    try {
      const ch = await withTimeout(
        new Promise<ClientChannel>((resolve, reject) =>
          conn.client.forwardOut('127.0.0.1', 0, '127.0.0.1', port, (err, s) =>
            err ? reject(new DriverError('driver.failed', `Port ${port} of the board refused: ${err.message}`)) : resolve(s),
          ),
        ),
        this.o.timeoutMs,
        'port connect',
      );
      ch.once('close', release);
      return ch;
    } catch (err) {
      release();
      throw err;
    }
  }
}
