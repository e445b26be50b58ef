// The service's side of a board's PTY host (host.c): starts it inside the board on the first shell,
// opens login shells through it, and hands each out as the driver's PtyHandle. One pipe per board
// carries every shell's frames (protocol.ts); output payloads are slices of the chunks read, so a
// shell's bytes reach the session without a copy and without a fork of the service per shell.
//
// The host is the board's: its root can kill it, replace it, or make it say anything. So every frame
// is bounded (FrameReader), its type and shell id checked, and a host that breaks the protocol, ignores
// flow control or stops reading its input is killed; its shells end, and the next open starts a new one.
// A board's shells never see another board's: each board has its own host and pipe.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { DriverError, type PtyHandle, type PtySize } from '../../driver.ts';
import { withTimeout } from '../../util.ts';
import { BOARD_TERMINALS } from './budget.ts';
import { compileProgram } from './compile.ts';
import { type PtyCtl, ptyCtl } from './ctl.ts';
import { clampSize, HostShell, MAX_UNREAD_INPUT, PAUSED_SLACK, type ShellHost } from './host-shell.ts';
import { type Frame, FrameReader, FromHost, frame, MAX_FRAME, ToHost } from './protocol.ts';

let program: Promise<number> | undefined;

/**
 * The host program (host.c), compiled once per service with the machine's C compiler and held open
 * read-only: its descriptor is passed to each board's host as fd 3 and run from there, so nothing of
 * the service's is on a path inside a board. Rejects with the compiler's message when it cannot build.
 */
export function ptyHostProgram(): Promise<number> {
  program ??= compileProgram('host.c', 'bianbu-pty-host', 'the PTY host');
  return program;
}

/** The open frame's payload: u16 cols, rows, argc, envc; then cwd, argv and env as NUL-ended strings. */
export function openPayload(spec: OpenSpec): Buffer {
  const env = Object.entries(spec.env).map(([k, v]) => `${k}=${v}`);
  const strings = [spec.cwd, ...spec.argv, ...env];
  const body = Buffer.from(`${strings.join('\0')}\0`);
  if (
    spec.argv.length < 1 ||
    spec.argv.length > 256 ||
    env.length > 1024 ||
    strings.some((x) => x.includes('\0')) ||
    8 + body.length > MAX_FRAME
  )
    throw new DriverError('driver.failed', 'A shell cannot be started with these arguments');
  const head = Buffer.allocUnsafe(8);
  head.writeUInt16BE(Math.min(0xffff, Math.max(1, spec.size.cols)), 0);
  head.writeUInt16BE(Math.min(0xffff, Math.max(1, spec.size.rows)), 2);
  head.writeUInt16BE(spec.argv.length, 4);
  head.writeUInt16BE(env.length, 6);
  return Buffer.concat([head, body]);
}

export interface PtyHostOptions {
  /** argv that enters the board as its root with descriptor 3 kept; the program's path follows. */
  launch: () => { file: string; args: string[] };
  env: Record<string, string>;
  timeoutMs: number;
  log?: (msg: string, data?: Record<string, unknown>) => void;
  /** The board's devpts max= (budget.ts; default BOARD_TERMINALS). */
  terminals?: number;
}

export interface OpenSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  size: PtySize;
}

export class BoardPtyHost implements ShellHost {
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private readonly shells = new Map<number, HostShell>();
  private readonly opening = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private held = false;
  /** Floods whose reading went to the terminal helper (for tests and the curious). */
  handOffs = 0;
  /**
   * The board's ptmx, held by the service's terminal helper (ctl.c) for this host: terminals are made
   * through it and their masters held here. Null when the host offered none or it was not one: then
   * every shell's bytes go through the host.
   */
  private ptmx: { ctl: PtyCtl; held: number; uid: number; gid: number } | null = null;
  /** The host's descriptors of that ptmx and of its devpts root, as its ready frame said. */
  private ptmxFd = -1;
  private ptsFd = -1;

  constructor(private readonly opts: PtyHostOptions) {}

  /** Whether shells of this host are read by the service itself (no relay through the board). */
  get direct(): boolean {
    return this.ptmx !== null;
  }

  /** The terminal helper, while it runs. */
  get ctl(): PtyCtl | null {
    return this.ptmx?.ctl.alive ? this.ptmx.ctl : null;
  }

  /** Opens `spec.argv` on a new terminal of the board. */
  async open(spec: OpenSpec): Promise<PtyHandle> {
    const payload = openPayload(spec);
    const child = await this.start();
    const id = this.nextId++;
    if (this.nextId > 0xffffffff) this.nextId = 1;
    const master = await this.openMaster(spec.size);
    if (this.child !== child) {
      // The host ended meanwhile: the terminal was made through its ptmx, so start over.
      if (master) fs.closeSync(master.fd);
      return this.open(spec);
    }
    const shell = new HostShell(this, id);
    shell.viaMaster = master !== null;
    this.shells.set(id, shell);
    const opened = new Promise<void>((resolve, reject) => {
      this.opening.set(id, { resolve, reject });
    });
    if (master) {
      const pts = Buffer.allocUnsafe(4);
      pts.writeUInt32BE(master.pts, 0);
      this.send(ToHost.openPts, id, Buffer.concat([pts, payload]));
    } else {
      this.send(ToHost.open, id, payload);
    }
    try {
      await withTimeout(opened, this.opts.timeoutMs, 'terminal open', undefined, () => {
        return new DriverError('driver.failed', 'The board did not open a terminal in time');
      });
    } catch (err) {
      this.opening.delete(id);
      this.shells.delete(id);
      if (master) fs.closeSync(master.fd);
      if (this.child === child) this.send(ToHost.signal, id, Buffer.from('SIGKILL'));
      throw err;
    }
    // Read once the program holds the terminal: before, the helper's closing of it reads as its end.
    if (master) shell.attachMaster(master.fd);
    return shell;
  }

  /**
   * A new terminal in the board's devpts whose master only the service holds (ctl.c): its number and
   * the master. Null when this host has no ptmx or the helper fails (the shell is relayed instead).
   */
  private async openMaster(size: PtySize): Promise<{ fd: number; pts: number } | null> {
    // A helper that ended took its copy of the ptmx with it: the next one takes it again.
    if (this.ptmx && !this.ptmx.ctl.alive && this.child && this.ptmxFd >= 0)
      this.ptmx = await this.takePtmx(this.child, this.ptmxFd);
    const p = this.ptmx;
    if (!p?.ctl.alive) return null;
    let fd = -1;
    try {
      const { O_RDWR, O_NOCTTY, O_NONBLOCK } = fs.constants;
      fd = fs.openSync(`/proc/${p.ctl.pid}/fd/${p.held}`, O_RDWR | O_NOCTTY | O_NONBLOCK);
      const { cols, rows } = clampSize(size);
      const [n] = await p.ctl.request(`pty ${fd} ${cols} ${rows} ${p.uid} ${p.gid}`);
      const pts = Number(n);
      if (!Number.isSafeInteger(pts) || pts < 0 || pts > 0xffffffff) throw new Error(`terminal number ${n}`);
      return { fd, pts };
    } catch (err) {
      if (fd >= 0) fs.closeSync(fd);
      this.opts.log?.('a shell is relayed by the PTY host: its terminal could not be made here', {
        why: (err as Error).message,
      });
      return null;
    }
  }

  /** One request to the terminal helper of this host's ptmx; rejects when there is none. */
  ctlCall(line: string): Promise<string[]> {
    return this.ptmx ? this.ptmx.ctl.request(line) : Promise.reject(new Error('no terminal helper'));
  }

  /**
   * Takes the host's ptmx handle (descriptor `fd` of the host, the entry's child) into the terminal
   * helper, which checks that it is a devpts ptmx. Null, and shells relayed, when anything fails.
   */
  private async takePtmx(child: ChildProcess, fd: number): Promise<BoardPtyHost['ptmx']> {
    const entry = child.pid;
    if (!entry) return null;
    try {
      const ctl = await ptyCtl();
      const kids = fs.readFileSync(`/proc/${entry}/task/${entry}/children`, 'latin1').trim().split(/\s+/);
      if (kids.length !== 1 || !/^\d+$/.test(kids[0]))
        throw new Error(`the entry has ${kids.length} children`);
      const bound = this.ptsFd >= 0 ? ` ${this.ptsFd} ${this.opts.terminals ?? BOARD_TERMINALS}` : '';
      const [held, uid, gid, bounded] = (await ctl.request(`ptmx ${kids[0]} ${entry} ${fd}${bound}`)).map(
        Number,
      );
      if (![held, uid, gid].every(Number.isSafeInteger)) throw new Error('the helper answered nonsense');
      if (bounded !== 1)
        this.opts.log?.("a board's terminals are not bounded: its devpts has no max", {
          offered: bound !== '',
        });
      return { ctl, held, uid, gid };
    } catch (err) {
      this.opts.log?.("shells are relayed by the board's PTY host", { why: (err as Error).message });
      return null;
    }
  }

  /** Ends the host (its shells end with it). */
  stop(): void {
    this.child?.kill('SIGKILL');
  }

  send(type: number, id: number, payload?: Buffer): void {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) return;
    // One write, so one system call, per frame: keystrokes are small.
    const parts = frame(type, id, payload);
    stdin.write(parts.length === 1 ? parts[0] : Buffer.concat(parts));
    if (stdin.writableLength > MAX_UNREAD_INPUT) this.kill('it stopped reading its input');
  }

  /** A shell resumed: if the host was held for a paused shell flooding, read again. */
  shellResumed(): void {
    if (!this.held) return;
    for (const s of this.shells.values()) if (s.paused && s.sincePause > PAUSED_SLACK) return;
    this.held = false;
    this.child?.stdout?.resume();
  }

  /**
   * Host pid of the program `boardPid` names inside the board: a child of this host's node (itself the
   * child of the entry process the service spawned) whose innermost pid is `boardPid`. Read from the
   * host's /proc (numbers the kernel writes), never from inside the board.
   */
  hostPidOf(boardPid: number): number | undefined {
    const entry = this.child?.pid;
    if (!entry) return undefined;
    const parents = new Map<number, number>();
    for (const name of fs.readdirSync('/proc')) {
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue;
      try {
        const stat = fs.readFileSync(`/proc/${name}/stat`, 'latin1');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        parents.set(Number(name), ppid);
      } catch {}
    }
    const hosts = [...parents].filter(([, pp]) => pp === entry).map(([p]) => p);
    for (const [pid, pp] of parents) {
      if (!hosts.includes(pp)) continue;
      try {
        const status = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
        const ns = /^NSpid:\s+([\d\s]+)$/m.exec(status)?.[1].trim().split(/\s+/);
        if (ns && Number(ns[ns.length - 1]) === boardPid) return pid;
      } catch {}
    }
    return undefined;
  }

  /**
   * Starts the host now rather than at the first shell (a board's boot): the terminal helper then
   * takes its ptmx and bounds its devpts (a board it could not bound is logged by takePtmx).
   */
  async warm(): Promise<void> {
    await this.start();
  }

  private start(): Promise<ChildProcess> {
    const c = this.child;
    // One that died and whose exit is still on its way is as good as gone.
    if (c && c.exitCode === null && c.signalCode === null && !c.stdin?.destroyed) return Promise.resolve(c);
    if (c) this.ended(c, '');
    this.starting ??= this.launch().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async launch(): Promise<ChildProcess> {
    const prog = await ptyHostProgram().catch((err: Error) => {
      throw new DriverError('driver.failed', err.message);
    });
    const { file, args } = this.opts.launch();
    const child = spawn(file, [...args, '/proc/self/fd/3'], {
      stdio: ['pipe', 'pipe', 'pipe', prog],
      env: this.opts.env,
    });
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-2000);
    });
    child.stdin?.on('error', () => {});
    const reader = new FrameReader(undefined, new Set([FromHost.data]));
    let ptmxFd = -1;
    let ptsFd = -1;
    const ready = new Promise<void>((resolve, reject) => {
      const onFrame = (f: Frame) => {
        if (f.type === FromHost.ready && f.id === 0) {
          if (f.payload.length === 4 || f.payload.length === 8) ptmxFd = f.payload.readUInt32BE(0);
          if (f.payload.length === 8) ptsFd = f.payload.readUInt32BE(4);
          resolve();
        } else this.onFrame(child, f);
      };
      child.stdout?.on('data', (chunk: Buffer) => {
        try {
          reader.push(chunk, onFrame);
        } catch (err) {
          this.kill((err as Error).message, child);
        }
      });
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        reject(
          new DriverError(
            'driver.failed',
            `The board's PTY host ended (${signal ?? code}): ${stderr.trim()}`,
          ),
        );
        this.ended(child, stderr);
      });
    });
    await withTimeout(
      ready,
      this.opts.timeoutMs,
      'PTY host start',
      undefined,
      () => new DriverError('driver.failed', 'The board did not start its PTY host in time'),
    ).catch((err: unknown) => {
      child.kill('SIGKILL');
      throw err;
    });
    this.child = child;
    this.ptmxFd = ptmxFd;
    this.ptsFd = ptsFd;
    this.ptmx = ptmxFd >= 0 ? await this.takePtmx(child, ptmxFd) : null;
    return child;
  }

  private onFrame(child: ChildProcess, f: Frame): void {
    if (this.child !== child) return;
    const shell = this.shells.get(f.id);
    switch (f.type) {
      case FromHost.data:
        if (shell?.direct) {
          this.kill('output for a terminal the service reads itself', child);
          return;
        }
        if (!shell || shell.ended) return;
        if (shell.paused) {
          shell.sincePause += f.payload.length;
          if (shell.sincePause > PAUSED_SLACK && !this.held) {
            // The host ignores this shell's pause: hold the whole board's pipe until it resumes.
            this.held = true;
            child.stdout?.pause();
          }
        }
        shell.data(f.payload);
        return;
      case FromHost.opened: {
        const waiting = this.opening.get(f.id);
        if (!shell || !waiting || f.payload.length !== 4) return;
        shell.boardPid = f.payload.readUInt32BE(0);
        this.opening.delete(f.id);
        waiting.resolve();
        return;
      }
      case FromHost.failed: {
        const waiting = this.opening.get(f.id);
        if (!waiting) return;
        this.opening.delete(f.id);
        this.shells.delete(f.id);
        waiting.reject(
          new DriverError(
            'driver.failed',
            `The board could not start a shell: ${f.payload.toString('utf8', 0, 500)}`,
          ),
        );
        return;
      }
      case FromHost.exit: {
        if (!shell || this.opening.has(f.id)) return;
        let info: { code?: unknown; signal?: unknown } = {};
        try {
          if (f.payload.length <= 256) info = JSON.parse(f.payload.toString('utf8'));
        } catch {}
        this.shells.delete(f.id);
        const code = Number.isSafeInteger(info.code) ? (info.code as number) : null;
        const signal = Number.isSafeInteger(info.signal) && info.signal ? (info.signal as number) : 0;
        shell.exited({ exitCode: code, reason: signal ? `signal ${signal}` : undefined });
        this.shellResumed();
        return;
      }
      default:
        this.kill(`unknown frame type ${f.type}`, child);
    }
  }

  private kill(why: string, child = this.child): void {
    if (!child) return;
    this.opts.log?.("a board's PTY host broke the protocol and was stopped", { why });
    child.kill('SIGKILL');
  }

  private ended(child: ChildProcess, stderr: string): void {
    if (this.child !== child) return;
    this.child = null;
    this.held = false;
    if (this.ptmx) void this.ptmx.ctl.request(`drop ${this.ptmx.held}`).catch(() => {});
    this.ptmx = null;
    this.ptmxFd = -1;
    this.ptsFd = -1;
    for (const [id, w] of this.opening) {
      w.reject(new DriverError('driver.failed', 'The board ended its PTY host'));
      this.opening.delete(id);
    }
    for (const s of this.shells.values()) s.end({ exitCode: null, reason: 'the board ended' });
    this.shells.clear();
    if (stderr.trim()) this.opts.log?.("a board's PTY host ended", { stderr: stderr.trim() });
  }
}
