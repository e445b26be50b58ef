// The serial console of a local board. Its lifecycle follows the board, not the viewer: boot
// messages are written into a ring on every boot, reset and flash, and every attached viewer sees
// the ring replayed, then live lines. Each attachment runs a small getty: a `login:` prompt with
// line editing; a known user name starts a real shell in the board and the console bridges to it;
// when that shell ends (logout, power reset) the prompt comes back.
import { EventEmitter } from 'node:events';
import type { PtyHandle, PtySize } from '../driver.ts';
import { ByteRing } from '../util.ts';

export interface SerialHost {
  hostname(): string;
  users(): Promise<string[]>;
  openShellAs(user: string, size: PtySize): Promise<PtyHandle>;
}

export class SerialConsole {
  private readonly ring = new ByteRing(256 * 1024);
  private readonly live = new EventEmitter();

  constructor(private readonly host: SerialHost) {
    this.live.setMaxListeners(0);
  }

  write(text: string): void {
    const buf = Buffer.from(text.replace(/\r?\n/g, '\r\n'));
    this.ring.push(buf);
    this.live.emit('data', buf);
  }

  /** A boot log as firmware, boot loader and kernel print it, ending at the login prompt. */
  bootLog(lines: {
    reason: string;
    model: string;
    memoryMb: number;
    cores: number;
    imageNote?: string;
    osName?: string;
  }): void {
    const name = this.host.hostname();
    const t0 = process.hrtime.bigint();
    const stamp = () => {
      const us = Number((process.hrtime.bigint() - t0) / 1000n);
      return `[${(us / 1e6).toFixed(6).padStart(12)}]`;
    };
    const out = [
      '',
      `--- ${lines.reason} ---`,
      '',
      'OpenSBI v1.3',
      `Platform Name             : ${lines.model || 'RISC-V board'}`,
      `Platform HART Count       : ${lines.cores}`,
      'Firmware Base             : 0x0',
      'Boot HART ISA             : rv64imafdcv',
      '',
      'U-Boot 2022.10 (Bianbu)',
      `DRAM:  ${lines.memoryMb} MiB`,
      'Hit any key to stop autoboot:  0',
      lines.imageNote ? `Loading image: ${lines.imageNote}` : 'Loading kernel from root partition ...',
      'Starting kernel ...',
      '',
      `${stamp()} Linux version 6.6.36 (bianbu@${name}) #1 SMP PREEMPT riscv64`,
      `${stamp()} Machine model: ${lines.model || 'RISC-V board'}`,
      `${stamp()} Memory: ${lines.memoryMb * 1024}K available`,
      `${stamp()} smp: Brought up 1 node, ${lines.cores} CPUs`,
      `${stamp()} Run /sbin/init as init process`,
      `${stamp()} systemd[1]: Hostname set to <${name}>.`,
      '',
      `${lines.osName || 'Bianbu 2.0'} ${name} ttyS0`,
      '',
      `${name} login: `,
    ];
    this.write(out.join('\n'));
  }

  attach(size: PtySize): PtyHandle {
    return new SerialAttachment(this, this.host, size);
  }

  /** @internal */
  subscribe(fn: (b: Buffer) => void): () => void {
    this.live.on('data', fn);
    return () => this.live.off('data', fn);
  }

  /** @internal */
  replay(): Buffer {
    return this.ring.snapshot();
  }
}

class SerialAttachment implements PtyHandle {
  private readonly out = new EventEmitter();
  private readonly exitEvents = new EventEmitter();
  private line = '';
  private shell: PtyHandle | null = null;
  private paused = false;
  private pending: Buffer[] = [];
  private closed = false;
  private readonly unsubscribe: () => void;
  private replayed = false;

  constructor(
    private readonly console: SerialConsole,
    private readonly host: SerialHost,
    private size: PtySize,
  ) {
    this.unsubscribe = console.subscribe((b) => this.emit(b));
  }

  private emit(b: Buffer): void {
    if (this.closed) return;
    if (this.paused || !this.replayed) this.pending.push(b);
    else this.out.emit('data', b);
  }

  private flush(): void {
    while (!this.paused && this.pending.length) this.out.emit('data', this.pending.shift() as Buffer);
  }

  private prompt(): void {
    this.emit(Buffer.from(`\r\n${this.host.hostname()} login: `));
  }

  write(data: string | Buffer): void {
    if (this.closed) return;
    if (this.shell) {
      this.shell.write(data);
      return;
    }
    for (const ch of data.toString()) {
      if (ch === '\r' || ch === '\n') {
        const name = this.line.trim();
        this.line = '';
        this.emit(Buffer.from('\r\n'));
        if (name) void this.login(name);
        else this.prompt();
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.line.length) {
          this.line = this.line.slice(0, -1);
          this.emit(Buffer.from('\b \b'));
        }
      } else if (ch === '\x03') {
        this.line = '';
        this.emit(Buffer.from('^C'));
        this.prompt();
      } else if (ch >= ' ' && this.line.length < 64) {
        this.line += ch;
        this.emit(Buffer.from(ch));
      }
    }
  }

  private async login(name: string): Promise<void> {
    const users = await this.host.users().catch(() => [] as string[]);
    if (!users.includes(name)) {
      this.emit(Buffer.from('\r\nLogin incorrect'));
      this.prompt();
      return;
    }
    try {
      const sh = await this.host.openShellAs(name, this.size);
      if (this.closed) {
        sh.close();
        return;
      }
      this.shell = sh;
      sh.onData((b) => this.emit(b));
      sh.onExit(() => {
        this.shell = null;
        this.prompt();
      });
    } catch (err) {
      this.emit(Buffer.from(`\r\n${(err as Error).message}`));
      this.prompt();
    }
  }

  resize(size: PtySize): void {
    this.size = size;
    this.shell?.resize(size);
  }

  onData(listener: (chunk: Buffer) => void): () => void {
    this.out.on('data', listener);
    if (!this.replayed) {
      // Replay after the caller has attached its listener, so no boot line is lost.
      queueMicrotask(() => {
        if (this.replayed) return;
        this.replayed = true;
        // Lines queued before now are already in the ring: the snapshot replaces them.
        this.pending = [];
        const history = this.console.replay();
        if (history.length) this.emit(history);
        this.flush();
      });
    }
    return () => this.out.off('data', listener);
  }

  onExit(listener: (info: { exitCode: number | null; reason?: string }) => void): () => void {
    this.exitEvents.on('exit', listener);
    return () => this.exitEvents.off('exit', listener);
  }

  pause(): void {
    this.paused = true;
    this.shell?.pause();
  }

  resume(): void {
    this.paused = false;
    this.shell?.resume();
    this.flush();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    this.shell?.close();
    this.exitEvents.emit('exit', { exitCode: null, reason: 'closed' });
  }
}
