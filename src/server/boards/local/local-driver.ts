// A board on this host as the service drives it: files, metrics, power, flash, plugins, desktop and
// ports, over the launch half in local-board.ts (the sandbox, entering it, shells' PTY host). Power
// reset kills the namespace's init — the kernel then kills every process in it — writes a boot log to
// the serial console and boots again on the same files. Flash and restore build a new root (a new
// image) while the board still runs and swap it in while the board is down.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Duplex } from 'node:stream';
import * as pty from 'node-pty';
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
import { sftpFiles } from '../sftp/sftp-files.ts';
import { withTimeout } from '../util.ts';
import { BoardCodeServer, DEFAULT_CODE_SERVER_DIR, hostCodeServer } from './code-server.ts';
import {
  boardNode,
  DESKTOP_PREPARE,
  DESKTOP_START,
  hostDesktop,
  spawnRelay,
  UNIX_RELAY,
  VNC_SOCKET,
} from './desktop.ts';
import { BoardDisk } from './disk.ts';
import { localFiles } from './files.ts';
import { LocalBoard, type LocalBoardInit, PLUGINS_MOUNT } from './local-board.ts';
import { cpuAndRss, diskUsage, inTurn, namespaceOf, parseNetDev } from './procfs.ts';
import { ptyHandle } from './pty-handle.ts';
import { BOARD_USERS, createDefaultRoot, ensureMountPoints, hasPasswd } from './rootfs.ts';
import { PATH_ENV, privsFor } from './sandbox.ts';
import { UnsafeEntry } from './tree.ts';
import { shiftOwnership } from './uid-slots.ts';
import { unpackInWorker } from './unpack.ts';

export { DEFAULT_RUN_DIR, findBwrap, type LocalBoardInit, PLUGINS_MOUNT } from './local-board.ts';
export { ptyHandle } from './pty-handle.ts';

const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const DISK_USAGE_TTL_MS = 120_000;
/** Processes of a board read in one turn of the event loop when it is sampled (see sampleMembers). */
const SAMPLE_CHUNK = 64;

export class LocalDriver extends LocalBoard implements BoardDriver {
  readonly kind = 'local' as const;
  /** Settles when the running flash or restore has ended (whatever its outcome); null when none runs. */
  private swapDone: Promise<void> | null = null;
  /** Disk usage and when it is due for a refresh (boards without a disk image only). */
  private disk: { at: number; bytes: number } | null = null;
  /** The desktop being (re)started for a VNC connection; concurrent connections wait for the one start. */
  private desktopStart: Promise<void> | null = null;
  /** The board's code-server, started on the first connection to its port (code-server.ts). */
  private readonly codeServer: BoardCodeServer;
  readonly files: BoardDriver['files'];

  constructor(init: LocalBoardInit) {
    super(init);
    const codeDir = init.codeServerDir === undefined ? DEFAULT_CODE_SERVER_DIR : init.codeServerDir;
    this.codeServer = new BoardCodeServer(
      {
        run: (argv, user, timeoutMs) => this.runInBoard(argv, user, timeoutMs),
        connectPort: (port) => this.connectPort(port),
        log: init.log,
      },
      () => (init.sandboxed ? hostCodeServer(codeDir) : null),
    );
    const guard = () => {
      if (this.swapping) throw new DriverError('board.busy', 'The board is being flashed');
    };
    // Sandboxed boards: every file call runs inside the board through its own SFTP server, so a link
    // or a race can only ever reach the board's own tree. Unsandboxed boards (an explicit, unsafe
    // opt-in) resolve on the host.
    const files = init.sandboxed
      ? sftpFiles({
          sftp: async () => {
            guard();
            return this.sftp.session();
          },
          rootDir: '/',
          timeoutMs: this.timeoutMs,
          journal: this.journal,
        })
      : localFiles(() => fs.realpathSync(this.rootDir), guard);
    // Calls that arrive while the board is still being set up (a large lab boots in the background)
    // or rebooting wait for it instead of failing.
    const waiting = Object.fromEntries(
      Object.entries(files).map(([k, fn]) => [
        k,
        async (...args: unknown[]) => {
          await this.started.catch(() => {});
          if (this.booting) await this.booting.catch(() => {});
          return (fn as (...a: unknown[]) => unknown)(...args);
        },
      ]),
    ) as BoardDriver['files'];
    this.files = {
      ...waiting,
      freeSpace: async (p) => {
        const fsFree = await waiting.freeSpace(p);
        if (this.diskImage?.enforced) return fsFree;
        const used = await this.diskUsed();
        return Math.max(0, Math.min(fsFree, this.diskTotal() - used));
      },
    };
  }

  capabilities(): ReadonlySet<Capability> {
    return new Set<Capability>([
      Capability.shell,
      Capability.serial,
      Capability.files,
      Capability.metrics,
      Capability.powerReset,
      Capability.flash,
      Capability.plugin,
      // A desktop needs the host's Xvnc (and node for the relay) under /usr, which boards see.
      ...(this.init.sandboxed && hostDesktop() && boardNode() ? [Capability.vnc] : []),
      ...(this.init.sandboxed ? [Capability.codeServer] : []),
    ]);
  }

  private diskTotal(): number {
    return this.init.options.diskQuotaMb * 1024 * 1024;
  }

  openShell(size: PtySize, env: Record<string, string> = {}): Promise<PtyHandle> {
    return this.spawnShell(size, 'root', env);
  }

  protected async spawnShell(size: PtySize, user: string, env: Record<string, string>): Promise<PtyHandle> {
    await this.started.catch(() => {});
    if (this.booting) await this.booting;
    const u = BOARD_USERS.find((x) => x.name === user) ?? BOARD_USERS[0];
    if (this.init.sandboxed && (await this.ptyHostReady())) {
      if (!this.running) throw new DriverError('board.not_running', 'The board is not running');
      // Login shells come from the board's PTY host: a terminal of the board's own, no fork of the
      // service and no sandbox entry per shell (pty-host/). Another user's shell drops to that user
      // with the host's setpriv, as entering the board does (its groups from the board's /etc/group).
      const ptyHost = this.boardPtyHost();
      const argv =
        u.uid === 0
          ? ['/bin/bash', '-l']
          : ['/usr/bin/setpriv', ...privsFor(u, this.userns), '/bin/bash', '-l'];
      return ptyHost.open({ argv, env: this.shellEnv(user, env), cwd: u.home, size });
    }
    const { file, args } = this.enter(user, u.home);
    // The PTY node-pty opens lives in the host's devpts, which the board cannot see; `script`
    // opens a second one from the board's own /dev/ptmx so `tty`, job control and programs that
    // need a terminal name work inside the board, and relays between the two (window size included).
    const inner = this.init.sandboxed
      ? ['/usr/bin/script', '-qfec', '/bin/bash -l', '/dev/null']
      : ['/bin/bash', '-l'];
    const p = pty.spawn(file, [...args, ...inner], {
      name: env.TERM ?? 'xterm-256color',
      cols: size.cols,
      rows: size.rows,
      cwd: '/',
      env: this.shellEnv(user, env),
      encoding: null,
    } as pty.IPtyForkOptions);
    this.ptys.add(p);
    p.onExit(() => this.ptys.delete(p));
    return ptyHandle(p);
  }

  async openSerial(size: PtySize): Promise<PtyHandle> {
    return this.serial.attach(size);
  }

  private async diskUsed(): Promise<number> {
    const measured = await this.diskImage?.usage().catch(() => null);
    if (measured) return measured.used;
    const now = Date.now();
    if (!this.disk || now >= this.disk.at) {
      // Refreshed every couple of minutes, each board at its own moment so a large lab never walks
      // every root in the same sampling round.
      const jitter = Math.floor(Math.random() * DISK_USAGE_TTL_MS * 0.5);
      this.disk = { at: now + DISK_USAGE_TTL_MS - jitter, bytes: diskUsage(this.rootDir) };
    }
    return this.disk.bytes;
  }

  private async sampleMembers(): Promise<{ at: number; cpuSeconds: number; rssBytes: number }> {
    const listed = this.init.sandboxed ? this.cgroups?.processes() : null;
    const ns = this.nsKey;
    if (!listed || !ns || listed.length <= SAMPLE_CHUNK)
      return inTurn(() => ({ at: Date.now(), ...cpuAndRss(this.members()) }));
    const sum = { at: Date.now(), cpuSeconds: 0, rssBytes: 0 };
    for (let i = 0; i < listed.length; i += SAMPLE_CHUNK) {
      const part = await inTurn(() =>
        cpuAndRss(listed.slice(i, i + SAMPLE_CHUNK).filter((pid) => namespaceOf(pid) === ns)),
      );
      sum.cpuSeconds += part.cpuSeconds;
      sum.rssBytes += part.rssBytes;
    }
    return sum;
  }

  async sampleMetrics(): Promise<MetricsSample> {
    if (!this.running) throw new DriverError('board.not_running', 'The board is not running');
    // The board's processes are read in a turn of their own (many boards are sampled at once), and a
    // board with many (a fork bomb holds its whole process limit) in turns of SAMPLE_CHUNK each: read
    // at once, 1,024 processes held the event loop — every shell's echo — for 10–20 ms.
    const { at, cpuSeconds, rssBytes } = await this.sampleMembers();
    if (!this.running) throw new DriverError('board.not_running', 'The board is not running');
    let cpuPercent = 0;
    if (this.lastCpu && at > this.lastCpu.at) {
      const used = Math.max(0, cpuSeconds - this.lastCpu.seconds);
      cpuPercent = Math.min(100, (used / ((at - this.lastCpu.at) / 1000) / this.cores()) * 100);
    }
    this.lastCpu = { at, seconds: cpuSeconds };
    let net = { rx: 0, tx: 0 };
    if (this.init.sandboxed) {
      try {
        net = parseNetDev(await fs.promises.readFile(`/proc/${this.initPid}/net/dev`, 'utf8'));
      } catch {}
    }
    const image = await this.diskImage?.usage().catch(() => null);
    return {
      at,
      cpuPercent: Math.round(cpuPercent * 100) / 100,
      memUsed: rssBytes,
      memTotal: this.init.options.memoryMb * 1024 * 1024,
      diskUsed: image ? image.used : await this.diskUsed(),
      diskTotal: image ? image.total : this.diskTotal(),
      netRx: net.rx,
      netTx: net.tx,
    };
  }

  async powerReset(): Promise<void> {
    if (this.swapping) throw new DriverError('board.busy', 'The board is being flashed');
    this.serial.write('\n[ reset requested ]\n');
    await this.killSandbox();
    if (this.stopping) return;
    await this.boot('power reset');
  }

  async flash(image: string, onProgress: (p: FlashProgress) => void, opts: FlashOptions = {}): Promise<void> {
    const label = opts.label ?? path.basename(image);
    const note = (line: string) => onProgress({ phase: 'preparing', percent: 0, log: line });
    let last = { phase: '', percent: -1 };
    const report = (phase: 'writing' | 'verifying', done: number, total: number) => {
      const percent = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 0;
      if (phase === last.phase && percent === last.percent && done < total) return;
      last = { phase, percent };
      onProgress({ phase, percent, bytesDone: done, bytesTotal: total });
    };
    await this.swapRoot(async (fresh) => {
      note(
        `writing ${label} into a new root file system (${this.diskImage?.enforced ? `${this.init.options.diskQuotaMb} MiB ext4 image` : 'directory'})`,
      );
      const entries = await unpackInWorker(image, fresh, {
        onBytes: report,
        onWritten: (n) => onProgress({ phase: 'writing', percent: 100, log: `wrote ${n} entries` }),
        signal: opts.signal,
      });
      // The unpacked tree is the image's: it is looked at and completed by descriptor walks that
      // refuse a link on the way (tree.ts), never by host paths that would follow one.
      const unsafe = (err: unknown) =>
        err instanceof UnsafeEntry
          ? new DriverError(
              'flash.image_invalid',
              `The image's ${err.message}: a board root's system directories must be real directories`,
            )
          : err;
      let passwd = false;
      try {
        passwd = hasPasswd(fresh);
      } catch (err) {
        throw unsafe(err);
      }
      if (!passwd) {
        throw new DriverError(
          'flash.image_invalid',
          'Image has no /etc/passwd: not a board root file system',
        );
      }
      onProgress({
        phase: 'verifying',
        percent: 100,
        log: `verified ${entries} entries against the image`,
      });
      try {
        ensureMountPoints(fresh);
      } catch (err) {
        throw unsafe(err);
      }
      if (this.base !== null) shiftOwnership(fresh, this.base);
      if (opts.signal?.aborted) throw new DriverError('flash.aborted', 'The flash was stopped');
      onProgress({ phase: 'booting', percent: 0, log: 'stopping the board and switching to the new root' });
    }, label);
    onProgress({ phase: 'done', percent: 100, log: 'the board booted the new image' });
  }

  async restoreDefault(): Promise<void> {
    // A lease that ends during a flash restores the board once the flash has stopped (the flash job
    // aborts as the board leaves its holder), rather than failing on a busy board.
    while (this.swapDone) await this.swapDone;
    await this.swapRoot(async (fresh) => {
      if (this.init.sandboxed) await this.populateDefault(fresh);
      else {
        fs.rmSync(fresh, { recursive: true, force: true });
        createDefaultRoot(fresh, {
          hostname: this.hostname,
          model: this.init.model,
          pluginsMount: PLUGINS_MOUNT,
        });
      }
    }, 'default image');
  }

  /**
   * Builds a new root beside the current one (a fresh directory or disk image no board process can
   * see), then stops the board, swaps the new root in and boots. A failure while building leaves the
   * old root and a running board.
   */
  private async swapRoot(build: (fresh: string) => Promise<void>, note: string): Promise<void> {
    if (this.swapping) throw new DriverError('board.busy', 'The board is already being flashed');
    this.swapping = true;
    let settle = () => {};
    this.swapDone = new Promise<void>((r) => (settle = r));
    await this.started.catch(() => {});
    try {
      const disk =
        this.diskImage ??
        new BoardDisk({
          boardDir: this.init.boardDir,
          mountAt: this.rootDir,
          sizeMb: this.init.options.diskQuotaMb,
          ownerBase: 0,
          loop: false,
        });
      await disk.replace(build, async () => {
        this.serial.write(`\n[ writing image: ${note} ]\n`);
        await this.killSandbox();
      });
      this.disk = null;
    } finally {
      this.swapping = false;
      try {
        if (!this.stopping && !this.running) await this.boot(`boot after ${note}`, note);
      } finally {
        this.swapDone = null;
        settle();
      }
    }
  }

  async callPlugin(topic: string, data: string, nodeId: string): Promise<string> {
    if (!PLUGIN_NAME.test(topic)) throw new DriverError('plugin.unknown', 'Unknown plugin');
    const host = path.join(this.init.pluginsDir, topic);
    let st: fs.Stats;
    try {
      st = fs.statSync(host);
    } catch {
      throw new DriverError('plugin.unknown', `No plugin named ${topic}`);
    }
    if (!st.isFile() || !(st.mode & 0o111))
      throw new DriverError('plugin.unknown', `No plugin named ${topic}`);
    const exe = this.init.sandboxed ? `${PLUGINS_MOUNT}/${topic}` : host;
    try {
      return await this.runInBoard([exe, topic, data, nodeId], 'root', this.timeoutMs * 2);
    } catch (err) {
      if (err instanceof DriverError && err.key === 'driver.command_failed')
        throw new DriverError('plugin.failed', err.message);
      throw err;
    }
  }

  /**
   * A stream to the board's RFB socket (desktop.ts): relayed from inside the board, as its user. No
   * desktop answering yet (first use, or it died) starts one, then connects again.
   */
  async connectVnc(): Promise<Duplex> {
    const desk = hostDesktop();
    const node = boardNode();
    if (!this.init.sandboxed || !desk || !node)
      throw new DriverError('capability.unsupported', 'This board has no desktop (the host has no Xvnc)');
    await this.started.catch(() => {});
    if (this.booting) await this.booting.catch(() => {});
    if (this.swapping) throw new DriverError('board.busy', 'The board is being flashed');
    const connect = () => {
      const { file, args } = this.enter('user', '/');
      return spawnRelay(
        { file, args: [...args, node, '-e', UNIX_RELAY, VNC_SOCKET] },
        this.shellEnv('user', {}),
        this.timeoutMs,
        "the board's desktop",
      );
    };
    if (this.desktopStart) await this.desktopStart.catch(() => {});
    try {
      return await connect();
    } catch (err) {
      if (!(err instanceof DriverError) || err.key !== 'driver.failed') throw err;
    }
    if (!this.desktopStart) {
      this.desktopStart = (async () => {
        await this.runInBoard(['/bin/sh', '-c', DESKTOP_PREPARE], 'root', this.timeoutMs);
        const out = await this.runInBoard(
          [
            '/bin/sh',
            '-c',
            DESKTOP_START,
            'desktop',
            desk.xvnc,
            desk.wm ?? '',
            desk.term ?? '',
            this.hostname,
          ],
          'user',
          this.timeoutMs,
        );
        if (!out.includes('ready'))
          throw new DriverError('driver.failed', `The desktop did not start: ${out.trim().slice(-300)}`);
        this.init.log?.('board desktop started', { boardId: this.boardId });
      })().finally(() => {
        this.desktopStart = null;
      });
    }
    await this.desktopStart;
    return connect();
  }

  /** The board's code port, with code-server started there when nothing answers and the host has it. */
  async connectCode(): Promise<Duplex> {
    if (!this.init.sandboxed) throw new DriverError('capability.unsupported', 'Ports need a sandboxed board');
    await this.started.catch(() => {});
    if (this.booting) await this.booting.catch(() => {});
    if (this.swapping) throw new DriverError('board.busy', 'The board is being flashed');
    return this.codeServer.connect();
  }

  startsCodeServer(): boolean {
    return this.codeServer.available();
  }

  async connectPort(port: number): Promise<Duplex> {
    if (!this.init.sandboxed) throw new DriverError('capability.unsupported', 'Ports need a sandboxed board');
    if (!this.running) throw new DriverError('board.not_running', 'The board is not running');
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new DriverError('driver.failed', 'Bad port');
    // A relay inside the board's network namespace, as the board's own host uid and in its cgroups;
    // node is the host's binary, only the network namespace is entered.
    const relay =
      "const s=require('net').connect(+process.argv[1],'127.0.0.1');" +
      "s.on('connect',()=>{process.stderr.write('ok\\n');process.stdin.pipe(s);s.pipe(process.stdout);});" +
      "s.on('error',e=>{process.stderr.write('err '+e.code+'\\n');process.exit(1)});" +
      "s.on('close',()=>process.exit(0));process.stdin.on('end',()=>s.end());";
    const argv = [
      ...this.entryPrefix(),
      '/usr/bin/nsenter',
      `--net=/proc/${this.initPid}/ns/net`,
      '--',
      '/usr/bin/setpriv',
      `--reuid=${this.base}`,
      `--regid=${this.base}`,
      '--clear-groups',
      '--no-new-privs',
      '--',
      process.execPath,
      '-e',
      relay,
      String(port),
    ];
    const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: PATH_ENV } });
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (b: Buffer) => {
          err += b.toString();
          if (err.startsWith('ok\n')) resolve();
          else if (err.includes('\n'))
            reject(new DriverError('driver.failed', `Port ${port} of the board refused: ${err.trim()}`));
        });
        child.once('exit', () =>
          reject(new DriverError('driver.failed', `Port ${port} of the board is closed`)),
        );
      }),
      this.timeoutMs,
      'port connect',
      () => child.kill('SIGKILL'),
    );
    const duplex = Duplex.from({ readable: child.stdout, writable: child.stdin });
    duplex.once('close', () => child.kill('SIGKILL'));
    // The relay ending (the board closed the port) ends the stream; it is not an error to crash on.
    duplex.on('error', () => duplex.destroy());
    child.once('exit', () => setImmediate(() => duplex.destroy()));
    return duplex;
  }
}
