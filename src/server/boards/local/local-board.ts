// A board on this host, its launch half: one long-lived bubblewrap sandbox in a user namespace of its
// own. `start()` claims the board's host uid range, creates its cgroups, attaches its disk (an ext4
// image on a loop device where the host has them) and boots it (sandbox.ts describes the launch chain;
// its pid 1 is bwrap, which reaps, and `sleep infinity` keeps the board up). Everything that reaches
// into the running board — shells' PTY host, commands, the board's file server (OpenSSH's sftp-server,
// spoken to with ssh2's SFTP client) — enters it with nsenter, so all of them share its processes,
// limits and view of its files: the host never resolves a path inside a board. `stop()` kills the
// sandbox and detaches its disk. What a user does with the board (files, metrics, power, flash,
// plugins, desktop, ports) is LocalDriver's, in local-driver.ts.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as pty from 'node-pty';
import type { LocalDriverOptions } from '#shared/boards.ts';
import { DriverError, type PtyHandle, type PtySize } from '../driver.ts';
import { TempJournal } from '../sftp/temp-journal.ts';
import { sleep, withTimeout } from '../util.ts';
import { BoardSftp } from './board-sftp.ts';
import { BoardCgroups, cpuBound } from './cgroups.ts';
import { BoardDisk, isMountPoint } from './disk.ts';
import { hostSupport } from './host-support.ts';
import { namespaceOf, pidsByNamespace } from './procfs.ts';
import { BoardPtyHost, ptyHostProgram } from './pty-host/pty-host.ts';
import { unmountAll } from './recovery.ts';
import { BOARD_USERS, createDefaultRoot, ensureMountPoints, writeIdentity } from './rootfs.ts';
import { bootArgv, bwrapArgs, enterArgv, entryPrefix, mapUserNamespace, PATH_ENV } from './sandbox.ts';
import { SerialConsole } from './serial.ts';
import { claimIdentity, DEFAULT_SLOT_REGISTRY, shiftOwnership } from './uid-slots.ts';

/** Where plugins appear inside a board (the host's plugins directory, bound read-only). */
export const PLUGINS_MOUNT = '/opt/bianbu/plugins';

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

/** What every local board is before the service drives it: launched, entered, its shells hosted. */
export abstract class LocalBoard {
  readonly boardId: string;
  /** The board's root on the host: `<runDir>/<slot>/root` for sandboxed boards. */
  protected rootDir: string;
  protected readonly serial: SerialConsole;
  protected readonly userns: boolean;
  protected outer: ChildProcess | null = null;
  protected initPid = 0;
  protected nsKey: string | null = null;
  protected stopping = false;
  protected started: Promise<void> = Promise.resolve();
  protected expectedExit = false;
  protected swapping = false;
  protected booting: Promise<void> | null = null;
  /** When a process last entered the board and ran to success (runInBoard): the probe's full check. */
  protected enteredAt = 0;
  /** The last CPU sample (metrics), dropped at each boot. */
  protected lastCpu: { at: number; seconds: number } | null = null;
  protected readonly ptys = new Set<pty.IPty>();
  protected ptyHost: BoardPtyHost | null = null;
  protected readonly timeoutMs: number;
  protected hostname: string;
  /** Host uid/gid of root inside the board (null until started, and for unsandboxed boards). */
  protected base: number | null = null;
  protected cgroups: BoardCgroups | null = null;
  protected diskImage: BoardDisk | null = null;
  /** The board's file server (board-sftp.ts). */
  protected readonly sftp: BoardSftp;
  protected readonly journal: TempJournal;

  constructor(protected readonly init: LocalBoardInit) {
    this.boardId = init.boardId;
    this.hostname = init.name;
    this.rootDir = path.join(init.boardDir, 'root');
    this.timeoutMs = init.callTimeoutMs ?? 15_000;
    this.userns = init.sandboxed;
    this.journal = new TempJournal(path.join(init.boardDir, 'uploads.journal'));
    this.sftp = new BoardSftp({
      boardId: init.boardId,
      running: () => this.running,
      enterAsRoot: () => this.enter('root', '/'),
      journal: this.journal,
      timeoutMs: this.timeoutMs,
      log: init.log,
    });
    this.serial = new SerialConsole({
      hostname: () => this.hostname,
      users: async () => BOARD_USERS.map((u) => u.name),
      openShellAs: (user, size) => this.spawnShell(size, user, {}),
    });
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

  protected cores(): number {
    const host = os.availableParallelism();
    return Math.max(1, Math.min(this.init.cores ?? host, host));
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
      if (this.init.sandboxed) await this.sftp.sweepUploads();
    })();
    return this.started;
  }

  /** Identity, limits and disk of a sandboxed board; everything here happens while no board process runs. */
  protected async prepareSandbox(): Promise<void> {
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
  protected async osName(): Promise<string> {
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
  protected async populateDefault(dir: string): Promise<void> {
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

  protected boot(reason: string, imageNote?: string): Promise<void> {
    if (this.booting) return this.booting;
    this.booting = this.bootOnce(reason, imageNote).finally(() => {
      this.booting = null;
    });
    return this.booting;
  }

  protected spawnSandbox(): ChildProcess {
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

  protected async bootOnce(reason: string, imageNote?: string): Promise<void> {
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

  protected async killSandbox(): Promise<void> {
    const child = this.outer;
    const pid = this.initPid;
    const before = this.init.sandboxed && this.nsKey ? (pidsByNamespace(0).get(this.nsKey) ?? []) : [];
    this.expectedExit = true;
    this.sftp.close();
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
  protected entryPrefix(keepFds = 2): string[] {
    return entryPrefix(this.cgroups?.joinScript() ?? '', keepFds);
  }

  /** argv prefix that runs a program inside the board as `user`, capabilities dropped. */
  protected enter(user: string, cwd: string, keepFds = 2): { file: string; args: string[] } {
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

  protected shellEnv(user: string, extra: Record<string, string>): Record<string, string> {
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
  protected async ptyHostReady(): Promise<boolean> {
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

  protected boardPtyHost(): BoardPtyHost {
    this.ptyHost ??= new BoardPtyHost({
      launch: () => this.enter('root', '/', 3),
      env: { PATH: PATH_ENV },
      timeoutMs: this.timeoutMs,
      log: this.init.log,
      terminals: this.init.terminals,
    });
    return this.ptyHost;
  }

  /** Runs argv inside the board (no shell involved) and answers stdout. */
  protected runInBoard(
    argv: string[],
    user: string,
    timeoutMs: number,
    maxBuffer = 1024 * 1024,
  ): Promise<string> {
    // From /, not the user's home: a board whose /root was removed still answers probes.
    const { file, args } = this.enter(user, '/');
    return new Promise((resolve, reject) => {
      const child = execFile(
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
      // Nothing is ever written to it: a program that reads stdin (a plugin, say) gets end of file at
      // once instead of waiting on an open pipe until the timeout kills it.
      child.stdin?.end();
    });
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

  /** A login shell of `user` (the serial console's login opens one). */
  protected abstract spawnShell(size: PtySize, user: string, env: Record<string, string>): Promise<PtyHandle>;
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
