// The board's own figures, read from the host's /proc: the members of a board are the processes in
// its PID namespace. One scan of /proc groups every process by namespace and is shared by all boards
// sampled within the same second, so sampling many boards costs one scan, not one per board.
import fs from 'node:fs';
import path from 'node:path';

const CLK_TCK = 100;
const PAGE = 4096;
const SCAN_TTL_MS = 1000;

let cache: { at: number; byNs: Map<string, number[]> } | null = null;

let turn: Promise<unknown> = Promise.resolve();

/**
 * Runs `fn` (synchronous reads of /proc) in a turn of the event loop of its own, after the ones
 * queued before it: a round that samples many boards at once then holds the loop for one board at a
 * time, and a keystroke that arrives meanwhile waits for one board's reads, not for every board's.
 */
export function inTurn<T>(fn: () => T): Promise<T> {
  const run = turn.then(
    () =>
      new Promise<T>((resolve, reject) =>
        setImmediate(() => {
          try {
            resolve(fn());
          } catch (err) {
            reject(err);
          }
        }),
      ),
  );
  turn = run.catch(() => {});
  return run;
}

/** Host pids grouped by PID namespace link (`pid:[4026532180]`). */
export function pidsByNamespace(maxAgeMs = SCAN_TTL_MS): Map<string, number[]> {
  const now = Date.now();
  if (cache && now - cache.at < maxAgeMs) return cache.byNs;
  const byNs = new Map<string, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    let ns: string;
    try {
      ns = fs.readlinkSync(`/proc/${name}/ns/pid`);
    } catch {
      continue; // gone since readdir
    }
    const list = byNs.get(ns);
    if (list) list.push(Number(name));
    else byNs.set(ns, [Number(name)]);
  }
  cache = { at: now, byNs };
  return byNs;
}

export function namespaceOf(pid: number): string | null {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return null;
  }
}

/** Total CPU seconds (user + system, own and reaped children's) and RSS bytes of the given processes. */
export function cpuAndRss(pids: readonly number[]): { cpuSeconds: number; rssBytes: number; count: number } {
  let ticks = 0;
  let rssPages = 0;
  let count = 0;
  for (const pid of pids) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue;
    }
    // Fields after the command name, which may itself hold spaces and parentheses.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // Own time plus that of reaped children, so a short job that already ended still counts.
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    rssPages += Number(f[21]);
    count++;
  }
  return { cpuSeconds: ticks / CLK_TCK, rssBytes: rssPages * PAGE, count };
}

/** Byte counters of every interface but loopback, from a /proc/<pid>/net/dev text. */
export function parseNetDev(text: string): { rx: number; tx: number } {
  let rx = 0;
  let tx = 0;
  for (const line of text.split('\n').slice(2)) {
    const m = /^\s*([^:]+):\s*(.*)$/.exec(line);
    if (!m || m[1].trim() === 'lo') continue;
    const f = m[2].trim().split(/\s+/);
    rx += Number(f[0]) || 0;
    tx += Number(f[8]) || 0;
  }
  return { rx, tx };
}

/**
 * Bytes allocated under `root` (hard links counted once), without following symlinks or mounts. The
 * walk is synchronous on purpose: per file, lstatSync costs a few microseconds where the promise API
 * costs tens, and a board root is a few thousand files.
 */
export function diskUsage(root: string): number {
  const seen = new Set<number>();
  let total = 0;
  const rootDev = fs.lstatSync(root).dev;
  const walk = (dir: string): void => {
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const p = path.join(dir, name);
      const st = fs.lstatSync(p, { throwIfNoEntry: false });
      if (!st || st.dev !== rootDev) continue;
      if (st.nlink > 1 && !st.isDirectory()) {
        if (seen.has(st.ino)) continue;
        seen.add(st.ino);
      }
      total += st.blocks * 512;
      if (st.isDirectory()) walk(p);
    }
  };
  walk(root);
  return total;
}
