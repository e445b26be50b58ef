// A QMP client (QEMU Machine Protocol, JSON lines over the machine's unix socket). Lifecycle: `connect`
// reads QEMU's greeting and enters command mode; `execute` sends one command at a time and answers its
// `return` (or rejects with its `error`); events are emitted as 'event'. The socket belongs to a QEMU
// process the service started, but what it says is still parsed defensively: lines are bounded.
import { EventEmitter } from 'node:events';
import type net from 'node:net';
import { DriverError } from '../driver.ts';
import { withTimeout } from '../util.ts';

const MAX_LINE = 1024 * 1024;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

export class Qmp extends EventEmitter {
  private buf = '';
  private readonly pending: Pending[] = [];
  private greeted: Pending | null = null;
  private closed = false;

  private constructor(private readonly sock: net.Socket) {
    super();
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => this.onData(d));
    sock.on('close', () => this.fail(new DriverError('board.not_running', 'The machine monitor closed')));
    sock.on('error', () => {});
  }

  /** Speaks QMP over a connected socket (QEMU connected to the service's listener). */
  static async over(sock: net.Socket, timeoutMs = 10_000): Promise<Qmp> {
    const qmp = new Qmp(sock);
    const greeting = new Promise<unknown>((resolve, reject) => {
      qmp.greeted = { resolve, reject };
    });
    try {
      await withTimeout(greeting, timeoutMs, 'QMP greeting');
      await qmp.execute('qmp_capabilities', undefined, timeoutMs);
      return qmp;
    } catch (err) {
      sock.destroy();
      throw err instanceof DriverError
        ? err
        : new DriverError('board.not_running', `QMP: ${(err as Error).message}`);
    }
  }

  execute<T = unknown>(command: string, args?: Record<string, unknown>, timeoutMs = 10_000): Promise<T> {
    if (this.closed)
      return Promise.reject(new DriverError('board.not_running', 'The machine monitor closed'));
    const work = new Promise<unknown>((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.sock.write(
        `${JSON.stringify(args ? { execute: command, arguments: args } : { execute: command })}\n`,
      );
    });
    return withTimeout(work as Promise<T>, timeoutMs, `QMP ${command}`);
  }

  close(): void {
    this.sock.destroy();
  }

  private onData(d: string): void {
    this.buf += d;
    if (this.buf.length > MAX_LINE && !this.buf.includes('\n')) {
      this.sock.destroy();
      return;
    }
    let nl = this.buf.indexOf('\n');
    while (nl >= 0) {
      const line = this.buf.slice(0, nl).trim();
      this.buf = this.buf.slice(nl + 1);
      if (line) this.onMessage(line);
      nl = this.buf.indexOf('\n');
    }
  }

  private onMessage(line: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if ('QMP' in msg) {
      this.greeted?.resolve(msg);
      this.greeted = null;
    } else if ('event' in msg) {
      this.emit('event', msg);
    } else if ('return' in msg) {
      this.pending.shift()?.resolve(msg.return);
    } else if ('error' in msg) {
      const e = msg.error as { class?: string; desc?: string } | undefined;
      this.pending
        .shift()
        ?.reject(new DriverError('driver.failed', `QMP: ${e?.desc ?? e?.class ?? 'error'}`));
    }
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.greeted?.reject(err);
    for (const p of this.pending.splice(0)) p.reject(err);
    this.emit('close');
  }
}
