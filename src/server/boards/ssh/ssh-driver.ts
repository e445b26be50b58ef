// A real board reached over SSH. Lifecycle: `start()` only prepares the pool (an unreachable board
// must not hold up the service; the health prober finds out), every call takes a pooled connection
// and has a timeout. Shell: an SSH PTY. Files: SFTP through the shared implementation (sftp-files.ts),
// kept inside the configured root; uploads are journalled on the host (`<boardDir>/uploads.journal`,
// as for local boards) and the temporary files a killed service left are swept on the first SFTP
// session after start. Metrics: /proc over an exec channel.
// Serial console, power reset, flash, reimage and plugins: argv commands from the lab file, quoted for
// the remote shell.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ClientChannel, SFTPWrapper } from 'ssh2';
import type { SshDriverOptions } from '#shared/boards.ts';
import {
  type BoardDriver,
  Capability,
  DriverError,
  type FlashOptions,
  type FlashProgress,
  type MetricsSample,
  type PtyHandle,
  type PtySize,
} from '../driver.ts';
import { sftpCall, sftpError } from '../sftp/sftp-errors.ts';
import { sftpFiles } from '../sftp/sftp-files.ts';
import { SftpWriteStream } from '../sftp/sftp-streams.ts';
import { TempJournal } from '../sftp/temp-journal.ts';
import { withTimeout } from '../util.ts';
import { type PrivateChannel, SshPool } from './pool.ts';
import { shCommand, shQuote } from './quote.ts';

/** A plugin's name: the same shape local boards accept (see local-driver.ts). */
const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface SshBoardInit {
  boardId: string;
  name: string;
  options: SshDriverOptions;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
  /**
   * The board's private host directory (`<data>/boards/<id>`): its upload journal lives there, so
   * the temporary files of uploads a crash interrupted are removed when the driver starts again.
   */
  boardDir?: string;
  /** Temporary files of writes in progress, kept on the host (default: in `boardDir`). */
  journal?: TempJournal;
  /** A stream to the board's sshd other than TCP (QEMU boards' virtio-serial port). */
  channel?: PrivateChannel;
}

export class SshDriver implements BoardDriver {
  readonly kind = 'ssh' as const;
  readonly boardId: string;
  private readonly pool: SshPool;
  private readonly o: SshDriverOptions;
  private readonly log?: SshBoardInit['log'];
  private readonly journal?: TempJournal;
  private swept: Promise<void> | null = null;
  private lastCpu: { busy: number; total: number } | null = null;
  private readonly open = new Set<ClientChannel>();
  /** A code-server start in progress (connectCode), shared by the callers that found nothing answering. */
  private codeStart: Promise<void> | null = null;
  readonly files: BoardDriver['files'];

  constructor(init: SshBoardInit) {
    this.boardId = init.boardId;
    this.o = init.options;
    this.log = init.log;
    this.journal =
      init.journal ?? (init.boardDir ? new TempJournal(path.join(init.boardDir, 'uploads.journal')) : undefined);
    this.pool = new SshPool(init.options, init.log, init.channel);
    this.files = sftpFiles({
      sftp: () => this.sftp(),
      rootDir: this.o.rootDir,
      timeoutMs: this.o.timeoutMs,
      journal: this.journal,
    });
  }

  /**
   * A pooled SFTP session. The first one after start also sweeps the temporary files a crashed run
   * left (start() itself must not wait for the board); a failed sweep is tried again next start.
   */
  private async sftp(): Promise<SFTPWrapper> {
    const sftp = await this.pool.sftp();
    if (this.journal) {
      const journal = this.journal;
      this.swept ??= withTimeout(journal.sweep(sftp), this.o.timeoutMs, 'upload sweep').then(
        ({ removed }) => {
          if (removed.length) {
            this.log?.('removed temporary files of interrupted uploads', { files: removed.length });
          }
        },
        (err) => this.log?.('could not sweep interrupted uploads', { err: (err as Error).message }),
      );
      await this.swept;
    }
    return sftp;
  }

  capabilities(): ReadonlySet<Capability> {
    const c = this.o.commands ?? {};
    return new Set<Capability>([
      Capability.shell,
      Capability.files,
      Capability.metrics,
      ...(this.o.vncPort !== null ? [Capability.vnc] : []),
      ...(this.o.codeServerPort !== null ? [Capability.codeServer] : []),
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
    // The journal's folder is the service's own (never the board's): private, made here on first start.
    if (this.journal) await fs.promises.mkdir(path.dirname(this.journal.file), { recursive: true, mode: 0o700 });
    this.swept = null;
    this.pool.reopen();
  }

  async stop(): Promise<void> {
    for (const ch of this.open) ch.close();
    this.open.clear();
    this.pool.close();
  }

  /** Drops the pooled connections (the board restarted: they are dead); the next call opens one. */
  dropConnections(): void {
    this.pool.reset();
  }

  async probe(timeoutMs = 3000): Promise<void> {
    const r = await this.exec('true', Math.min(timeoutMs, this.o.timeoutMs));
    if (r.code !== 0) throw new DriverError('driver.failed', 'The board did not run a trivial command');
  }

  /** Runs one command line (already quoted) and collects its output. `code` is null when the channel dropped. */
  exec(
    command: string,
    timeoutMs = this.o.timeoutMs,
    maxBytes = 4 * 1024 * 1024,
    onOutput?: (text: string) => void,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    let channel: ClientChannel | undefined;
    const work = this.pool.with(
      (c) =>
        new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
          c.client.exec(command, (err, ch) => {
            if (err) return reject(new DriverError('driver.failed', `exec failed: ${err.message}`));
            channel = ch;
            // Nothing is written to the command: end of file at once, so one that reads stdin (a
            // plugin, say) does not wait on the open channel until the timeout.
            ch.end();
            let out = '';
            let errText = '';
            let code: number | null = null;
            ch.on('data', (b: Buffer) => {
              if (out.length < maxBytes) out += b.toString();
              onOutput?.(b.toString());
            });
            ch.stderr.on('data', (b: Buffer) => {
              if (errText.length < 65536) errText += b.toString();
              onOutput?.(b.toString());
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

  private async runArgv(argv: string[], timeoutMs = this.o.timeoutMs, onOutput?: (text: string) => void): Promise<string> {
    const r = await this.exec(shCommand(argv), timeoutMs, undefined, onOutput);
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

  /**
   * Uploads the image to the board's /tmp and runs the flash command on it. /tmp is shared with every
   * user of the board (or of a lab host several boards are reached through): the file is created
   * exclusively (a name planted in advance, a link anywhere, is refused, never followed) and private
   * to the login user (0600), and an upload that makes no progress for the call timeout fails instead
   * of holding the flash for ever. The flash command gets a path in a directory the board's users
   * can write: it must treat the file as the board's, not as the service's.
   */
  /**
   * Uploads the image to the board (phase writing, 0–50 % by bytes), then runs the lab file's flash
   * command on it: each line it prints (stdout and stderr; `\r`-separated progress too) goes to the
   * job's log, and its last `NN%` moves the percent — writing (50–100 %) until a line mentions
   * "verif", then verifying. The command's exit status is the result; the job then waits for the
   * board to answer (booting).
   */
  async flash(image: string, onProgress: (p: FlashProgress) => void, opts: FlashOptions = {}): Promise<void> {
    const argv = this.need(Capability.flash, 'flash');
    if (opts.signal?.aborted) throw new DriverError('flash.aborted', 'The flash was stopped');
    onProgress({ phase: 'preparing', percent: 0 });
    const size = (await fs.promises.stat(image).catch(() => null))?.size;
    if (!size) throw new DriverError('flash.image_invalid', 'Image file not found or empty');
    const name = path.basename(image).replace(/[^\w.-]/g, '_').slice(0, 100);
    const remote = `/tmp/bianbu-flash-${crypto.randomBytes(6).toString('hex')}-${name}`;
    try {
      onProgress({ phase: 'preparing', percent: 0, log: `uploading the image to ${remote}` });
      await this.upload(image, remote, size, (done) =>
        onProgress({ phase: 'writing', percent: Math.floor((done / size) * 50), bytesDone: done, bytesTotal: size }),
      );
      if (opts.signal?.aborted) throw new DriverError('flash.aborted', 'The flash was stopped');
      onProgress({ phase: 'writing', percent: 50, log: `running the flash command: ${argv[0]}` });
      const tool = flashToolProgress(onProgress);
      try {
        await this.runArgv(
          argv.map((a) => a.replaceAll('{image}', remote)),
          Math.max(this.o.timeoutMs, 30 * 60_000),
          tool.feed,
        );
      } catch (err) {
        if (err instanceof DriverError && err.key === 'driver.command_failed') throw new DriverError('flash.tool_failed', err.message);
        throw err;
      } finally {
        tool.end();
      }
      onProgress({ phase: 'booting', percent: 0, log: 'the flash command succeeded' });
    } finally {
      // Only the name is removed (a link put there is not followed), on a session of its own, bounded.
      await withTimeout(
        this.pool.sftp().then((s) => sftpCall<void>((cb) => s.unlink(remote, () => cb(null, undefined)))),
        this.o.timeoutMs,
        'flash cleanup',
      ).catch(() => {});
    }
    this.pool.reset();
    onProgress({ phase: 'done', percent: 100 });
  }

  /** Streams a host file to a new private file on the board; fails when no byte moves for the call timeout. */
  private async upload(local: string, remote: string, size: number, progress: (done: number) => void): Promise<void> {
    const sftp = await this.pool.sftp();
    const handle = await withTimeout(
      sftpCall<Buffer>((cb) => sftp.open(remote, 'wx', { mode: 0o600 }, cb)),
      this.o.timeoutMs,
      'flash upload',
    ).catch((err) => {
      throw err instanceof DriverError ? err : sftpError(err, remote);
    });
    const out = new SftpWriteStream(sftp, handle, {
      settleMs: this.o.timeoutMs,
      fsync: true,
      mapError: async (err) => sftpError(err, remote),
    });
    const input = fs.createReadStream(local);
    let done = 0;
    let movedAt = Date.now();
    let stalled = false;
    input.on('data', (chunk) => {
      done += chunk.length;
      movedAt = Date.now();
      progress(Math.min(done, size));
    });
    const watchdog = setInterval(
      () => {
        if (Date.now() - movedAt <= this.o.timeoutMs) return;
        stalled = true;
        const err = new DriverError('driver.timeout', `The flash upload made no progress for ${this.o.timeoutMs} ms`);
        input.destroy(err);
        out.destroy(err);
      },
      Math.min(1000, Math.ceil(this.o.timeoutMs / 4)),
    );
    watchdog.unref();
    try {
      await pipeline(input, out);
    } catch (err) {
      // A session that stopped answering is dropped: the next call opens a new one.
      if (stalled) this.pool.reset();
      throw err instanceof DriverError ? err : sftpError(err, remote);
    } finally {
      clearInterval(watchdog);
    }
  }

  async restoreDefault(): Promise<void> {
    const argv = this.o.commands?.reimage;
    if (!argv) throw new DriverError('capability.unsupported', 'This board has no reimage command configured');
    await this.runArgv(argv, Math.max(this.o.timeoutMs, 30 * 60_000));
    this.pool.reset();
  }

  async callPlugin(topic: string, data: string, nodeId: string): Promise<string> {
    const argv = this.need(Capability.plugin, 'plugin');
    // Topic and nodeId become arguments of a command the lab configured (on a lab host, perhaps one
    // that drives several boards): a name, never an option of that command. Data is passed as is;
    // a plugin command that parses options should end its configured argv with `--`.
    if (!PLUGIN_NAME.test(topic)) throw new DriverError('plugin.unknown', 'Unknown plugin');
    if (nodeId.startsWith('-')) throw new DriverError('plugin.unknown', 'A node id cannot start with "-"');
    try {
      return await this.runArgv([...argv, topic, data, nodeId], this.o.timeoutMs * 2);
    } catch (err) {
      if (err instanceof DriverError && err.key === 'driver.command_failed') throw new DriverError('plugin.failed', err.message);
      throw err;
    }
  }

  /** The board's VNC server at its declared port, through the SSH connection. */
  async connectVnc(): Promise<Duplex> {
    if (this.o.vncPort === null) throw new DriverError('capability.unsupported', 'This board declares no VNC server');
    return this.connectPort(this.o.vncPort);
  }

  /**
   * The board's code-server at its declared port, through the SSH connection. Nothing answering and a
   * start command declared: the command runs once (concurrent callers wait for the same start), then
   * the port is tried again until it answers or the board's timeout passes.
   */
  async connectCode(): Promise<Duplex> {
    const port = this.o.codeServerPort;
    if (port === null) throw new DriverError('capability.unsupported', 'This board declares no code-server');
    try {
      return await this.connectPort(port);
    } catch (err) {
      const start = this.o.commands?.codeServer;
      if (!start || !(err instanceof DriverError) || err.key !== 'driver.failed') throw err;
    }
    this.codeStart ??= (async () => {
      await this.runArgv(this.o.commands!.codeServer!, this.o.timeoutMs);
      const deadline = Date.now() + this.o.timeoutMs * 3;
      for (;;) {
        try {
          (await this.connectPort(port)).destroy();
          return;
        } catch (err) {
          if (Date.now() > deadline) throw err;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    })().finally(() => {
      this.codeStart = null;
    });
    await this.codeStart;
    return this.connectPort(port);
  }

  /** With a start command declared, the code window is offered before anything answers on the port. */
  startsCodeServer(): boolean {
    return this.o.codeServerPort !== null && !!this.o.commands?.codeServer;
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

/** Longest line of a flash tool's output kept in the job's log. */
const TOOL_LINE_MAX = 300;

/**
 * Reads a flash tool's output as it comes: lines (split at `\n` or `\r`) become log lines without
 * control characters; the last percentage in a line moves the progress, in the verifying phase once
 * a line mentioned verification.
 */
export function flashToolProgress(onProgress: (p: FlashProgress) => void): { feed: (text: string) => void; end: () => void } {
  let rest = '';
  let verifying = false;
  let lastLine = '';
  const line = (raw: string) => {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
    const text = raw.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/[\x00-\x1f\x7f]/g, '').trim().slice(0, TOOL_LINE_MAX);
    if (!text) return;
    if (/verif/i.test(text)) verifying = true;
    const all = [...text.matchAll(/(\d{1,3}(?:\.\d+)?)\s*%/g)];
    const pct = all.length ? Math.min(100, Number(all[all.length - 1][1])) : null;
    // A tool redrawing one progress line many times a second logs only when the text changes.
    const log = text !== lastLine ? text : undefined;
    lastLine = text;
    if (pct === null) {
      if (log) onProgress({ phase: verifying ? 'verifying' : 'writing', percent: verifying ? 0 : 50, log });
      return;
    }
    onProgress(
      verifying
        ? { phase: 'verifying', percent: Math.floor(pct), log }
        : { phase: 'writing', percent: 50 + Math.floor(pct / 2), log },
    );
  };
  return {
    feed: (text) => {
      rest += text;
      const parts = rest.split(/[\r\n]/);
      rest = parts.pop() ?? '';
      if (rest.length > 4096) rest = rest.slice(-4096);
      for (const p of parts) line(p);
    },
    end: () => {
      if (rest) line(rest);
      rest = '';
    },
  };
}
