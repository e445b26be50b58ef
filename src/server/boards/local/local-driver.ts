// A board on this host: one long-lived bubblewrap sandbox. Lifecycle: `start()` boots it (bwrap with
// its own PID, UTS, IPC, network and mount namespaces, the board root bound as /, the host's /usr
// read-only, every capability dropped; its pid 1 is bwrap, which reaps, and `sleep infinity` keeps the
// board up). Shells and plugin calls enter the running sandbox with nsenter, so all shells of a board
// share its processes. Power reset kills the namespace's init — the kernel then kills every process
// in it — writes a boot log to the serial console and boots again on the same files. Flash and
// restore build a new root beside the old one and swap it in with a rename.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Duplex } from 'node:stream';
import * as pty from 'node-pty';
import type { LocalDriverOptions } from '#shared/boards.ts';
import {
  type BoardDriver,
  Capability,
  DriverError,
  type FlashProgress,
  type MetricsSample,
  type PtyHandle,
  type PtySize,
} from '../driver.ts';
import { sleep, withTimeout } from '../util.ts';
import { localFiles } from './files.ts';
import { unpackImage } from './image.ts';
import { cpuAndRss, diskUsage, namespaceOf, parseNetDev, pidsByNamespace } from './procfs.ts';
import { BOARD_USERS, createDefaultRoot, ensureMountPoints, writeIdentity } from './rootfs.ts';
import { SerialConsole } from './serial.ts';

/** Where plugins appear inside a board (the host's plugins directory, bound read-only). */
export const PLUGINS_MOUNT = '/opt/bianbu/plugins';
const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const DISK_USAGE_TTL_MS = 120_000;
const PATH_ENV = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface LocalBoardInit {
  boardId: string;
  name: string;
  model: string;
  cores?: number;
  options: LocalDriverOptions;
  /** `${dataDir}/boards/<id>`: holds `root` and scratch directories for flashing. */
  boardDir: string;
  pluginsDir: string;
  /** false: bubblewrap is missing and the operator opted in to unsandboxed boards. */
  sandboxed: boolean;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
  callTimeoutMs?: number;
}

let bwrapPath: string | null | undefined;
/** The bubblewrap binary, or null when it is not installed. */
export function findBwrap(): string | null {
  if (bwrapPath !== undefined) return bwrapPath;
  bwrapPath = null;
  for (const dir of (process.env.PATH ?? '/usr/bin').split(':').concat(['/usr/bin'])) {
    const p = path.join(dir, 'bwrap');
    try {
      fs.accessSync(p, fs.constants.X_OK);
      bwrapPath = p;
      break;
    } catch {}
  }
  return bwrapPath;
}

/** Host top-level directories that are symlinks into /usr on merged-/usr systems, or real ones. */
function usrLinks(): string[] {
  const args: string[] = [];
  for (const d of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    const p = `/${d}`;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(p);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', fs.readlinkSync(p), p);
    else if (st.isDirectory()) args.push('--ro-bind', p, p);
  }
  return args;
}

export class LocalDriver implements BoardDriver {
  readonly kind = 'local' as const;
  readonly boardId: string;
  private readonly rootDir: string;
  private readonly serial: SerialConsole;
  private outer: ChildProcess | null = null;
  private initPid = 0;
  private nsKey: string | null = null;
  private stopping = false;
  private started: Promise<void> = Promise.resolve();
  private expectedExit = false;
  private swapping = false;
  private booting: Promise<void> | null = null;
  private lastCpu: { at: number; seconds: number } | null = null;
  /** Disk usage and when it is due for a refresh. */
  private disk: { at: number; bytes: number } | null = null;
  private readonly ptys = new Set<pty.IPty>();
  private readonly timeoutMs: number;
  private hostname: string;
  readonly files: BoardDriver['files'];

  constructor(private readonly init: LocalBoardInit) {
    this.boardId = init.boardId;
    this.hostname = init.name;
    this.rootDir = path.join(init.boardDir, 'root');
    this.timeoutMs = init.callTimeoutMs ?? 15_000;
    this.serial = new SerialConsole({
      hostname: () => this.hostname,
      users: async () => BOARD_USERS.map((u) => u.name),
      openShellAs: (user, size) => this.spawnShell(size, user, {}),
    });
    const files = localFiles(
      () => fs.realpathSync(this.rootDir),
      () => {
        if (this.swapping) throw new DriverError('board.busy', 'The board is being flashed');
      },
    );
    // Calls that arrive while the board is still being set up (a large lab boots in the background)
    // wait for it instead of failing on a root that does not exist yet.
    const waiting = Object.fromEntries(
      Object.entries(files).map(([k, fn]) => [
        k,
        async (...args: unknown[]) => {
          await this.started.catch(() => {});
          return (fn as (...a: unknown[]) => unknown)(...args);
        },
      ]),
    ) as BoardDriver['files'];
    this.files = {
      ...waiting,
      freeSpace: async (p) => {
        const fsFree = await files.freeSpace(p);
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
      ...(this.init.sandboxed ? [Capability.vnc, Capability.codeServer] : []),
    ]);
  }

  /** The board's root directory on the host (tests and the benchmark look at it). */
  get rootPath(): string {
    return this.rootDir;
  }

  get running(): boolean {
    return this.initPid > 0 && this.outer !== null;
  }

  /** Renames change the hostname at the next boot. */
  setName(name: string): void {
    this.hostname = name;
  }

  start(): Promise<void> {
    this.stopping = false;
    this.started = (async () => {
      if (!fs.existsSync(this.rootDir)) {
        createDefaultRoot(this.rootDir, { hostname: this.hostname, model: this.init.model, pluginsMount: PLUGINS_MOUNT });
      }
      await this.boot('power on');
    })();
    return this.started;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.killSandbox();
  }

  async probe(timeoutMs = 3000): Promise<void> {
    await withTimeout(this.started, timeoutMs, 'board start');
    if (this.swapping || this.booting) return;
    if (!this.running || namespaceOf(this.initPid) !== this.nsKey) {
      // A sandbox that died behind our back is booted again, like a watchdog would; the probe fails
      // this time so the health record shows it.
      this.initPid = 0;
      if (!this.stopping) void this.boot('watchdog reset').catch(() => {});
      throw new DriverError('board.not_running', 'The board sandbox is not running');
    }
    await withTimeout(this.runInBoard(['/usr/bin/true'], 'root', timeoutMs), timeoutMs, 'probe');
  }

  private bootArgs(root: string): string[] {
    const args = [
      '--unshare-pid',
      '--unshare-uts',
      '--unshare-ipc',
      '--unshare-net',
      '--hostname',
      this.hostname,
      '--bind',
      root,
      '/',
      '--ro-bind',
      '/usr',
      '/usr',
      ...usrLinks(),
      '--proc',
      '/proc',
      '--dev',
      '/dev',
    ];
    if (fs.existsSync(this.init.pluginsDir)) args.push('--ro-bind', this.init.pluginsDir, PLUGINS_MOUNT);
    args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--info-fd', '3', '--', '/usr/bin/sleep', 'infinity');
    return args;
  }

  private boot(reason: string, imageNote?: string): Promise<void> {
    if (this.booting) return this.booting;
    this.booting = this.bootOnce(reason, imageNote).finally(() => {
      this.booting = null;
    });
    return this.booting;
  }

  private async bootOnce(reason: string, imageNote?: string): Promise<void> {
    ensureMountPoints(this.rootDir);
    fs.mkdirSync(path.join(this.rootDir, PLUGINS_MOUNT), { recursive: true });
    // bwrap makes the /usr symlinks itself and refuses to when they are left from the last boot.
    for (const d of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
      const p = path.join(this.rootDir, d);
      if (fs.lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink()) fs.unlinkSync(p);
    }
    writeIdentity(this.rootDir, { hostname: this.hostname });
    const root = fs.realpathSync(this.rootDir);
    const bwrap = findBwrap();
    let child: ChildProcess;
    if (this.init.sandboxed) {
      if (!bwrap) throw new DriverError('driver.sandbox_missing', 'bubblewrap (bwrap) is not installed');
      child = spawn(bwrap, this.bootArgs(root), { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
    } else {
      // Unsandboxed (operator opt-in without bubblewrap): the board is a process group on the host,
      // its members marked by an environment variable.
      child = spawn('/usr/bin/sleep', ['infinity'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        cwd: root,
        env: { PATH: PATH_ENV, BIANBU_BOARD: this.boardId },
        detached: true,
      });
    }
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-2000);
    });
    const pid = await withTimeout(
      new Promise<number>((resolve, reject) => {
        if (!this.init.sandboxed) {
          child.once('spawn', () => resolve(child.pid ?? 0));
          child.once('error', reject);
          return;
        }
        let info = '';
        const fd3 = child.stdio[3] as NodeJS.ReadableStream;
        fd3.on('data', (b: Buffer) => {
          info += b.toString();
          try {
            resolve(JSON.parse(info)['child-pid']);
          } catch {}
        });
        child.once('error', reject);
        child.once('exit', (code) => reject(new DriverError('driver.failed', `bwrap exited with ${code}: ${stderr.trim()}`)));
      }),
      this.timeoutMs,
      'board boot',
      () => child.kill('SIGKILL'),
    );
    this.expectedExit = false;
    this.outer = child;
    this.initPid = pid;
    this.nsKey = this.init.sandboxed ? namespaceOf(pid) : null;
    this.lastCpu = null;
    try {
      // bwrap reports its pid before it has finished setting up; a board is up when a program runs in it.
      const deadline = Date.now() + this.timeoutMs;
      for (;;) {
        try {
          await this.runInBoard(['/usr/bin/true'], 'root', this.timeoutMs);
          break;
        } catch (err) {
          if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null) throw err;
          await sleep(15);
        }
      }
    } catch (err) {
      child.kill('SIGKILL');
      this.outer = null;
      this.initPid = 0;
      throw new DriverError('driver.failed', `The board did not boot: ${stderr.trim() || (err as Error).message}`);
    }
    child.once('exit', () => {
      if (this.outer === child) {
        this.outer = null;
        this.initPid = 0;
        if (!this.stopping && !this.expectedExit) this.init.log?.('board sandbox exited', { boardId: this.boardId, stderr: stderr.trim() });
      }
    });
    this.serial.bootLog({
      reason,
      model: this.init.model,
      memoryMb: this.init.options.memoryMb,
      cores: this.cores(),
      imageNote,
    });
  }

  private async killSandbox(): Promise<void> {
    const child = this.outer;
    const pid = this.initPid;
    const before = this.init.sandboxed && this.nsKey ? (pidsByNamespace(0).get(this.nsKey) ?? []) : [];
    this.expectedExit = true;
    // Shells are killed last: their nsenter parents must stay alive to reap the board's processes,
    // which the namespace's death waits for.
    const killPtys = () => {
      for (const p of this.ptys) {
        try {
          p.kill('SIGKILL');
        } catch {}
      }
      this.ptys.clear();
    };
    if (!child) {
      killPtys();
      return;
    }
    const exited = new Promise<void>((r) => {
      if (child.exitCode !== null || child.signalCode !== null) r();
      else child.once('exit', () => r());
    });
    if (this.init.sandboxed) {
      // Killing the namespace's pid 1 makes the kernel kill every process in the namespace.
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    } else {
      for (const m of this.members()) {
        try {
          process.kill(m, 'SIGKILL');
        } catch {}
      }
    }
    child.kill('SIGKILL');
    await withTimeout(exited, 5000, 'sandbox stop').catch(() => {});
    // The kernel kills the namespace's members asynchronously; wait until they are gone.
    for (let i = 0; i < 100 && before.some((m) => isAlive(m) && namespaceOf(m) === this.nsKey); i++) await sleep(10);
    killPtys();
    this.outer = null;
    this.initPid = 0;
  }

  /** argv prefix that runs a program inside the board as `user`, capabilities dropped. */
  private enter(user: string, cwd: string): { file: string; args: string[] } {
    const u = BOARD_USERS.find((x) => x.name === user);
    if (!u) throw new DriverError('driver.failed', `Unknown board user ${user}`);
    const privs = [
      ...(u.uid ? [`--reuid=${u.uid}`, `--regid=${u.gid}`, '--init-groups'] : []),
      '--bounding-set=-all',
      '--inh-caps=-all',
      '--no-new-privs',
      '--',
    ];
    if (!this.init.sandboxed) {
      const hostCwd = path.join(fs.realpathSync(this.rootDir), cwd);
      return { file: '/usr/bin/env', args: ['-C', hostCwd, '--', '/usr/bin/setpriv', ...privs] };
    }
    if (!this.running) throw new DriverError('board.not_running', 'The board is not running');
    return {
      file: 'nsenter',
      args: [
        '-t',
        String(this.initPid),
        '-m',
        '-u',
        '-i',
        '-n',
        '-p',
        '-r',
        '-w',
        '--',
        '/usr/bin/env',
        '-C',
        cwd,
        '--',
        '/usr/bin/setpriv',
        ...privs,
      ],
    };
  }

  private shellEnv(user: string, extra: Record<string, string>): Record<string, string> {
    const u = BOARD_USERS.find((x) => x.name === user) ?? BOARD_USERS[0];
    return {
      ...extra,
      TERM: extra.TERM ?? 'xterm-256color',
      HOME: u.home,
      USER: u.name,
      LOGNAME: u.name,
      SHELL: '/bin/bash',
      PATH: PATH_ENV,
      LANG: extra.LANG ?? 'C.UTF-8',
      HOSTNAME: this.hostname,
      ...(this.init.sandboxed ? {} : { BIANBU_BOARD: this.boardId }),
    };
  }

  openShell(size: PtySize, env: Record<string, string> = {}): Promise<PtyHandle> {
    return this.spawnShell(size, 'root', env);
  }

  private async spawnShell(size: PtySize, user: string, env: Record<string, string>): Promise<PtyHandle> {
    await this.started.catch(() => {});
    if (this.booting) await this.booting;
    const u = BOARD_USERS.find((x) => x.name === user) ?? BOARD_USERS[0];
    const { file, args } = this.enter(user, u.home);
    // The PTY node-pty opens lives in the host's devpts, which the board cannot see; `script`
    // opens a second one from the board's own /dev/ptmx so `tty`, job control and programs that
    // need a terminal name work inside the board, and relays between the two (window size included).
    const inner = this.init.sandboxed ? ['/usr/bin/script', '-qfec', '/bin/bash -l', '/dev/null'] : ['/bin/bash', '-l'];
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

  /** Runs argv inside the board (no shell involved) and answers stdout. */
  private runInBoard(argv: string[], user: string, timeoutMs: number, maxBuffer = 1024 * 1024): Promise<string> {
    const u = BOARD_USERS.find((x) => x.name === user) ?? BOARD_USERS[0];
    const { file, args } = this.enter(user, u.home);
    return new Promise((resolve, reject) => {
      execFile(
        file,
        [...args, ...argv],
        { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer, env: this.shellEnv(user, {}), encoding: 'utf8' },
        (err, stdout, stderr) => {
          if (err) {
            const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
            if (e.killed) reject(new DriverError('driver.timeout', `Timed out after ${timeoutMs} ms`));
            else reject(Object.assign(new DriverError('driver.command_failed', stderr.trim().slice(-500) || e.message), { exitCode: e.code }));
          } else resolve(stdout);
        },
      );
    });
  }

  private cores(): number {
    const host = os.availableParallelism();
    return Math.max(1, Math.min(this.init.cores ?? host, host));
  }

  private diskTotal(): number {
    return this.init.options.diskQuotaMb * 1024 * 1024;
  }

  private async diskUsed(): Promise<number> {
    const now = Date.now();
    if (!this.disk || now >= this.disk.at) {
      // Refreshed every couple of minutes, each board at its own moment so a large lab never walks
      // every root in the same sampling round.
      const jitter = Math.floor(Math.random() * DISK_USAGE_TTL_MS * 0.5);
      this.disk = { at: now + DISK_USAGE_TTL_MS - jitter, bytes: diskUsage(this.rootDir) };
    }
    return this.disk.bytes;
  }

  private members(): number[] {
    if (this.init.sandboxed) return this.nsKey ? (pidsByNamespace().get(this.nsKey) ?? []) : [];
    const out: number[] = [];
    for (const name of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        if (fs.readFileSync(`/proc/${name}/environ`, 'latin1').includes(`\0BIANBU_BOARD=${this.boardId}\0`)) out.push(Number(name));
        else if (fs.readFileSync(`/proc/${name}/environ`, 'latin1').startsWith(`BIANBU_BOARD=${this.boardId}\0`)) out.push(Number(name));
      } catch {}
    }
    return out;
  }

  async sampleMetrics(): Promise<MetricsSample> {
    if (!this.running) throw new DriverError('board.not_running', 'The board is not running');
    const at = Date.now();
    const { cpuSeconds, rssBytes } = cpuAndRss(this.members());
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
    return {
      at,
      cpuPercent: Math.round(cpuPercent * 100) / 100,
      memUsed: rssBytes,
      memTotal: this.init.options.memoryMb * 1024 * 1024,
      diskUsed: await this.diskUsed(),
      diskTotal: this.diskTotal(),
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

  async flash(image: string, onProgress: (p: FlashProgress) => void): Promise<void> {
    await this.swapRoot(async (fresh) => {
      onProgress({ phase: 'preparing', percent: 0 });
      await unpackImage(image, fresh, (pct) => onProgress({ phase: 'writing', percent: Math.min(90, Math.round(pct * 0.9)) }));
      onProgress({ phase: 'verifying', percent: 92 });
      ensureMountPoints(fresh);
      if (!fs.existsSync(path.join(fresh, 'etc/passwd'))) {
        throw new DriverError('flash.image_invalid', 'Image has no /etc/passwd: not a board root file system');
      }
      onProgress({ phase: 'booting', percent: 95 });
    }, `flash ${path.basename(image)}`);
    onProgress({ phase: 'done', percent: 100 });
  }

  async restoreDefault(): Promise<void> {
    await this.swapRoot(async (fresh) => {
      fs.rmSync(fresh, { recursive: true, force: true });
      createDefaultRoot(fresh, { hostname: this.hostname, model: this.init.model, pluginsMount: PLUGINS_MOUNT });
    }, 'default image');
  }

  /**
   * Builds a new root beside the current one, then stops the board, swaps the directories with
   * renames and boots. A failure while building leaves the old root and a running board.
   */
  private async swapRoot(build: (fresh: string) => Promise<void>, note: string): Promise<void> {
    if (this.swapping) throw new DriverError('board.busy', 'The board is already being flashed');
    this.swapping = true;
    const suffix = crypto.randomBytes(4).toString('hex');
    const fresh = path.join(this.init.boardDir, `root.new-${suffix}`);
    const old = path.join(this.init.boardDir, `root.old-${suffix}`);
    try {
      try {
        await build(fresh);
      } catch (err) {
        await fs.promises.rm(fresh, { recursive: true, force: true });
        throw err;
      }
      this.serial.write(`\n[ writing image: ${note} ]\n`);
      await this.killSandbox();
      await fs.promises.rename(this.rootDir, old);
      await fs.promises.rename(fresh, this.rootDir);
      this.disk = null;
      void fs.promises.rm(old, { recursive: true, force: true });
    } finally {
      this.swapping = false;
      if (!this.stopping && !this.running) await this.boot(`boot after ${note}`, note);
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
    if (!st.isFile() || !(st.mode & 0o111)) throw new DriverError('plugin.unknown', `No plugin named ${topic}`);
    const exe = this.init.sandboxed ? `${PLUGINS_MOUNT}/${topic}` : host;
    try {
      return await this.runInBoard([exe, topic, data, nodeId], 'root', this.timeoutMs * 2);
    } catch (err) {
      if (err instanceof DriverError && err.key === 'driver.command_failed') throw new DriverError('plugin.failed', err.message);
      throw err;
    }
  }

  async connectPort(port: number): Promise<Duplex> {
    if (!this.init.sandboxed) throw new DriverError('capability.unsupported', 'Ports need a sandboxed board');
    if (!this.running) throw new DriverError('board.not_running', 'The board is not running');
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new DriverError('driver.failed', 'Bad port');
    // A relay inside the board's network namespace; node is the host's binary, only the network
    // namespace is entered.
    const relay =
      "const s=require('net').connect(+process.argv[1],'127.0.0.1');" +
      "s.on('connect',()=>{process.stderr.write('ok\\n');process.stdin.pipe(s);s.pipe(process.stdout);});" +
      "s.on('error',e=>{process.stderr.write('err '+e.code+'\\n');process.exit(1)});" +
      "s.on('close',()=>process.exit(0));process.stdin.on('end',()=>s.end());";
    const child = spawn('nsenter', [`--net=/proc/${this.initPid}/ns/net`, '--', process.execPath, '-e', relay, String(port)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (b: Buffer) => {
          err += b.toString();
          if (err.startsWith('ok\n')) resolve();
          else if (err.includes('\n')) reject(new DriverError('driver.failed', `Port ${port} of the board refused: ${err.trim()}`));
        });
        child.once('exit', () => reject(new DriverError('driver.failed', `Port ${port} of the board is closed`)));
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

/** A zombie is dead for our purposes: it runs nothing and only waits to be reaped. */
function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** node-pty's terminal as the driver's PtyHandle. */
export function ptyHandle(p: pty.IPty): PtyHandle {
  let exited = false;
  return {
    write: (d) => {
      if (!exited) p.write(d);
    },
    resize: (s) => {
      if (!exited) p.resize(Math.max(1, s.cols), Math.max(1, s.rows));
    },
    onData: (fn) => {
      const d = p.onData((chunk: string | Buffer) => fn(typeof chunk === 'string' ? Buffer.from(chunk) : chunk));
      return () => d.dispose();
    },
    onExit: (fn) => {
      const d = p.onExit(({ exitCode, signal }) => {
        exited = true;
        fn({ exitCode, reason: signal ? `signal ${signal}` : undefined });
      });
      return () => d.dispose();
    },
    pause: () => p.pause(),
    resume: () => p.resume(),
    close: () => {
      if (exited) return;
      try {
        p.kill('SIGHUP');
      } catch {}
    },
  };
}
