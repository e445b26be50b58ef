// The riscv64 bench's view of a board's host side (riscv-boards.bench.ts): QEMU's process, its CPU
// time and memory from /proc, and the boot stages as its serial line shows them.
import fs from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Machine } from '#server/boards/qemu/machine.ts';

export const TICK = 100; // USER_HZ of /proc/<pid>/stat on Linux
export const MARKS = ['OpenSBI', 'U-Boot', 'Linux version', 'Welcome', 'login:'] as const;
export type Mark = (typeof MARKS)[number];
export const loadavg = () => os.loadavg()[0];

/** What the bench reads of the driver beyond its interface (the machine, the agent's SSH pool). */
export interface QemuInternals {
  machine: Machine | null;
  ssh: { dropConnections(): void } | null;
  cgroups: { memoryUsage(): number | null } | null;
}

// ---- host processes -----------------------------------------------------------------------------

function statFields(pid: number): string[] | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The qemu-system process under the machine's launcher (sh → nice → setpriv → bwrap → bwrap → qemu). */
export function qemuPid(root: number | undefined): number | null {
  if (!root) return null;
  const children = new Map<number, number[]>();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const f = statFields(Number(e));
    if (!f) continue;
    const ppid = Number(f[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)!.push(Number(e));
  }
  const todo = [root];
  while (todo.length) {
    const pid = todo.shift()!;
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'latin1').startsWith('qemu-system')) return pid;
    } catch {}
    todo.push(...(children.get(pid) ?? []));
  }
  return null;
}

/** utime + stime of a process, in seconds. */
export function cpuSeconds(pid: number | null): number {
  const f = pid ? statFields(pid) : null;
  return f ? (Number(f[11]) + Number(f[12])) / TICK : Number.NaN;
}

export function rssMib(pid: number | null): number {
  try {
    const s = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
    return Number(/^VmRSS:\s+(\d+)/m.exec(s)?.[1] ?? Number.NaN) / 1024;
  } catch {
    return Number.NaN;
  }
}

// ---- boot stages on the serial console ----------------------------------------------------------

export interface BootRecord {
  label: string;
  /** ms after power-on (or reset) at which each mark first showed. */
  at: Partial<Record<Mark | 'agent' | 'agentReady', number>>;
  /** QEMU CPU seconds spent since power-on (or reset) at each mark. */
  cpu: Partial<Record<Mark | 'agent', number>>;
  load: number;
}

/**
 * Watches one machine's serial line for the boot marks of the boot begun last. `begin()` starts a
 * record at the moment of the power-on or reset; with `onPowerOn`, the record's clock starts when the
 * machine is next powered on (a flash powers it off, writes the disk, and powers it on).
 */
export class BootWatch {
  private text = '';
  private rec: BootRecord | null = null;
  private t0 = 0;
  private cpu0 = 0;
  private armed: BootRecord | null = null;
  pid: number | null = null;
  powerOnAt = 0;

  constructor(private readonly machine: Machine) {
    // The power-on moment is the launcher's spawn, which the machine does not announce: wrap it.
    const powerOn = machine.powerOn.bind(machine);
    machine.powerOn = async () => {
      this.powerOnAt = performance.now();
      if (this.armed) {
        this.start(this.armed, this.powerOnAt, 0);
        this.armed = null;
      }
      this.pid = null;
      await powerOn();
      this.pid = qemuPid(machine.pid);
    };
    machine.on('serial', (d: Buffer) => this.onSerial(d));
  }

  private start(rec: BootRecord, t0: number, cpu0: number): void {
    this.rec = rec;
    this.t0 = t0;
    this.cpu0 = cpu0;
    this.text = '';
  }

  /** A record whose clock starts now (a reset, or a power-on about to happen). */
  begin(label: string): BootRecord {
    const rec: BootRecord = { label, at: {}, cpu: {}, load: loadavg() };
    const pid = this.machine.running ? this.qemu() : null;
    this.start(rec, performance.now(), pid ? cpuSeconds(pid) : 0);
    return rec;
  }

  /** A record whose clock starts at the machine's next power-on. */
  beginOnPowerOn(label: string): BootRecord {
    const rec: BootRecord = { label, at: {}, cpu: {}, load: loadavg() };
    this.armed = rec;
    this.rec = null;
    return rec;
  }

  /** Marks a stage of the current record (the agent, from the bench's own probe). */
  mark(k: 'agent' | 'agentReady'): void {
    if (!this.rec || this.rec.at[k] !== undefined) return;
    this.rec.at[k] = performance.now() - this.t0;
    if (k === 'agent') this.rec.cpu.agent = this.cpuNow();
  }

  /** The running machine's qemu-system process. */
  qemu(): number | null {
    this.pid ??= qemuPid(this.machine.pid);
    return this.pid;
  }

  private cpuNow(): number {
    return cpuSeconds(this.qemu()) - this.cpu0;
  }

  private onSerial(d: Buffer): void {
    const rec = this.rec;
    if (!rec) return;
    this.text = (this.text + d.toString('latin1')).slice(-4096);
    for (const m of MARKS) {
      if (rec.at[m] !== undefined) continue;
      if (m === 'login:' ? /login: ?$/m.test(this.text) : this.text.includes(m)) {
        rec.at[m] = performance.now() - this.t0;
        rec.cpu[m] = this.cpuNow();
      }
    }
  }
}
