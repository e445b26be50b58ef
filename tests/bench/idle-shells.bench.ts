// Idle-shell benchmark (node --expose-gc --import tsx tests/bench/idle-shells.bench.ts). Prints
// figures; not pass/fail.
//
// Opens BENCH_SHELLS (default 500) login shells on one instance with real local boards, through the
// service's shell manager (the call apply-device-shell makes), spread over applies of 10 shells each
// because one apply holds at most MAX_SHELLS_PER_APPLY, and over boards of BENCH_PER_BOARD (default
// 250) each because a local board's cgroup holds at most maxProcesses (1024 by default) and every
// shell costs three of them. Waits until every shell has printed its
// prompt, lets them idle, and reports:
//   - the service's RSS and heap (+ external buffers) per idle shell, after a forced GC;
//   - the host processes per shell: every descendant of the service process, grouped by command
//     (the local driver runs each shell as nsenter → script → bash, or what it runs today).
// The whole run is bounded by BENCH_DEADLINE_S (default 300 s): past it, it reports what it has.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { HOUR_MS } from '#shared/constants.ts';
import { MAX_SHELLS_PER_APPLY } from '#shared/shells.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { makeUser } from '../integration/helpers/users.ts';

const SHELLS = Number(process.env.BENCH_SHELLS ?? 500);
const PER_APPLY = Math.min(10, MAX_SHELLS_PER_APPLY);
const PER_BOARD = Number(process.env.BENCH_PER_BOARD ?? 250);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
const DEADLINE = performance.now() + Number(process.env.BENCH_DEADLINE_S ?? 300) * 1000;
const mib = (n: number) => n / 1024 / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function mem() {
  global.gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed + m.external + m.arrayBuffers };
}

/** Every descendant of `root` (pid → command name), read from /proc. */
function descendants(root: number): Map<number, string> {
  const parent = new Map<number, number>();
  const comm = new Map<number, string>();
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split at the last ')'.
      const close = stat.lastIndexOf(')');
      comm.set(pid, stat.slice(stat.indexOf('(') + 1, close));
      parent.set(pid, Number(stat.slice(close + 2).split(' ')[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const out = new Map<number, string>();
  const frontier = [root];
  while (frontier.length) {
    const p = frontier.pop() as number;
    for (const [pid, pp] of parent)
      if (pp === p && !out.has(pid)) {
        out.set(pid, comm.get(pid) ?? '?');
        frontier.push(pid);
      }
  }
  return out;
}

/** Resident memory (kB) of a set of processes, from /proc/<pid>/status VmRSS (shared pages counted in each). */
function rssOf(pids: Iterable<number>): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      // ended
    }
  }
  return kb;
}

function histogram(procs: Map<number, string>): string {
  const byName = new Map<string, number>();
  for (const name of procs.values()) byName.set(name, (byName.get(name) ?? 0) + 1);
  return [...byName.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([n, c]) => `${n} ×${c}`)
    .join(', ');
}

async function main() {
  const t = await makeTestApp({ env: { LOG_LEVEL: 'silent' } });
  const u = await makeUser(t.app);
  const devices: string[] = [];
  for (let b = 0; b < Math.ceil(SHELLS / PER_BOARD); b++) {
    const lease = (
      await t.app.inject({
        method: 'POST',
        url: '/api/device/request-device',
        headers: u.headers,
        payload: {
          requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
          filterReq: {},
          serverName: `bench-${b}`,
        },
      })
    ).json();
    if (!lease.data?.deviceId) throw new Error(`no board for lease ${b}: ${JSON.stringify(lease)}`);
    devices.push(lease.data.deviceId);
  }
  console.log(
    `boards ${devices.join(', ')} (${t.app.boards.driver(devices[0]).kind}); ${SHELLS} shells, ${PER_APPLY} per apply, ${PER_BOARD} per board`,
  );

  for (let i = 0; i < 3; i++) {
    mem();
    await sleep(300);
  }
  const base = mem();
  const baseProcs = descendants(process.pid);

  const ids: string[] = [];
  const t0 = performance.now();
  for (let i = 0; i < SHELLS && performance.now() < DEADLINE; i++) {
    const { clientId } = await t.app.shells.open({
      applyId: `bench-idle-${Math.floor(i / PER_APPLY)}`,
      deviceId: devices[Math.floor(i / PER_BOARD)],
      userId: u.id,
      shellType: 'login',
    });
    ids.push(clientId);
  }
  const openSecs = (performance.now() - t0) / 1000;
  // Idle means after the prompt: wait until every shell has printed something.
  const started = () => {
    const live = new Set(ids);
    return t.app.shells.stats().filter((s) => live.has(s.id) && !s.ended && s.ringEnd > 0).length;
  };
  while (started() < ids.length && performance.now() < DEADLINE) await sleep(250);
  const prompted = started();
  const endedBy = new Map<string, number>();
  for (const st of t.app.shells.stats())
    if (st.ended) endedBy.set(st.ended, (endedBy.get(st.ended) ?? 0) + 1);
  const ended = [...endedBy.values()].reduce((a, b) => a + b, 0);
  await sleep(Math.max(0, Math.min(IDLE_MS, DEADLINE - performance.now())));

  const idle = mem();
  const procs = descendants(process.pid);
  for (const pid of baseProcs.keys()) procs.delete(pid);
  const n = ids.length;
  const hostRssKb = rssOf(procs.keys());
  console.log(
    `opened ${n} shells in ${openSecs.toFixed(1)} s (${((openSecs * 1000) / n).toFixed(1)} ms each, one after another); ${prompted} printed a prompt, ${ended} ended${ended ? ` (${[...endedBy].map(([r, c]) => `${r} ×${c}`).join(', ')})` : ''}`,
  );
  console.log(
    `service process: +${mib(idle.rss - base.rss).toFixed(1)} MiB RSS (${((idle.rss - base.rss) / 1024 / n).toFixed(0)} KiB per shell), ` +
      `+${mib(idle.heap - base.heap).toFixed(1)} MiB heap+buffers (${((idle.heap - base.heap) / 1024 / n).toFixed(0)} KiB per shell); ` +
      `total RSS ${mib(idle.rss).toFixed(0)} MiB`,
  );
  console.log(
    `host processes: ${procs.size} (${(procs.size / n).toFixed(2)} per shell): ${histogram(procs)}; ` +
      `their summed VmRSS ${(hostRssKb / 1024).toFixed(0)} MiB (${(hostRssKb / n).toFixed(0)} KiB per shell, shared pages counted in each)`,
  );

  const c0 = performance.now();
  for (const id of ids) t.app.shells.get(id)?.close('shell.closed');
  await sleep(1000);
  console.log(
    `closed in ${((performance.now() - c0) / 1000).toFixed(1)} s; ${descendants(process.pid).size} descendants left`,
  );
  await t.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
