// riscv64 boards under QEMU (issue 35): what one board costs and how its shells feel. Prints figures;
// not pass/fail. One board at a time (a booting board takes most of a host core), lab-file board
// `rv-bench` of driver kind 'qemu', 2 harts, 1 GiB, built by the test app helper; loopback only.
//
// 1. Boot, from power-on (QEMU spawned, or QMP system_reset) to the first `OpenSBI`, `U-Boot`,
//    `Linux version`, systemd's `Welcome` and `login:` on ttyS0, and to the agent answering: the
//    first shell the product can open (driver.openShell and a command's output). QEMU's own CPU
//    time to each, from /proc/<qemu pid>/stat, since wall time swings with the host's load; and the
//    guest's own account (its journal and systemd). Boots: the board's first start (the disk's first
//    boot) always, then resets (part `boot`); the minimal image's after the flash (part `flash`).
// 2. Shell path against OpenSSH in the same run, round by round, each side first once in three
//    rounds, each on a new connection to a new sshd: (a) the product, driver.openShell (ssh2 in the
//    service over the virtio-serial stream to the guest's `sshd -i`); (b) the anchor, OpenSSH's
//    `ssh -tt` into the same guest sshd: the service's connection is dropped, the next virtio-serial
//    stream is taken from the machine's agent listener and bridged to a unix socket
//    (`ProxyCommand=socat - UNIX-CONNECT:…`); (c) the same OpenSSH held to the product's cipher.
//    Each: setup (connection to the first output byte), MiB/s of `cat` of ~32 MiB of base64 already
//    in the guest's page cache, QEMU CPU seconds per MiB, the guest's CPU and its sshd session
//    process's share of it, and echo latency of single keys to `dd bs=1` in a raw PTY.
// 3. Density: QEMU RSS, the board's memory cgroup and QEMU's CPU % of a core over 30 s of an idle
//    booted board (agent connected, no shell open), then 30 s with metrics sampled every 5 s as the
//    lab does, and how many such boards a 2-core, 24 GiB host holds.
// 4. Flash: driver.flash(minimal .img.zst) from its start to the new image's agent answering and
//    `login:`, with its phases (writing, verifying, booting) from onProgress.
//
//   npm run bench -- riscv
//   BENCH_RV_PARTS=boot,shell,density,flash BENCH_RV_BOOTS=3 BENCH_RV_ROUNDS=3 BENCH_RV_KEYS=200 (defaults)
//   BIANBU_BOARD_IMAGES=/var/cache/bianbu/board-images (default)
// On a shared 2-core host each part takes 8–15 minutes (the first boot included): all four in one
// run take over half an hour, so run them one by one, e.g. `BENCH_RV_PARTS=shell npm run bench -- riscv`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'ssh2';
import type { FlashProgress } from '#server/boards/driver.ts';
import { BoardImages, boardImageTag } from '#server/boards/qemu/board-images.ts';
import {
  boardImagesDir,
  missingBoardImages,
  noImageBuilds,
  startRiscvLab,
} from '../integration/helpers/riscv-lab.ts';
import {
  type BootRecord,
  BootWatch,
  cpuSeconds,
  loadavg,
  type Mark,
  type QemuInternals,
  rssMib,
} from './riscv-boot-watch.ts';
import {
  echo,
  opensshShell,
  productShell,
  runLine,
  type ShellPath,
  setupFailures,
  throughput,
} from './riscv-shells.ts';

const IMAGES = boardImagesDir('/var/cache/bianbu/board-images');
const PARTS = new Set((process.env.BENCH_RV_PARTS ?? 'boot,shell,density,flash').split(','));
const BOOTS = Number(process.env.BENCH_RV_BOOTS ?? 3);
const ROUNDS = Number(process.env.BENCH_RV_ROUNDS ?? 3);
const KEYS = Number(process.env.BENCH_RV_KEYS ?? 200);
const IDLE_S = 30;
const BOARD = 'rv-bench';
const CORES = 2;
const MEMORY_MB = 1024;
const MIB = 1024 * 1024;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return Number.NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');

// ---- the run ------------------------------------------------------------------------------------

async function main() {
  const missing = missingBoardImages(IMAGES, ['developer', 'minimal']);
  if (missing) throw new Error(missing);
  const images = new BoardImages(IMAGES);
  const dev = images.find(boardImageTag('developer'))!;
  const min = images.find(boardImageTag('minimal'))!;
  // The bench measures; it never starts an image build (the lab's start would, for a stale recipe).
  noImageBuilds();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-rv-'));
  // The host is shared: its load, and other QEMU boards (other people's tests) beside this one.
  const loads: number[] = [loadavg()];
  const others: number[] = [];
  const otherQemus = () => {
    let n = 0;
    for (const e of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(e) || Number(e) === watching?.pid) continue;
      try {
        if (fs.readFileSync(`/proc/${e}/comm`, 'latin1').startsWith('qemu-system')) n++;
      } catch {}
    }
    return n;
  };
  const loadTimer = setInterval(() => {
    loads.push(loadavg());
    others.push(otherQemus());
  }, 10_000);
  let watching: BootWatch | null = null;
  const runStart = performance.now();
  const { t, driver: driverOf } = await startRiscvLab({
    work,
    imagesDir: IMAGES,
    board: { id: BOARD, image: 'developer', cores: CORES, memoryMb: MEMORY_MB },
    probeIntervalMs: 5000,
    silent: true,
  });
  // The lab's probes and metric samples stop: a metric sample opens a connection through the agent,
  // which would take the board's one stream from under an OpenSSH round; the density part samples
  // metrics itself, on its own clock.
  const labTimers = (t.app.boards as unknown as { timers: NodeJS.Timeout[] }).timers;
  if (!labTimers.length) throw new Error('the lab has no timers to stop yet');
  for (const x of labTimers) clearInterval(x);
  const driver = driverOf();
  const inner = driver as unknown as QemuInternals;
  // The machine exists once the driver has its identity and cgroups, before the default image is
  // written to the disk and long before the power-on.
  const deadline = Date.now() + 60_000;
  while (!inner.machine) {
    if (Date.now() > deadline) throw new Error('the board driver made no machine');
    await sleep(10);
  }
  const machine = inner.machine;
  if (machine.running) throw new Error('the machine was powered on before the bench could watch it');
  const watch = new BootWatch(machine);
  watching = watch;
  const boots: BootRecord[] = [];
  const started = performance.now();
  const first = watch.beginOnPowerOn('developer, first boot of a fresh disk (start())');
  boots.push(first);
  console.log(
    `board ${BOARD}: ${CORES} harts, ${MEMORY_MB} MiB; image ${dev.facts.name} (kernel ${dev.facts.kernel}); ` +
      `${os.availableParallelism()} host cores, load ${f1(loadavg())}`,
  );

  /** The first shell the product gives after a boot: openShell and a command's answer. */
  async function agentAnswers(): Promise<void> {
    for (;;) {
      try {
        const { path: p } = await productShell(driver, 1);
        await p.close();
        watch.mark('agent');
        return;
      } catch (err) {
        if (performance.now() - started > 1_800_000) throw err;
        await sleep(500);
      }
    }
  }
  async function watchReady(): Promise<void> {
    while (driver.state.agent !== 'ready') await sleep(100);
    watch.mark('agentReady');
  }
  async function loginSeen(rec: BootRecord, ms = 300_000): Promise<void> {
    const end = Date.now() + ms;
    while (rec.at['login:'] === undefined && Date.now() < end) await sleep(250);
  }
  /**
   * The guest's own account of the boot, on its kernel clock: when the first login through the agent
   * was accepted, when systemd last started the agent's sshd (µs) and how often it restarted it (each
   * host attempt that gave up ends that sshd; systemd starts the next).
   */
  async function guestView(): Promise<string> {
    try {
      const { path: p } = await productShell(driver);
      const r = await runLine(
        p,
        "journalctl -b -o short-monotonic --no-pager | awk '{match($0, /[0-9]+[.][0-9]+/); t=substr($0, RSTART, RLENGTH)} " +
          '/Accepted (none|password) for root/ && !a {a=t} END {printf "GUEST first login accepted at %s s\\n", a ? a : "?"}\'; ' +
          "systemctl show bianbu-agent -p ExecMainStartTimestampMonotonic -p NRestarts | sed 's/^/GUEST /'; " +
          'systemd-analyze 2>&1 | head -n1',
        60_000,
        true,
      );
      await p.close();
      return r.text
        .split(/\r?\n/)
        .filter((l) => /GUEST|Startup|Bootup/.test(l))
        .map((l) => l.replace(/^.*GUEST /, '').trim())
        .join('; ');
    } catch (err) {
      return `guest view failed: ${(err as Error).message}`;
    }
  }
  /** Waits for the agent's first shell and the serial console's `login:` of the boot being watched. */
  async function booted(rec: BootRecord): Promise<void> {
    await Promise.all([watchReady(), agentAnswers()]);
    await loginSeen(rec);
    printBoot(rec, 0, await guestView());
  }
  function printBoot(rec: BootRecord, offset: number, guest: string): void {
    const s = (k: keyof BootRecord['at']) => f1(((rec.at[k] ?? Number.NaN) + offset) / 1000);
    console.log(
      `  ${rec.label}: OpenSBI ${s('OpenSBI')}, U-Boot ${s('U-Boot')}, Linux ${s('Linux version')}, ` +
        `Welcome ${s('Welcome')}, agent ready ${s('agentReady')}, first shell ${s('agent')} (QEMU CPU ${f1(rec.cpu.agent ?? Number.NaN)} s), ` +
        `login: ${s('login:')} (CPU ${f1(rec.cpu['login:'] ?? Number.NaN)} s); load ${f1(rec.load)}`,
    );
    console.log(`    guest (kernel clock): ${guest}`);
  }
  async function resetBoot(label: string): Promise<void> {
    const rec = watch.begin(label);
    boots.push(rec);
    await driver.powerReset();
    await sleep(1000);
    await booted(rec);
  }

  console.log('\nboot (s after power-on / reset)');
  await booted(first);
  if (PARTS.has('boot')) for (let i = 1; i < BOOTS; i++) await resetBoot(`developer, reset ${i}`);

  // ---- 2. shell path against OpenSSH --------------------------------------------------------------
  interface Round {
    setup: number;
    mibs: number;
    mib: number;
    qemuCpu: number;
    /** Guest CPU seconds of the transfer: its sshd session process, and all of the guest. */
    guestSshd: number;
    guestBusy: number;
    lat: number[];
  }
  // The product's path; the anchor, OpenSSH as it negotiates by itself; OpenSSH held to the cipher the
  // product's client negotiates, which tells the cipher's share from the client's.
  const SIDES = ['product', 'openssh', 'openssh-aes'] as const;
  type Side = (typeof SIDES)[number];
  const rounds: Record<Side, Round[]> = { product: [], openssh: [], 'openssh-aes': [] };
  const ciphers: Record<Side, string> = { product: '?', openssh: '?', 'openssh-aes': '?' };
  if (PARTS.has('shell')) {
    // Which cipher ssh2 (the product's client) negotiates: its handshake event, on every client.
    const connect = Client.prototype.connect;
    Client.prototype.connect = function (this: Client, cfg) {
      this.once('handshake', (n: { cs: { cipher: string } }) => {
        ciphers.product = n.cs.cipher;
      });
      return connect.call(this, cfg);
    };
    const qemu = () => watch.qemu();
    {
      const { path: p } = await productShell(driver);
      const made = await runLine(
        p,
        'head -c 24M /dev/urandom | base64 > /root/b64; cat /root/b64 >/dev/null; wc -c /root/b64',
        600_000,
      );
      console.log(`\nshell: /root/b64 made in ${f1(made.ms / 1000)} s`);
      await p.close();
    }
    for (let r = 0; r < ROUNDS; r++) {
      // Each side goes first, second and third once in three rounds.
      const order = SIDES.map((_, i) => SIDES[(i + r) % SIDES.length]);
      for (const side of order) {
        let shell: { path: ShellPath; setupMs: number; tries: number };
        // Every side starts on a new connection to a new sshd on the board.
        inner.ssh?.dropConnections();
        await sleep(500);
        if (side === 'product') {
          shell = await productShell(driver);
        } else {
          const since = performance.now();
          for (let i = 1; ; i++) {
            try {
              const o = await opensshShell(
                driver,
                work,
                side === 'openssh-aes' ? ciphers.product : undefined,
                since,
              );
              ciphers[side] = o.cipher;
              shell = { ...o, tries: i };
              break;
            } catch (err) {
              setupFailures.push(`${side}, try ${i}: ${(err as Error).message}`);
              if (i >= 4) throw err;
              await sleep(1000);
            }
          }
        }
        const tp = await throughput(shell.path, qemu());
        const lat = await echo(shell.path, KEYS);
        await shell.path.close();
        const last: Round = { setup: shell.setupMs, ...tp, lat };
        rounds[side].push(last);
        console.log(
          `  round ${r + 1} ${side.padEnd(11)} setup ${f1(last.setup)} ms${shell.tries > 1 ? ` (${shell.tries} tries)` : ''}, ${f2(last.mibs)} MiB/s (${f1(last.mib)} MiB, ` +
            `QEMU ${f1(last.qemuCpu)} s CPU; guest ${f1(last.guestBusy)} s busy, sshd ${f1(last.guestSshd)} s), echo p50 ${f2(pct(last.lat, 50))} p99 ${f2(pct(last.lat, 99))} ms; load ${f1(loadavg())}`,
        );
      }
    }
    Client.prototype.connect = connect;
  }

  // ---- 3. density ---------------------------------------------------------------------------------
  interface Idle {
    rss: number;
    cgroup: number;
    cpuPct: number;
    load: number;
  }
  let idle: Idle | null = null;
  let sampled: Idle | null = null;
  if (PARTS.has('density')) {
    // The service's connection up (as after any call), no shell open.
    const { path: p } = await productShell(driver);
    await p.close();
    await sleep(5000);
    const pid = watch.qemu();
    const window = async (sampleEveryS: number): Promise<Idle> => {
      const c0 = cpuSeconds(pid);
      const t0 = performance.now();
      let rss = 0;
      for (let i = 0; i < IDLE_S; i++) {
        if (sampleEveryS && i % sampleEveryS === 0) await driver.sampleMetrics().catch(() => {});
        await sleep(1000);
        rss = Math.max(rss, rssMib(pid));
      }
      const cpuPct = ((cpuSeconds(pid) - c0) / ((performance.now() - t0) / 1000)) * 100;
      return { rss, cgroup: (inner.cgroups?.memoryUsage() ?? Number.NaN) / MIB, cpuPct, load: loadavg() };
    };
    idle = await window(0);
    // What the lab's metrics sampler adds (an exec through the agent every 5 s by default).
    sampled = await window(5);
    for (const [what, x] of [
      ['agent connected, nothing asked', idle],
      ['metrics sampled every 5 s (the lab default)', sampled],
    ] as const)
      console.log(
        `\nidle board (${what}), ${IDLE_S} s: QEMU RSS ${f1(x.rss)} MiB, board cgroup ${f1(x.cgroup)} MiB, ` +
          `QEMU ${f2(x.cpuPct)} % of a core; load ${f1(x.load)}`,
      );
  }

  // ---- 4. flash the minimal image ------------------------------------------------------------------
  let flash: { phases: Record<string, number>; rec: BootRecord; total: number } | null = null;
  if (PARTS.has('flash')) {
    const phases: Record<string, number> = {};
    const t0 = performance.now();
    const rec = watch.beginOnPowerOn('minimal, first boot after the flash');
    let probe: Promise<void> | null = null;
    let flashed = 0;
    await driver.flash(
      min.file,
      (p: FlashProgress) => {
        phases[p.phase] ??= performance.now() - t0;
        if (p.phase === 'booting' && !probe)
          probe = Promise.all([watchReady(), agentAnswers()]).then(() => {});
      },
      { format: 'img.zst', tag: min.facts.name, label: min.facts.name },
    );
    flashed = performance.now() - t0;
    await probe;
    await loginSeen(rec);
    // rec's clock started at the power-on; the flash's clock at its call.
    const powerOn = watch.powerOnAt - t0;
    boots.push(rec);
    flash = { phases: { ...phases, powerOn, returned: flashed }, rec, total: powerOn };
    const s = (ms: number | undefined) => f1(((ms ?? Number.NaN) + powerOn) / 1000);
    console.log(
      `\nflash ${min.facts.name}: writing at ${f1(phases.writing / 1000)} s, verifying ${f1(phases.verifying / 1000)} s, ` +
        `power-on ${f1(powerOn / 1000)} s, booting ${f1(phases.booting / 1000)} s, flash() returned ${f1(flashed / 1000)} s, ` +
        `agent answers ${s(rec.at.agent)} s, login: ${s(rec.at['login:'])} s`,
    );
    console.log('boot of the flashed image (s after power-on)');
    printBoot(rec, 0, await guestView());
    for (let i = 1; i < BOOTS; i++) await resetBoot(`minimal, reset ${i}`);
  }

  clearInterval(loadTimer);
  loads.push(loadavg());

  // ---- summary ------------------------------------------------------------------------------------
  console.log(
    `\n## summary (${new Date().toISOString()}, ${((performance.now() - runStart) / 60000).toFixed(1)} min)`,
  );
  console.log(
    `host: ${os.availableParallelism()} cores, ${f1(os.totalmem() / 2 ** 30)} GiB; load average (1 min) ` +
      `${f1(Math.min(...loads))}–${f1(Math.max(...loads))}, median ${f1(median(loads))}; other QEMU boards ` +
      `running beside this one: ${others.length ? `${Math.min(...others)}–${Math.max(...others)}` : '?'}`,
  );
  console.log('\nboot, s after power-on or reset (QEMU CPU s in brackets)');
  console.log('| boot | OpenSBI | U-Boot | Linux version | Welcome | agent answers | login: | load |');
  console.log('|---|---|---|---|---|---|---|---|');
  const cell = (r: BootRecord, k: Mark | 'agent') =>
    `${f1((r.at[k] ?? Number.NaN) / 1000)}${k === 'agent' || k === 'login:' ? ` (${f1(r.cpu[k] ?? Number.NaN)})` : ''}`;
  for (const r of boots)
    console.log(
      `| ${r.label} | ${['OpenSBI', 'U-Boot', 'Linux version', 'Welcome', 'agent', 'login:'].map((k) => cell(r, k as Mark)).join(' | ')} | ${f1(r.load)} |`,
    );
  for (const img of ['developer', 'minimal']) {
    const rs = boots.filter((b) => b.label.startsWith(img));
    if (!rs.length) continue;
    const m = (k: Mark | 'agent') => f1(median(rs.map((r) => (r.at[k] ?? Number.NaN) / 1000)));
    const mc = (k: Mark | 'agent') => f1(median(rs.map((r) => r.cpu[k] ?? Number.NaN)));
    console.log(
      `| ${img}, median of ${rs.length} | ${m('OpenSBI')} | ${m('U-Boot')} | ${m('Linux version')} | ${m('Welcome')} | ` +
        `${m('agent')} (${mc('agent')}) | ${m('login:')} (${mc('login:')}) | |`,
    );
  }
  if (rounds.product.length && rounds.openssh.length) {
    const row = (side: Side) => {
      const rs = rounds[side];
      return {
        setup: median(rs.map((r) => r.setup)),
        mibs: median(rs.map((r) => r.mibs)),
        cpuPerMib: median(rs.map((r) => r.qemuCpu / r.mib)),
        p50: median(rs.map((r) => pct(r.lat, 50))),
        p99: median(rs.map((r) => pct(r.lat, 99))),
        runs: rs.map((r) => f2(r.mibs)).join(', '),
        cpuRuns: rs.map((r) => f2(r.qemuCpu / r.mib)).join(', '),
        sshdShare: median(rs.map((r) => r.guestSshd / r.guestBusy)),
      };
    };
    const names: Record<Side, string> = {
      product: 'product: driver.openShell (ssh2 over virtio-serial)',
      openssh: '**anchor**: OpenSSH ssh -tt (same guest sshd, same stream)',
      'openssh-aes': "OpenSSH ssh -tt -c <product's cipher>",
    };
    console.log(
      `\nshell path, medians of ${ROUNDS} rounds (cat of ${f1(rounds.product[0].mib)} MiB; ${KEYS} keys per round)`,
    );
    console.log(
      '| path | cipher | setup ms | cat MiB/s (runs) | QEMU CPU s per MiB (runs) | guest sshd share of guest CPU | echo p50 ms | echo p99 ms |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const side of SIDES) {
      if (!rounds[side].length) continue;
      const x = row(side);
      console.log(
        `| ${names[side]} | ${ciphers[side]} | ${f1(x.setup)} | ${f2(x.mibs)} (${x.runs}) | ${f2(x.cpuPerMib)} (${x.cpuRuns}) | ${f1(x.sshdShare * 100)} % | ${f2(x.p50)} | ${f2(x.p99)} |`,
      );
    }
    const a = row('product');
    const b = row('openssh');
    console.log(
      `| product / OpenSSH, of the medians | | ${f2(a.setup / b.setup)}× | ${f2(a.mibs / b.mibs)}× | ${f2(a.cpuPerMib / b.cpuPerMib)}× | | ` +
        `${f2(a.p50 / b.p50)}× | ${f2(a.p99 / b.p99)}× |`,
    );
    // Rounds are paired in time: a ratio within a round sees the same host load on both sides.
    const paired = rounds.product.map((p, i) => {
      const o = rounds.openssh[i];
      return o
        ? `${f2(p.mibs / o.mibs)}× MiB/s, ${f2(p.qemuCpu / p.mib / (o.qemuCpu / o.mib))}× CPU/MiB`
        : '';
    });
    console.log(`product / OpenSSH within each round: ${paired.join('; ')}`);
  }
  if (setupFailures.length)
    console.log(
      `\nshells that did not open (tried again): ${setupFailures.length}\n  ${setupFailures.join('\n  ')}`,
    );
  if (idle && sampled) {
    const limitMib = MEMORY_MB + 320;
    const hostMib = 24 * 1024;
    console.log('\ndensity: idle board, 30 s each');
    console.log('| idle board | QEMU RSS MiB | board cgroup MiB (limit) | QEMU CPU % of a core | load |');
    console.log('|---|---|---|---|---|');
    for (const [what, x] of [
      ['agent connected, nothing asked', idle],
      ['metrics sampled every 5 s', sampled],
    ] as const)
      console.log(
        `| ${what} | ${f1(x.rss)} | ${f1(x.cgroup)} (${limitMib}) | ${f2(x.cpuPct)} | ${f1(x.load)} |`,
      );
    const byCpu = (x: Idle) => Math.floor((2 * 100) / Math.max(x.cpuPct, 0.01));
    console.log(
      `2 cores, 24 GiB: ${Math.floor(hostMib / idle.rss)} idle boards by RSS, ${Math.floor(hostMib / limitMib)} ` +
        `by the cgroup limit (every board at its limit), ${byCpu(idle)} by idle CPU (${byCpu(sampled)} with metrics every 5 s)`,
    );
  }
  if (flash) {
    const p = flash.phases;
    const r = flash.rec;
    const on = p.powerOn;
    console.log('\nflash, s after driver.flash() was called');
    console.log('| writing | verifying | power-on | booting | flash() returns | agent answers | login: |');
    console.log('|---|---|---|---|---|---|---|');
    console.log(
      `| ${f1(p.writing / 1000)} | ${f1(p.verifying / 1000)} | ${f1(on / 1000)} | ${f1(p.booting / 1000)} | ` +
        `${f1(p.returned / 1000)} | ${f1(((r.at.agent ?? Number.NaN) + on) / 1000)} | ${f1(((r.at['login:'] ?? Number.NaN) + on) / 1000)} |`,
    );
  }

  await t.close();
  fs.rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
