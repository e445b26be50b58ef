// The service's side of its terminal helper (ctl.c): one process per service, on the host, that makes
// the terminal calls Node cannot (ioctl, fchown on a descriptor) so the service can hold the masters of
// board terminals itself. Requests are lines answered in order; a helper that dies fails what waits and
// is started again at the next call.
import { type ChildProcess, spawn } from 'node:child_process';
import { compileProgram } from './compile.ts';
import { type Frame, FrameReader, FromCtl } from './protocol.ts';

let program: Promise<number> | undefined;

export class PtyCtl {
  private readonly waiting: { resolve: (words: string[]) => void; reject: (e: Error) => void }[] = [];
  private buffered = '';
  /** Who takes the frames of each terminal the helper reads (by the id given with "read"). */
  private readonly readers = new Map<number, (f: Frame) => void>();
  private nextReader = 1;

  private constructor(private readonly child: ChildProcess) {}

  get pid(): number {
    return this.child.pid ?? 0;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null && !this.child.stdin?.destroyed;
  }

  /** `prog`: another program of the same shape (relay.c), compiled, and its arguments. */
  static async start(prog?: Promise<number>, args: string[] = []): Promise<PtyCtl> {
    program ??= compileProgram('ctl.c', 'bianbu-pty-ctl', 'the terminal helper');
    const fd = await (prog ?? program);
    const child = spawn('/proc/self/fd/3', args, { stdio: ['pipe', 'pipe', 'pipe', fd, 'pipe'] });
    const ctl = new PtyCtl(child);
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-1000);
    });
    child.stdin?.on('error', () => {});
    const ready = new Promise<void>((resolve, reject) => {
      ctl.waiting.push({ resolve: () => resolve(), reject });
    });
    child.stdout?.setEncoding('latin1');
    child.stdout?.on('data', (s: string) => ctl.onData(s));
    const frames = new FrameReader(undefined, new Set([FromCtl.data]));
    const onFrame = (f: Frame) => ctl.readers.get(f.id)?.(f);
    (child.stdio[4] as NodeJS.ReadableStream | null)?.on('data', (chunk: Buffer) => {
      try {
        frames.push(chunk, onFrame);
      } catch {
        child.kill('SIGKILL'); // ours, so never: but a broken stream is not read on
      }
    });
    child.once('exit', (code, signal) =>
      ctl.fail(new Error(`the terminal helper ended (${signal ?? code}) ${stderr}`)),
    );
    child.once('error', (err) => ctl.fail(err));
    await ready;
    return ctl;
  }

  /** Sends one request line; answers the words after "ok", or rejects with the helper's reason. */
  request(line: string): Promise<string[]> {
    if (!this.alive) return Promise.reject(new Error('the terminal helper is not running'));
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.child.stdin?.write(`${line}\n`);
    });
  }

  stop(): void {
    this.child.kill('SIGKILL');
  }

  /** A reader id for "read", whose frames go to `fn` until `unlisten`. */
  listen(fn: (f: Frame) => void): number {
    const id = this.nextReader++;
    this.readers.set(id, fn);
    return id;
  }

  unlisten(id: number): void {
    this.readers.delete(id);
  }

  private onData(s: string): void {
    this.buffered += s;
    let nl = this.buffered.indexOf('\n');
    while (nl >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      const w = this.waiting.shift();
      const words = line.split(' ');
      if (w) {
        if (words[0] === 'ok' || words[0] === 'ready') w.resolve(words.slice(1));
        else w.reject(new Error(line.slice(4) || line));
      }
      nl = this.buffered.indexOf('\n');
    }
  }

  private fail(err: Error): void {
    for (const w of this.waiting.splice(0)) w.reject(err);
    // What it was reading is the service's to read again.
    const readers = [...this.readers.values()];
    this.readers.clear();
    for (const fn of readers) fn({ type: FromCtl.released, id: 0, payload: Buffer.alloc(0) });
  }
}

/**
 * One process of a kind for the service: started at the first call, and again at a call after it
 * ended; a start that fails is tried again at the next call.
 */
export function restartable<T extends { readonly alive: boolean }>(
  start: () => Promise<T>,
): () => Promise<T> {
  let current: Promise<T> | undefined;
  const get = (): Promise<T> => {
    const c = current;
    if (c) {
      return c.then((p) => {
        if (p.alive) return p;
        if (current === c) current = undefined;
        return get();
      });
    }
    const started = start();
    current = started;
    started.catch(() => {
      if (current === started) current = undefined;
    });
    return started;
  };
  return get;
}

/** The service's helper, started at the first call and again after it ended; rejects if it cannot run. */
export const ptyCtl: () => Promise<PtyCtl> = restartable(() => PtyCtl.start());
