// Is a shell running a foreground job? Answered from the host's /proc for the processes this service
// spawned, never from inside the board: node-pty's `process` names the host-side program (nsenter, or
// `script` relaying to the board's own PTY), so instead we walk the PTY child's descendants and look
// at every session leader that has a terminal (the board's `bash -l` under `script`, or bash itself
// on an unsandboxed board). At its prompt an interactive shell holds its terminal's foreground
// process group (field `tpgid` of /proc/<pid>/stat equals its own `pgrp`); while a job runs, the
// job's group holds it. The command named is the foreground group's leader, when it is one of the
// descendants (a pid outside the shell's tree is never named).
//
// Only numeric /proc/<pid>/stat files are read (fields the kernel writes, in host pids: the service's
// /proc is the host's PID namespace); nothing under a board's root is resolved. /proc has no
// children lists on every kernel, so one scan of /proc builds the parent map; scans are shared
// between callers for SCAN_REUSE_MS, bounded to MAX_PROCESSES entries, and abandoned after
// SCAN_TIMEOUT_MS, so a board that forks hard or a caller that asks in a loop cannot make the service
// scan without end or wait forever.
import fs from 'node:fs/promises';

export interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  pgrp: number;
  session: number;
  ttyNr: number;
  tpgid: number;
}

/** One /proc/<pid>/stat text parsed; null when malformed. The command name may hold spaces and ')'. */
export function parseStat(text: string): ProcStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  const f = text.slice(close + 2).split(' ');
  // After the name: state ppid pgrp session tty_nr tpgid ...
  const [ppid, pgrp, session, ttyNr, tpgid] = f.slice(1, 6).map(Number);
  if (![pid, ppid, pgrp, session, ttyNr, tpgid].every(Number.isSafeInteger)) return null;
  return { pid, comm: text.slice(open + 1, close), ppid, pgrp, session, ttyNr, tpgid };
}

export type Foreground = { busy: false } | { busy: true; command: string | null };

/**
 * The foreground state of the shell tree under `root` (the PTY's child), from a process table. The
 * outermost busy session wins: a `script` or `ssh` run from the prompt is the job, whatever runs in
 * it. Null when `root` is not in the table (the shell has gone).
 */
export function foregroundIn(table: ReadonlyMap<number, ProcStat>, root: number): Foreground | null {
  if (!table.has(root)) return null;
  const children = new Map<number, number[]>();
  for (const p of table.values()) {
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  const tree = new Set<number>();
  let level = [root];
  while (level.length > 0 && tree.size < MAX_PROCESSES) {
    const next: number[] = [];
    for (const pid of level) {
      if (tree.has(pid)) continue;
      tree.add(pid);
      const p = table.get(pid);
      // A session leader with a terminal that does not hold its own foreground: a job runs.
      if (p && p.session === p.pid && p.ttyNr !== 0 && p.tpgid > 0 && p.tpgid !== p.pgrp) {
        const leader = table.get(p.tpgid);
        const member =
          leader && isBelow(table, leader.pid, root)
            ? leader
            : [...table.values()].find((q) => q.pgrp === p.tpgid && isBelow(table, q.pid, root));
        return { busy: true, command: member?.comm ?? null };
      }
      for (const c of children.get(pid) ?? []) next.push(c);
    }
    level = next;
  }
  return { busy: false };
}

function isBelow(table: ReadonlyMap<number, ProcStat>, pid: number, root: number): boolean {
  let at: number | undefined = pid;
  for (let i = 0; at !== undefined && i < 256; i++) {
    if (at === root) return true;
    at = table.get(at)?.ppid;
  }
  return false;
}

/** Most processes one scan reads (a host has far fewer; a fork bomb is capped by the board's cgroup). */
export const MAX_PROCESSES = 32_768;
/** A scan this recent answers again instead of reading /proc anew. */
export const SCAN_REUSE_MS = 250;
/** A scan that has not finished by then is abandoned and its callers get "unknown". */
export const SCAN_TIMEOUT_MS = 2_000;
const READ_BATCH = 64;

let current: { at: number; table: Promise<Map<number, ProcStat>> } | null = null;

async function scan(): Promise<Map<number, ProcStat>> {
  const names = (await fs.readdir('/proc')).filter((n) => /^[0-9]+$/.test(n)).slice(0, MAX_PROCESSES);
  const table = new Map<number, ProcStat>();
  for (let i = 0; i < names.length; i += READ_BATCH) {
    const texts = await Promise.all(
      names.slice(i, i + READ_BATCH).map((n) => fs.readFile(`/proc/${n}/stat`, 'latin1').catch(() => '')),
    );
    for (const text of texts) {
      const p = text ? parseStat(text) : null;
      if (p) table.set(p.pid, p);
    }
  }
  return table;
}

/** The shared process table, scanned anew when the last is older than SCAN_REUSE_MS or when `fresh`. */
function processTable(fresh = false): Promise<Map<number, ProcStat>> {
  const now = Date.now();
  if (!current || fresh || now - current.at > SCAN_REUSE_MS) {
    const table = scan();
    current = { at: now, table };
    // A failed scan is not reused.
    table.catch(() => {
      if (current?.table === table) current = null;
    });
  }
  return current.table;
}

/**
 * The foreground state of the shell whose PTY child is host pid `root`; null when unknown. A job that
 * started while /proc was being read can show as the shell's foreground with no process of its own in
 * the table (its pid was not listed yet): then /proc is read once more, so the job is named.
 */
export async function foregroundOf(
  root: number,
  tables: (fresh: boolean) => Promise<ReadonlyMap<number, ProcStat>> = processTable,
): Promise<Foreground | null> {
  if (!Number.isSafeInteger(root) || root <= 1) return null;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), SCAN_TIMEOUT_MS);
  });
  try {
    const table = await Promise.race([tables(false), timeout]);
    if (!table) return null;
    const fg = foregroundIn(table, root);
    if (!fg?.busy || fg.command !== null) return fg;
    const again = await Promise.race([tables(true), timeout]);
    return (again && foregroundIn(again, root)) || fg;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
