// A board on this host: one long-lived bubblewrap sandbox in a user namespace of its own. Lifecycle:
// `start()` claims the board's host uid range, creates its cgroups, attaches its disk (an ext4 image
// on a loop device where the host has them) and boots it (sandbox.ts describes the launch chain; its
// pid 1 is bwrap, which reaps, and `sleep infinity` keeps the board up). Shells, plugin calls and
// the board's file server (OpenSSH's sftp-server, spoken to with ssh2's SFTP client) enter the running
// sandbox with nsenter, so all of them share its processes, limits and view of its files: the host
// never resolves a path inside a board. Power reset kills the namespace's init — the kernel then kills
// every process in it — writes a boot log to the serial console and boots again on the same files.
// Flash and restore build a new root (a new image) while the board still runs and swap it in while
// the board is down. `stop()` kills the sandbox and detaches its disk.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Duplex } from 'node:stream';
import * as pty from 'node-pty';
import type { SFTPWrapper } from 'ssh2';
import type { LocalDriverOptions } from '#shared/boards.ts';
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
import { openSftpOverStdio } from '../sftp/stdio-sftp.ts';
import { TempJournal } from '../sftp/temp-journal.ts';
import { sleep, withTimeout } from '../util.ts';
import { BoardCgroups, cpuBound } from './cgroups.ts';
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
import { BoardDisk, isMountPoint } from './disk.ts';
import { localFiles } from './files.ts';
import { hostSupport } from './host-support.ts';
import { cpuAndRss, diskUsage, inTurn, namespaceOf, parseNetDev, pidsByNamespace } from './procfs.ts';
import { BoardPtyHost, ptyHostProgram } from './pty-host/pty-host.ts';
import { unmountAll } from './recovery.ts';
import { BOARD_USERS, createDefaultRoot, ensureMountPoints, hasPasswd, writeIdentity } from './rootfs.ts';
import {
  bootArgv,
  bwrapArgs,
  enterArgv,
  entryPrefix,
  mapUserNamespace,
  PATH_ENV,
  privsFor,
} from './sandbox.ts';
import { SerialConsole } from './serial.ts';
import { UnsafeEntry } from './tree.ts';
import { claimIdentity, DEFAULT_SLOT_REGISTRY, shiftOwnership } from './uid-slots.ts';
import { unpackInWorker } from './unpack.ts';

/** Where plugins appear inside a board (the host's plugins directory, bound read-only). */
export const PLUGINS_MOUNT = '/opt/bianbu/plugins';
const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const DISK_USAGE_TTL_MS = 120_000;
/** Processes of a board read in one turn of the event loop when it is sampled (see sampleMembers). */
const SAMPLE_CHUNK = 64;

export interface LocalBoardInit {
  boardId: string;
  name: string;
  model: string;
  cores?: number;
  options: LocalDriverOptions;
  /** `${dataDir}/boards/<id>`: holds `root` (the board's file system), its disk image and scratch. */
  boardDir: string;
  pluginsDir: string;
  /** false: bubblewrap is missing and the operator opted in to unsandboxed boards. */
  sandboxed: boolean;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
  callTimeoutMs?: number;
  /**
   * Host-wide registry of uid ranges. Every service on a host must use the same one: slots also name
   * the mount points under `runDir`.
   */
  uidRegistry?: string;
  /** Host directory under which board roots are mounted for their sandboxes. */
  runDir?: string;
  /** The host's code-server install (code-server.ts; default DEFAULT_CODE_SERVER_DIR); null: none. */
  codeServerDir?: string | null;
  /** Terminals the board may hold at once (pty-host/budget.ts; default BOARD_TERMINALS). */
  terminals?: number;
}

export const DEFAULT_RUN_DIR = '/run/bianbu-boards';

/**
 * The host's plugins directory, read-only at `at` for the sandbox launcher (which cannot reach the
 * data dir). Whatever is mounted there first goes — a bind another instance left (its plugins
 * directory may since have been deleted, and bwrap cannot bind a deleted directory) — and the mount
 * point is made passable for the board's uid (0755 exactly, whatever the service's umask).
 */
async function bindPlugins(pluginsDir: string, at: string): Promise<void> {
  await unmountAll(at);
  fs.mkdirSync(at, { recursive: true, mode: 0o755 });
  fs.chmodSync(at, 0o755);
  if (!fs.existsSync(pluginsDir)) return;
  const run = (args: string[]) =>
    new Promise<void>((resolve, reject) =>
      execFile('mount', args, { env: { PATH: PATH_ENV } }, (err) => (err ? reject(err) : resolve())),
    );
  await run(['--bind', pluginsDir, at]);
  await run(['-o', 'remount,bind,ro,nosuid,nodev', at]);
}

/** The bubblewrap binary, or null when it is not installed. */
export function findBwrap(): string | null {
  return hostSupport().bwrap;
}

/** How long a successful entry into the board stands for the health probe's own (see probe()). */
const PROBE_ENTER_EVERY_MS = 60_000;

export class LocalDriver implements BoardDriver {
  readonly kind = 'local' as const;
  readonly boardId: string;
  /** The board's root on the host: `<runDir>/<slot>/root` for sandboxed boards. */
  private rootDir: string;
  private readonly serial: SerialConsole;
  private readonly userns: boolean;
  private outer: ChildProcess | null = null;
  private initPid = 0;
  private nsKey: string | null = null;
  private stopping = false;
  private started: Promise<void> = Promise.resolve();
  private expectedExit = false;
  private swapping = false;
  /** Settles when the running flash or restore has ended (whatever its outcome); null when none runs. */
  private swapDone: Promise<void> | null = null;
  private booting: Promise<void> | null = null;
  /** When a process last entered the board and ran to success (runInBoard): the probe's full check. */
  private enteredAt = 0;
  private lastCpu: { at: number; seconds: number } | null = null;
  /** Disk usage and when it is due for a refresh (boards without a disk image only). */
  private disk: { at: number; bytes: number } | null = null;
  private readonly ptys = new Set<pty.IPty>();
  private ptyHost: BoardPtyHost | null = null;
  private readonly timeoutMs: number;
  private hostname: string;
  /** Host uid/gid of root inside the board (null until started, and for unsandboxed boards). */
  private base: number | null = null;
  private cgroups: BoardCgroups | null = null;
  private diskImage: BoardDisk | null = null;
  private sftp: { session: Promise<SFTPWrapper>; child: ChildProcess } | null = null;
  private readonly journal: TempJournal;
  /** The desktop being (re)started for a VNC connection; concurrent connections wait for the one start. */
  private desktopStart: Promise<void> | null = null;
  /** The board's code-server, started on the first connection to its port (code-server.ts). */
  private readonly codeServer: BoardCodeServer;
  readonly files: BoardDriver['files'];

  constructor(private readonly init: LocalBoardInit) {
    this.boardId = init.boardId;
    this.hostname = init.name;
    this.rootDir = path.join(init.boardDir, 'root');
    this.timeoutMs = init.callTimeoutMs ?? 15_000;
    this.userns = init.sandboxed;
    this.journal = new TempJournal(path.join(init.boardDir, 'uploads.journal'));
    const codeDir = init.codeServerDir === undefined ? DEFAULT_CODE_SERVER_DIR : init.codeServerDir;
    this.codeServer = new BoardCodeServer(
      {
        run: (argv, user, timeoutMs) => this.runInBoard(argv, user, timeoutMs),
        connectPort: (port) => this.connectPort(port),
        log: init.log,
      },
      () => (init.sandboxed ? hostCodeServer(codeDir) : null),
    );
    this.serial = new SerialConsole({
      hostname: () => this.hostname,
      users: async () => BOARD_USERS.map((u) => u.name),
      openShellAs: (user, size) => this.spawnShell(size, user, {}),
    });
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
            return this.sftpSession();
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

  /** The board's root directory on the host (tests and the benchmark look at it). */
  get rootPath(): string {
    return this.rootDir;
  }

  /** Host uid of root inside the board (tests check that board files belong to it). */
  get hostUid(): number | null {
    return this.base;
  }

  /** Limits this board runs under, and those the host cannot enforce. */
  get limits(): { enforced: string[]; missing: string[] } {
    const enforced = [...(this.cgroups?.enforced ?? []), ...(this.diskImage?.enforced ? ['disk'] : [])];
    return { enforced, missing: ['memory', 'pids', 'cpu', 'disk'].filter((l) => !enforced.includes(l)) };
  }

  get running(): boolean {
    return this.initPid > 0 && this.outer !== null;
  }

  /** Renames change the hostname at the next boot. */
  setName(name: string): void {
    this.hostname = name;
  }

  private cores(): number {
    const host = os.availableParallelism();
    return Math.max(1, Math.min(this.init.cores ?? host, host));
  }

  private diskTotal(): number {
    return this.init.options.diskQuotaMb * 1024 * 1024;
  }

  start(): Promise<void> {
    this.stopping = false;
    this.started = (async () => {
      if (this.init.sandboxed) await this.prepareSandbox();
      else if (!fs.existsSync(this.rootDir)) {
        createDefaultRoot(this.rootDir, {
          hostname: this.hostname,
          model: this.init.model,
          pluginsMount: PLUGINS_MOUNT,
        });
      }
      await this.boot('power on');
      if (this.init.sandboxed) await this.sweepUploads();
    })();
    return this.started;
  }

  /** Identity, limits and disk of a sandboxed board; everything here happens while no board process runs. */
  private async prepareSandbox(): Promise<void> {
    const host = hostSupport();
    if (!host.userns) {
      const why = host.missing.filter((m) => m.startsWith('identity:')).join('; ');
      throw new DriverError('driver.sandbox_missing', `Local boards cannot be isolated on this host: ${why}`);
    }
    fs.mkdirSync(this.init.boardDir, { recursive: true, mode: 0o700 });
    const id = await claimIdentity(this.init.boardDir, this.init.uidRegistry ?? DEFAULT_SLOT_REGISTRY);
    this.base = id.base;
    // The board's directory in the data dir is the service's alone. The launcher (the board's uid)
    // reaches the root at <runDir>/<slot>/root, a directory that uid alone may pass through.
    fs.chmodSync(this.init.boardDir, 0o700);
    const runDir = this.init.runDir ?? DEFAULT_RUN_DIR;
    fs.mkdirSync(runDir, { recursive: true, mode: 0o711 });
    fs.chmodSync(runDir, 0o711);
    const slotDir = path.join(runDir, String(id.slot));
    fs.mkdirSync(slotDir, { recursive: true, mode: 0o700 });
    fs.chownSync(slotDir, id.base, id.base);
    fs.chmodSync(slotDir, 0o700);
    this.rootDir = path.join(slotDir, 'root');
    await bindPlugins(this.init.pluginsDir, path.join(slotDir, 'plugins'));
    const { memoryMb, maxProcesses } = this.init.options;
    this.cgroups = new BoardCgroups(`${this.boardId}-${id.slot}`, host.cgroups, {
      memoryBytes: memoryMb * 1024 * 1024,
      pids: maxProcesses,
      cpus: cpuBound(this.cores(), os.availableParallelism()),
    });
    this.cgroups.create();
    for (const f of this.cgroups.failures) this.init.log?.(`board limit not enforced: ${f}`);
    // Nothing of this board runs yet: whatever is in its groups was left by a killed instance.
    await this.cgroups.killAll();
    this.diskImage = new BoardDisk({
      boardDir: this.init.boardDir,
      mountAt: this.rootDir,
      sizeMb: this.init.options.diskQuotaMb,
      ownerBase: id.base,
      loop: host.loopDisk,
    });
    const swept = await this.diskImage.attach(async (dir) => this.populateDefault(dir));
    if (swept.length)
      this.init.log?.('removed leftovers of an interrupted flash or restore', {
        boardId: this.boardId,
        entries: swept,
      });
    if (id.previousBase !== null) shiftOwnership(this.rootDir, id.base, id.previousBase);
  }

  /** The board's PRETTY_NAME from its /etc/os-release (the board's own text: printable, bounded). */
  private async osName(): Promise<string> {
    if (!this.init.sandboxed) return '';
    const out = await this.runInBoard(
      ['/bin/sh', '-c', '. /etc/os-release 2>/dev/null; printf %s "$PRETTY_NAME"'],
      'user',
      this.timeoutMs,
    ).catch(() => '');
    return out
      .replace(/[^\x20-\x7e\u00a0-\uffff]/gu, '')
      .slice(0, 80)
      .trim();
  }

  /** Writes the default image into a fresh root no board can see yet, owned by the board's range. */
  private async populateDefault(dir: string): Promise<void> {
    createDefaultRoot(dir, { hostname: this.hostname, model: this.init.model, pluginsMount: PLUGINS_MOUNT });
    if (this.base !== null) shiftOwnership(dir, this.base);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.started.catch(() => {});
    await this.killSandbox();
    await this.diskImage
      ?.detach()
      .catch((err) => this.init.log?.('board disk did not detach', { err: (err as Error).message }));
    if (this.init.sandboxed) {
      const plugins = path.join(path.dirname(this.rootDir), 'plugins');
      if (isMountPoint(plugins))
        await new Promise((r) => execFile('umount', [plugins], { env: { PATH: PATH_ENV } }, r));
    }
    this.cgroups?.destroy();
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
    // Entering the board (cgroups, namespaces, setpriv) is proven by any command that ran in it lately;
    // otherwise by one here. Each spawn forks the whole service process and holds its event loop for
    // milliseconds (8 ms at ~400 MiB), so probing every board by a fork every 5 s would stall every
    // shell's echo that often; the namespace check above runs every time.
    if (Date.now() - this.enteredAt < PROBE_ENTER_EVERY_MS) return;
    await withTimeout(this.runInBoard(['/usr/bin/true'], 'root', timeoutMs), timeoutMs, 'probe');
  }

  private boot(reason: string, imageNote?: string): Promise<void> {
    if (this.booting) return this.booting;
    this.booting = this.bootOnce(reason, imageNote).finally(() => {
      this.booting = null;
    });
    return this.booting;
  }

  private spawnSandbox(): ChildProcess {
    const bwrap = hostSupport().bwrap;
    if (!bwrap || this.base === null)
      throw new DriverError('driver.sandbox_missing', 'bubblewrap (bwrap) is not installed');
    const plugins = path.join(path.dirname(this.rootDir), 'plugins');
    const args = bwrapArgs(
      {
        hostname: this.hostname,
        root: this.rootDir,
        plugins: isMountPoint(plugins) ? plugins : null,
        pluginsMount: PLUGINS_MOUNT,
      },
      true,
    );
    const { file, args: argv } = bootArgv(bwrap, this.base, this.entryPrefix(3), args);
    // A clean environment: nothing of the service's (database URL, admin password) reaches a board.
    return spawn(file, argv, { stdio: ['pipe', 'ignore', 'pipe', 'pipe'], env: { PATH: PATH_ENV } });
  }

  private async bootOnce(reason: string, imageNote?: string): Promise<void> {
    let child: ChildProcess;
    // Compiled while the sandbox comes up (once per service; a no-op after the first boot).
    const hostBuilt = this.init.sandboxed ? this.ptyHostReady() : Promise.resolve(false);
    if (this.init.sandboxed) {
      child = this.spawnSandbox();
    } else {
      // Unsandboxed (operator opt-in without bubblewrap): the board is a process group on the host,
      // its members marked by an environment variable; its tree is prepared from the host.
      ensureMountPoints(this.rootDir);
      writeIdentity(this.rootDir, { hostname: this.hostname });
      child = spawn('/usr/bin/sleep', ['infinity'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        cwd: fs.realpathSync(this.rootDir),
        env: { PATH: PATH_ENV, BIANBU_BOARD: this.boardId },
        detached: true,
      });
    }
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-2000);
    });
    child.stdin?.on('error', () => {});
    const pid = await withTimeout(
      new Promise<number>((resolve, reject) => {
        child.once('error', reject);
        if (!this.init.sandboxed) {
          child.once('spawn', () => resolve(child.pid ?? 0));
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
        child.once('exit', (code) =>
          reject(new DriverError('driver.failed', `bwrap exited with ${code}: ${stderr.trim()}`)),
        );
        child.once('spawn', () => {
          mapUserNamespace(child.pid ?? 0, this.base ?? 0, this.timeoutMs).then(
            () => child.stdin?.end('go\n'),
            (err) => reject(new DriverError('driver.failed', (err as Error).message)),
          );
        });
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
    let osName = '';
    try {
      // bwrap reports its pid before it has finished setting up: its first process starts in the
      // host's root, moves to a bare tmpfs while it mounts the board's tree, and only then into the
      // tree, every mount in place. So the board is up once that process's root is the board's root
      // directory (same device and inode) and a program runs in it; a program alone can run in the
      // host's root, and the next one then finds no /usr (a fresh-clone CI run caught that under load).
      const deadline = Date.now() + this.timeoutMs;
      const root = this.init.sandboxed ? fs.statSync(this.rootDir) : null;
      for (;;) {
        try {
          if (root) {
            const now = fs.statSync(`/proc/${pid}/root`);
            if (now.dev !== root.dev || now.ino !== root.ino)
              throw new Error('the sandbox is still being set up');
          }
          await this.runInBoard(['/usr/bin/true'], 'root', this.timeoutMs);
          break;
        } catch (err) {
          if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null) throw err;
          await sleep(15);
        }
      }
      // The board's own files are set up from inside it, as its root: a link the board planted can
      // only point at another file of the same board.
      if (this.init.sandboxed)
        await this.runInBoard(['/bin/sh', '-c', BOOT_SCRIPT, 'boot', this.hostname], 'root', this.timeoutMs);
      // The board's PTY host starts with the board, and with it the limit on the board's terminals
      // (its devpts's max, set by the terminal helper): before anything of the board's own runs, a
      // desktop's xterm or code-server's terminal as much as a shell. Linux counts terminals
      // machine-wide, so an unbounded board could take every other board's. Without it (no C
      // compiler, a host that fails to start) the board still boots; shells retry the host.
      if (await hostBuilt)
        await this.boardPtyHost()
          .warm()
          .catch((err: Error) =>
            this.init.log?.("a board's PTY host did not start with it", {
              boardId: this.boardId,
              why: err.message,
            }),
          );
      osName = await this.osName();
    } catch (err) {
      // The whole sandbox goes, as at a stop: killing only the launcher left the namespace's pid 1
      // running, holding the board's tree (seen after a failed boot in CI: an orphaned bwrap).
      await this.killSandbox();
      throw new DriverError(
        'driver.failed',
        `The board did not boot: ${stderr.trim() || (err as Error).message}`,
      );
    }
    child.once('exit', () => {
      if (this.outer === child) {
        this.outer = null;
        this.initPid = 0;
        if (!this.stopping && !this.expectedExit)
          this.init.log?.('board sandbox exited', { boardId: this.boardId, stderr: stderr.trim() });
      }
    });
    this.serial.bootLog({
      reason,
      model: this.init.model,
      memoryMb: this.init.options.memoryMb,
      cores: this.cores(),
      imageNote,
      osName,
    });
  }

  private async killSandbox(): Promise<void> {
    const child = this.outer;
    const pid = this.initPid;
    const before = this.init.sandboxed && this.nsKey ? (pidsByNamespace(0).get(this.nsKey) ?? []) : [];
    this.expectedExit = true;
    this.closeSftp();
    // Shells are killed last: their nsenter parents must stay alive to reap the board's processes,
    // which the namespace's death waits for.
    const killPtys = () => {
      this.ptyHost?.stop();
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
    // The host's switch: whatever of the board is still in its groups (a fork bomb's children that
    // raced the namespace's end, processes entering it) is killed there, needing nothing of the board.
    if (this.init.sandboxed && !(await this.cgroups?.killAll()))
      this.init.log?.('board processes survived a kill of its cgroups', { boardId: this.boardId });
    // The kernel kills the namespace's members asynchronously; wait until they are gone.
    for (let i = 0; i < 200 && before.some((m) => isAlive(m) && namespaceOf(m) === this.nsKey); i++)
      await sleep(10);
    killPtys();
    this.outer = null;
    this.initPid = 0;
  }

  /** The host-side start of every process entering the board: inherited descriptors closed, cgroups joined. */
  private entryPrefix(keepFds = 2): string[] {
    return entryPrefix(this.cgroups?.joinScript() ?? '', keepFds);
  }

  /** argv prefix that runs a program inside the board as `user`, capabilities dropped. */
  private enter(user: string, cwd: string, keepFds = 2): { file: string; args: string[] } {
    const u = BOARD_USERS.find((x) => x.name === user);
    if (!u) throw new DriverError('driver.failed', `Unknown board user ${user}`);
    if (!this.init.sandboxed) {
      const hostCwd = path.join(fs.realpathSync(this.rootDir), cwd);
      const privs = [
        ...(u.uid ? [`--reuid=${u.uid}`, `--regid=${u.gid}`, '--init-groups'] : []),
        '--bounding-set=-all',
        '--inh-caps=-all',
        '--no-new-privs',
        '--',
      ];
      return { file: '/usr/bin/env', args: ['-C', hostCwd, '--', '/usr/bin/setpriv', ...privs] };
    }
    if (!this.running) throw new DriverError('board.not_running', 'The board is not running');
    return enterArgv(this.initPid, u, cwd, this.entryPrefix(keepFds), this.userns);
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

  /**
   * Whether the PTY host program is built (it is compiled once, at the first shell). Without a C
   * compiler, shells fall back to `script` as a relay inside the board, slower; the reason is logged.
   */
  private async ptyHostReady(): Promise<boolean> {
    try {
      await ptyHostProgram();
      return true;
    } catch (err) {
      if (!ptyHostWarned) {
        ptyHostWarned = true;
        this.init.log?.('shells use the script relay', { why: (err as Error).message });
      }
      return false;
    }
  }

  private boardPtyHost(): BoardPtyHost {
    this.ptyHost ??= new BoardPtyHost({
      launch: () => this.enter('root', '/', 3),
      env: { PATH: PATH_ENV },
      timeoutMs: this.timeoutMs,
      log: this.init.log,
      terminals: this.init.terminals,
    });
    return this.ptyHost;
  }

  openShell(size: PtySize, env: Record<string, string> = {}): Promise<PtyHandle> {
    return this.spawnShell(size, 'root', env);
  }

  private async spawnShell(size: PtySize, user: string, env: Record<string, string>): Promise<PtyHandle> {
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

  /** Runs argv inside the board (no shell involved) and answers stdout. */
  private runInBoard(
    argv: string[],
    user: string,
    timeoutMs: number,
    maxBuffer = 1024 * 1024,
  ): Promise<string> {
    // From /, not the user's home: a board whose /root was removed still answers probes.
    const { file, args } = this.enter(user, '/');
    return new Promise((resolve, reject) => {
      execFile(
        file,
        [...args, ...argv],
        {
          timeout: timeoutMs,
          killSignal: 'SIGKILL',
          maxBuffer,
          env: this.shellEnv(user, {}),
          encoding: 'utf8',
        },
        (err, stdout, stderr) => {
          if (err) {
            const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
            if (e.killed) reject(new DriverError('driver.timeout', `Timed out after ${timeoutMs} ms`));
            else
              reject(
                Object.assign(
                  new DriverError('driver.command_failed', stderr.trim().slice(-500) || e.message),
                  { exitCode: e.code },
                ),
              );
          } else {
            this.enteredAt = Date.now();
            resolve(stdout);
          }
        },
      );
    });
  }

  // ---- files: an SFTP server inside the board ---------------------------------------------------

  /** The board's file server: one sftp-server process inside the board, started on first need. */
  private sftpSession(): Promise<SFTPWrapper> {
    if (this.sftp && this.sftp.child.exitCode === null && this.sftp.child.signalCode === null)
      return this.sftp.session;
    const server = hostSupport().sftpServer;
    if (!server)
      return Promise.reject(
        new DriverError('capability.unsupported', 'OpenSSH sftp-server is not installed on this host'),
      );
    if (!this.running)
      return Promise.reject(new DriverError('board.not_running', 'The board is not running'));
    const { file, args } = this.enter('root', '/');
    const child = spawn(file, [...args, server], {
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { PATH: PATH_ENV, HOME: '/root' },
    });
    const session = openSftpOverStdio({
      stdin: child.stdin,
      stdout: child.stdout,
      kill: () => child.kill('SIGKILL'),
    });
    const entry = { session, child };
    this.sftp = entry;
    child.once('exit', () => {
      if (this.sftp === entry) this.sftp = null;
    });
    session.catch(() => {
      if (this.sftp === entry) this.sftp = null;
      child.kill('SIGKILL');
    });
    return session;
  }

  private closeSftp(): void {
    const s = this.sftp;
    this.sftp = null;
    s?.child.kill('SIGKILL');
  }

  /** Temporary files of uploads a crash interrupted are removed (inside the board) when it is up again. */
  private async sweepUploads(): Promise<void> {
    try {
      const { removed } = await withTimeout(
        this.sftpSession().then((sftp) => this.journal.sweep(sftp)),
        this.timeoutMs,
        'upload sweep',
      );
      if (removed.length)
        this.init.log?.('removed interrupted uploads', { boardId: this.boardId, files: removed.length });
    } catch (err) {
      this.init.log?.('could not sweep interrupted uploads', {
        boardId: this.boardId,
        err: (err as Error).message,
      });
    }
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

  /**
   * The board's processes, those of its PID namespace. Where the board has a cgroup, its few entries
   * are read (less the host-side launchers in it: bwrap's outer process, nsenter) instead of a scan
   * of every process of the host.
   */
  members(): number[] {
    if (this.init.sandboxed) {
      const ns = this.nsKey;
      if (!ns) return [];
      return (
        this.cgroups?.processes()?.filter((pid) => namespaceOf(pid) === ns) ?? pidsByNamespace().get(ns) ?? []
      );
    }
    const out: number[] = [];
    for (const name of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const env = fs.readFileSync(`/proc/${name}/environ`, 'latin1');
        if (
          env.includes(`\0BIANBU_BOARD=${this.boardId}\0`) ||
          env.startsWith(`BIANBU_BOARD=${this.boardId}\0`)
        )
          out.push(Number(name));
      } catch {}
    }
    return out;
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

/**
 * Run inside a booted board as its root: the hostname files follow the board's name, and the
 * sticky scratch directories exist. $1 is the hostname. Whatever the board's user did to these paths
 * (a link, a directory in the way) only makes a step fail inside the board; the board still boots.
 */
const BOOT_SCRIPT = [
  'mkdir -p /tmp /var/tmp 2>/dev/null; chmod 1777 /tmp /var/tmp 2>/dev/null',
  'printf "%s\\n" "$1" > /etc/hostname 2>/dev/null',
  'printf "127.0.0.1\\tlocalhost\\n127.0.1.1\\t%s\\n::1\\tlocalhost ip6-localhost\\n" "$1" > /etc/hosts 2>/dev/null',
  'exit 0',
].join('\n');

/** Set once the PTY host's build failure was logged. */
let ptyHostWarned = false;

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
    hostPid: p.pid,
    write: (d) => {
      if (!exited) p.write(d);
    },
    resize: (s) => {
      if (!exited) p.resize(Math.max(1, s.cols), Math.max(1, s.rows));
    },
    onData: (fn) => {
      const d = p.onData((chunk: string | Buffer) =>
        fn(typeof chunk === 'string' ? Buffer.from(chunk) : chunk),
      );
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
