// A real board reached over SSH. Lifecycle: `start()` only prepares the pool (an unreachable board
// must not hold up the service; the health prober finds out), every call takes a pooled connection
// and has a timeout. Shell: an SSH PTY. Files: SFTP through the shared implementation (sftp-files.ts),
// kept inside the configured root; a journal, when given, is swept on the first SFTP session after
// start. Metrics: /proc over an exec channel.
// Serial console, power reset, flash, reimage and plugins: argv commands from the lab file, quoted for
// the remote shell.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type { ClientChannel, SFTPWrapper } from 'ssh2';
import type { SshDriverOptions } from '#shared/boards.ts';
import {
  type BoardDriver,
  Capability,
  DriverError,
  type FlashProgress,
  type MetricsSample,
  type PtyHandle,
  type PtySize,
} from '../driver.ts';
import { sftpCall, sftpError } from '../sftp/sftp-errors.ts';
import { sftpFiles } from '../sftp/sftp-files.ts';
import type { TempJournal } from '../sftp/temp-journal.ts';
import { withTimeout } from '../util.ts';
import { SshPool } from './pool.ts';
import { shCommand, shQuote } from './quote.ts';

export interface SshBoardInit {
  boardId: string;
  name: string;
  options: SshDriverOptions;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
  /** Temporary files of writes in progress, kept on the host; swept after a crash of the service. */
  journal?: TempJournal;
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
  readonly files: BoardDriver['files'];

  constructor(init: SshBoardInit) {
    this.boardId = init.boardId;
    this.o = init.options;
    this.log = init.log;
    this.journal = init.journal;
    this.pool = new SshPool(init.options, init.log);
    this.files = sftpFiles({
      sftp: () => this.sftp(),
      rootDir: this.o.rootDir,
      timeoutMs: this.o.timeoutMs,
      journal: init.journal,
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
    this.swept = null;
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
