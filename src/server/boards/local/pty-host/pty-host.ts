// The service's side of a board's PTY host (host.c): starts it inside the board on the first shell,
// opens login shells through it, and hands each out as the driver's PtyHandle. One pipe per board
// carries every shell's frames (protocol.ts); output payloads are slices of the chunks read, so a
// shell's bytes reach the session without a copy and without a fork of the service per shell.
//
// The host is the board's: its root can kill it, replace it, or make it say anything. So every frame
// is bounded (FrameReader), its type and shell id checked, and a host that breaks the protocol, ignores
// flow control or stops reading its input is killed; its shells end, and the next open starts a new one.
// A board's shells never see another board's: each board has its own host and pipe.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DriverError, type PtyHandle, type PtySize } from '../../driver.ts';
import { withTimeout } from '../../util.ts';
import { type Frame, FrameReader, FromHost, frame, MAX_FRAME, ToHost } from './protocol.ts';

const run = promisify(execFile);

/** Input is cut into frames of at most this many bytes. */
const INPUT_SLICE = 64 * 1024;
/** Output a paused shell may still receive (frames in flight) before the host is held. */
const PAUSED_SLACK = 1024 * 1024;
/** Input the host may leave unread before it is taken for stuck and killed. */
const MAX_UNREAD_INPUT = 8 * 1024 * 1024;

let program: Promise<number> | undefined;

/**
 * The host program (host.c), compiled once per service with the machine's C compiler and held open
 * read-only: its descriptor is passed to each board's host as fd 3 and run from there, so nothing of
 * the service's is on a path inside a board. Rejects with the compiler's message when it cannot build.
 */
export function ptyHostProgram(): Promise<number> {
  program ??= compileHost();
  return program;
}

async function compileHost(): Promise<number> {
  const src = path.join(path.dirname(fileURLToPath(import.meta.url)), 'host.c');
  // A directory of the service's own (0700), removed once the program is open.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-pty-host-'));
  try {
    const bin = path.join(dir, 'bianbu-pty-host');
    await run(process.env.CC || 'cc', ['-O2', '-o', bin, src], { timeout: 120_000, encoding: 'utf8' }).catch(
      (err: Error & { stderr?: string }) => {
        throw new Error(`cannot compile the PTY host: ${(err.stderr || err.message).trim().slice(-500)}`);
      },
    );
    // A board's root is an unprivileged uid on the host: it runs the program as "other".
    fs.chmodSync(bin, 0o755);
    return fs.openSync(bin, 'r');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
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
}

export interface OpenSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  size: PtySize;
}

type Listener<T> = (v: T) => void;

class HostShell implements PtyHandle {
  private readonly dataListeners = new Set<Listener<Buffer>>();
  private readonly exitListeners = new Set<Listener<{ exitCode: number | null; reason?: string }>>();
  boardPid = 0;
  ended = false;
  paused = false;
  /** Bytes received since the last pause. */
  sincePause = 0;
  private resolvedHostPid: number | undefined;

  constructor(
    private readonly host: BoardPtyHost,
    readonly id: number,
  ) {}

  get hostPid(): number | undefined {
    if (this.resolvedHostPid === undefined && this.boardPid && !this.ended)
      this.resolvedHostPid = this.host.hostPidOf(this.boardPid);
    return this.resolvedHostPid;
  }

  /**
   * Output that came before anyone listened: the first prompt can arrive in the same read as the
   * "opened" frame, before open() has handed the shell out. Given to the first listener.
   */
  private early: Buffer[] | null = [];
  private endedWith: { exitCode: number | null; reason?: string } | null = null;

  data(b: Buffer): void {
    if (this.early) {
      if (this.early.reduce((n, x) => n + x.length, 0) < PAUSED_SLACK) this.early.push(b);
      return;
    }
    for (const l of this.dataListeners) l(b);
  }

  end(info: { exitCode: number | null; reason?: string }): void {
    if (this.ended) return;
    this.ended = true;
    this.endedWith = info;
    if (this.early) return;
    for (const l of this.exitListeners) l(info);
    this.dataListeners.clear();
    this.exitListeners.clear();
  }

  write(d: string | Buffer): void {
    if (this.ended) return;
    const b = typeof d === 'string' ? Buffer.from(d) : d;
    for (let at = 0; at < b.length; at += INPUT_SLICE)
      this.host.send(ToHost.input, this.id, b.subarray(at, at + INPUT_SLICE));
  }

  resize(s: PtySize): void {
    if (this.ended) return;
    const p = Buffer.allocUnsafe(4);
    p.writeUInt16BE(Math.min(0xffff, Math.max(1, s.cols)), 0);
    p.writeUInt16BE(Math.min(0xffff, Math.max(1, s.rows)), 2);
    this.host.send(ToHost.resize, this.id, p);
  }

  /** Once the caller has attached its listeners (in the same turn), gives them what came early. */
  private listened(): void {
    if (!this.early || this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => {
      const early = this.early ?? [];
      this.early = null;
      for (const b of early) for (const l of this.dataListeners) l(b);
      if (this.endedWith) {
        for (const l of this.exitListeners) l(this.endedWith);
        this.dataListeners.clear();
        this.exitListeners.clear();
      }
    });
  }
  private flushing = false;

  onData(fn: Listener<Buffer>): () => void {
    this.dataListeners.add(fn);
    this.listened();
    return () => this.dataListeners.delete(fn);
  }

  onExit(fn: Listener<{ exitCode: number | null; reason?: string }>): () => void {
    this.exitListeners.add(fn);
    this.listened();
    return () => this.exitListeners.delete(fn);
  }

  pause(): void {
    if (this.ended || this.paused) return;
    this.paused = true;
    this.sincePause = 0;
    this.host.send(ToHost.pause, this.id);
  }

  resume(): void {
    if (this.ended || !this.paused) return;
    this.paused = false;
    this.host.send(ToHost.resume, this.id);
    this.host.shellResumed();
  }

  close(): void {
    if (!this.ended) this.host.send(ToHost.signal, this.id, Buffer.from('SIGHUP'));
  }
}

export class BoardPtyHost {
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private readonly shells = new Map<number, HostShell>();
  private readonly opening = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private held = false;

  constructor(private readonly opts: PtyHostOptions) {}

  /** Opens `spec.argv` on a new terminal of the board. */
  async open(spec: OpenSpec): Promise<PtyHandle> {
    const payload = openPayload(spec);
    const child = await this.start();
    const id = this.nextId++;
    if (this.nextId > 0xffffffff) this.nextId = 1;
    const shell = new HostShell(this, id);
    this.shells.set(id, shell);
    const opened = new Promise<void>((resolve, reject) => {
      this.opening.set(id, { resolve, reject });
    });
    this.send(ToHost.open, id, payload);
    try {
      await withTimeout(opened, this.opts.timeoutMs, 'terminal open', undefined, () => {
        return new DriverError('driver.failed', 'The board did not open a terminal in time');
      });
    } catch (err) {
      this.opening.delete(id);
      this.shells.delete(id);
      if (this.child === child) this.send(ToHost.signal, id, Buffer.from('SIGKILL'));
      throw err;
    }
    return shell;
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
    const ready = new Promise<void>((resolve, reject) => {
      const onFrame = (f: Frame) => {
        if (f.type === FromHost.ready && f.id === 0) resolve();
        else this.onFrame(child, f);
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
    return child;
  }

  private onFrame(child: ChildProcess, f: Frame): void {
    if (this.child !== child) return;
    const shell = this.shells.get(f.id);
    switch (f.type) {
      case FromHost.data:
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
        shell.end({ exitCode: code, reason: signal ? `signal ${signal}` : undefined });
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
    for (const [id, w] of this.opening) {
      w.reject(new DriverError('driver.failed', 'The board ended its PTY host'));
      this.opening.delete(id);
    }
    for (const s of this.shells.values()) s.end({ exitCode: null, reason: 'the board ended' });
    this.shells.clear();
    if (stderr.trim()) this.opts.log?.("a board's PTY host ended", { stderr: stderr.trim() });
  }
}
