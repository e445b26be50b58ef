// Kernel-enforced limits of one local board: memory, process count and CPU, from its declared size.
// Lifecycle: `create()` before the board boots (idempotent), every process that enters the board —
// the sandbox itself, shells, the file server, plugin calls — joins the board's cgroups before it
// execs (`joinScript()` in `entryPrefix`), so nothing a board runs escapes its limits; `destroy()` after the board stopped.
// A board that reaches a limit gets the normal Linux answer (fork fails with EAGAIN, the OOM killer
// kills one of its own processes); the service and other boards are untouched.
import fs from 'node:fs';
import path from 'node:path';
import type { CgroupController, HostSupport } from './host-support.ts';

export interface BoardLimits {
  memoryBytes: number;
  pids: number;
  cpus: number;
}

type Name = 'memory' | 'pids' | 'cpu';

const CPU_PERIOD_US = 100_000;

export class BoardCgroups {
  private readonly dirs = new Map<Name, { dir: string; c: CgroupController }>();
  /** Limits that could not be set on this host, with the reason (reported once by the driver). */
  readonly failures: string[] = [];

  constructor(
    private readonly name: string,
    support: HostSupport['cgroups'],
    private readonly limits: BoardLimits,
  ) {
    for (const n of ['memory', 'pids', 'cpu'] as const) {
      const c = support[n];
      if (c) this.dirs.set(n, { dir: path.join(c.base, name), c });
    }
  }

  /** Which limits hold for this board. */
  get enforced(): Name[] {
    return [...this.dirs.keys()];
  }

  create(): void {
    for (const [n, { dir, c }] of [...this.dirs]) {
      try {
        if (c.version === 2) enableV2(path.dirname(dir));
        fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
        this.apply(n, dir, c.version);
      } catch (err) {
        this.dirs.delete(n);
        this.failures.push(`${n}: ${(err as Error).message}`);
      }
    }
  }

  private apply(n: Name, dir: string, version: 1 | 2): void {
    const w = (file: string, value: string | number) => fs.writeFileSync(path.join(dir, file), String(value));
    const { memoryBytes, pids, cpus } = this.limits;
    if (version === 1) {
      if (n === 'memory') {
        // memsw (memory + swap) must stay >= the memory limit: raise it first when it exists.
        const memsw = fs.existsSync(path.join(dir, 'memory.memsw.limit_in_bytes'));
        if (memsw) w('memory.memsw.limit_in_bytes', -1);
        w('memory.limit_in_bytes', memoryBytes);
        if (memsw) w('memory.memsw.limit_in_bytes', memoryBytes);
      } else if (n === 'pids') w('pids.max', pids);
      else {
        weighBoards(path.dirname(dir), 1);
        w('cpu.cfs_period_us', CPU_PERIOD_US);
        w('cpu.cfs_quota_us', Math.round(cpus * CPU_PERIOD_US));
      }
      return;
    }
    if (n === 'memory') {
      w('memory.max', memoryBytes);
      if (fs.existsSync(path.join(dir, 'memory.swap.max'))) w('memory.swap.max', 0);
    } else if (n === 'pids') w('pids.max', pids);
    else {
      weighBoards(path.dirname(dir), 2);
      w('cpu.max', `${Math.round(cpus * CPU_PERIOD_US)} ${CPU_PERIOD_US}`);
    }
  }

  /**
   * Kills every process in the board's groups — the host's power switch: it needs nothing of the
   * board (a board whose pid limit a fork bomb holds cannot even start a process to be entered).
   * cgroup v2 kills the group at once (`cgroup.kill`); on v1 the members are killed until none is
   * left, since a bomb's children appear while their parents die. Answers whether the groups are empty.
   */
  async killAll(exclude: ReadonlySet<number> = new Set()): Promise<boolean> {
    for (let round = 0; round < 200; round++) {
      let left = 0;
      for (const { dir, c } of this.dirs.values()) {
        if (c.version === 2 && !exclude.size) {
          try {
            fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
          } catch {}
        }
        let text = '';
        try {
          text = fs.readFileSync(path.join(dir, 'cgroup.procs'), 'latin1');
        } catch {
          continue;
        }
        for (const line of text.split('\n')) {
          const pid = Number(line);
          if (!pid || exclude.has(pid)) continue;
          left++;
          try {
            process.kill(pid, 'SIGKILL');
          } catch {}
        }
      }
      if (!left) return true;
      await new Promise((r) => setTimeout(r, round < 20 ? 5 : 25));
    }
    return false;
  }

  /**
   * The files a new process writes itself into. On cgroup v1 that is `tasks` with "0" (the writing
   * thread itself; /bin/sh has one): the kernel then skips the global threadgroup lock that a
   * `cgroup.procs` write takes, which waits for an RCU grace period — measured here at 6–10 ms per
   * hierarchy, 10–20 ms per shell with three, against about nothing this way. cgroup v2 has no
   * `tasks`; there it is `cgroup.procs` with the pid.
   */
  private joinFiles(): { file: string; v1: boolean }[] {
    const seen = new Map<string, boolean>();
    for (const { dir, c } of this.dirs.values()) {
      const v1 = c.version === 1;
      seen.set(path.join(dir, v1 ? 'tasks' : 'cgroup.procs'), v1);
    }
    return [...seen].map(([file, v1]) => ({ file, v1 }));
  }

  /**
   * Shell text that makes the running shell join the board's cgroups, so the program it then execs
   * runs confined; a process that cannot join does not run (exit 125), so nothing runs in a board
   * unconfined. Used by `entryPrefix` (sandbox.ts).
   */
  joinScript(): string {
    const q = (f: string) => `'${f.replaceAll("'", `'\\''`)}'`;
    return this.joinFiles()
      .map(({ file, v1 }) => `echo ${v1 ? '0' : '$$'} > ${q(file)} || exit 125; `)
      .join('');
  }

  /** Memory the board's processes use now (page cache included), or null without a memory cgroup. */
  memoryUsage(): number | null {
    const m = this.dirs.get('memory');
    if (!m) return null;
    try {
      const file = m.c.version === 1 ? 'memory.usage_in_bytes' : 'memory.current';
      return Number(fs.readFileSync(path.join(m.dir, file), 'utf8').trim());
    } catch {
      return null;
    }
  }

  /**
   * The board's processes, from its own cgroup (every process that enters the board joins it), or null
   * without one. A read of the board's few entries, where the namespace scan reads every process of
   * the host.
   */
  processes(): number[] | null {
    const m = this.dirs.get('pids') ?? this.dirs.get('cpu') ?? this.dirs.get('memory');
    if (!m) return null;
    try {
      const text = fs.readFileSync(path.join(m.dir, 'cgroup.procs'), 'latin1');
      const out: number[] = [];
      for (const line of text.split('\n')) if (line) out.push(Number(line));
      return out;
    } catch {
      return null;
    }
  }

  /** Removes the board's cgroups once its processes are gone. */
  destroy(): void {
    for (const { dir } of this.dirs.values()) {
      try {
        fs.rmdirSync(dir);
      } catch {
        // Still populated (processes exiting): the next create() reuses it.
      }
    }
  }
}

/**
 * The CPU weight of all boards together against the service's own processes: half of a default
 * group's. A host whose boards are all busy still runs the service (every user's API calls, shells
 * and probes) at two thirds of a contended core, and each board's group shares the rest equally.
 */
const BOARDS_CPU_SHARES = 512;
const BOARDS_CPU_WEIGHT = 50;

/** Sets the boards' parent group's CPU weight (see above); best effort. */
function weighBoards(base: string, version: 1 | 2): void {
  try {
    fs.mkdirSync(base, { recursive: true });
    if (version === 1) fs.writeFileSync(path.join(base, 'cpu.shares'), String(BOARDS_CPU_SHARES));
    else fs.writeFileSync(path.join(base, 'cpu.weight'), String(BOARDS_CPU_WEIGHT));
  } catch {}
}

/**
 * The CPU a board may use at most: its declared cores, never the whole host — half a core of the
 * host always stays for the service and the other boards (on one core: half of it).
 */
export function cpuBound(declared: number, hostCores: number): number {
  const ceiling = hostCores > 1 ? hostCores - 0.5 : hostCores / 2;
  return Math.max(0.1, Math.min(declared, ceiling));
}

function enableV2(base: string): void {
  const parent = path.dirname(base);
  fs.mkdirSync(base, { recursive: true });
  for (const dir of [parent, base]) {
    const have = fs.readFileSync(path.join(dir, 'cgroup.subtree_control'), 'utf8');
    const want = ['memory', 'pids', 'cpu'].filter((c) => !have.includes(c));
    if (want.length)
      fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), want.map((c) => `+${c}`).join(' '));
  }
}
