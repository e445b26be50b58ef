// riscv64 boards' network (issue 36): throughput from a board to "the outside" against a plain process
// on the host to the same server, in the same run. Prints figures; not pass/fail.
//
// The outside: a network namespace with a veth pair (198.51.100.0/24) and our HTTP server in it
// (tests/integration/helpers/outside-netns.ts), serving `/blob/<bytes>` and taking `POST /sink`.
// - anchor: `bash` on the host, /dev/tcp to the server: `cat` of the answer into `wc -c` (download),
//   `head -c N /dev/zero` as a request body (upload). The host's kernel, the veth, nothing else.
// - product: the same script run in a minimal riscv64 board (egress `nat`) as its root through the
//   agent: the guest's virtio-net under TCG → QEMU's stream socket → passt as the board's uid → the
//   host's kernel under the board's nftables rules → the veth.
// Each side times itself (`date +%s%N` around the transfer), so the agent's exec is not counted. Rounds
// alternate which side goes first; CPU seconds of passt and QEMU per GiB from /proc/<pid>/stat.
//
//   npm run bench -- riscv-network
//   BENCH_NET_MIB=32 BENCH_NET_ROUNDS=3 (defaults) BIANBU_BOARD_IMAGES=/var/cache/bianbu/board-images
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { shQuote } from '#server/boards/ssh/quote.ts';
import type { SshDriver } from '#server/boards/ssh/ssh-driver.ts';
import { OUTSIDE, outsideMissing, startOutside, writeAptRepo } from '../integration/helpers/outside-netns.ts';
import {
  boardImagesDir,
  noImageBuilds,
  requireBoardImages,
  startRiscvLab,
  untilDriver,
} from '../integration/helpers/riscv-lab.ts';

const IMAGES = boardImagesDir('/var/cache/bianbu/board-images');
const MIB = Number(process.env.BENCH_NET_MIB ?? 32);
const ROUNDS = Number(process.env.BENCH_NET_ROUNDS ?? 3);
const BYTES = MIB * 1024 * 1024;
const BOARD = 'rvn-bench';
const TICK = 100;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : Number.NaN;
};
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');

const download = `s=$(date +%s%N); exec 3<>/dev/tcp/${OUTSIDE.addr}/${OUTSIDE.port}; printf 'GET /blob/${BYTES} HTTP/1.0\\r\\n\\r\\n' >&3; n=$(cat <&3 | wc -c); e=$(date +%s%N); echo "XFER $n $((e-s))"`;
const upload = `s=$(date +%s%N); exec 3<>/dev/tcp/${OUTSIDE.addr}/${OUTSIDE.port}; { printf 'POST /sink HTTP/1.0\\r\\nContent-Length: ${BYTES}\\r\\n\\r\\n'; head -c ${BYTES} /dev/zero; } >&3; n=$(cat <&3 | tail -n 1); e=$(date +%s%N); echo "XFER $n $((e-s))"`;

/** Bytes moved and seconds, from the script's own line. */
function parse(out: string): { bytes: number; s: number } {
  const m = /XFER (\d+) (\d+)/.exec(out);
  if (!m) throw new Error(`no transfer line in: ${out.slice(-300)}`);
  return { bytes: Number(m[1]), s: Number(m[2]) / 1e9 };
}

function onHost(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn('bash', ['-c', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    p.on('error', reject);
    p.on('close', () => resolve(out));
  });
}

/** utime + stime of a process, in seconds. */
function cpu(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / TICK;
  } catch {
    return Number.NaN;
  }
}

/** The board's passt (a child of this process) and its QEMU (same uid), by /proc. */
function boardProcesses(): { passt?: number; qemu?: number } {
  let passt: number | undefined;
  let uid = -1;
  const procs = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  for (const e of procs) {
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'latin1');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && /\(passt/.test(stat)) {
        passt = Number(e);
        uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${e}/status`, 'utf8'))?.[1]);
      }
    } catch {}
  }
  let qemu: number | undefined;
  for (const e of procs) {
    try {
      if (!fs.readFileSync(`/proc/${e}/comm`, 'latin1').startsWith('qemu-system')) continue;
      if (Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${e}/status`, 'utf8'))?.[1]) === uid)
        qemu = Number(e);
    } catch {}
  }
  return { passt, qemu };
}

async function main(): Promise<void> {
  const missing = outsideMissing();
  if (missing) throw new Error(`cannot run: ${missing}`);
  requireBoardImages(IMAGES, ['minimal']);
  noImageBuilds();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-rvnet-'));
  writeAptRepo(path.join(work, 'repo'));
  const outside = await startOutside(path.join(work, 'repo'));
  const { t, driver } = await startRiscvLab({
    work,
    imagesDir: IMAGES,
    board: { id: BOARD, image: 'minimal', cores: 2, memoryMb: 1024, network: { egress: 'nat' } },
    probeIntervalMs: 5000,
    silent: true,
  });
  try {
    await untilDriver(driver, 'the board to answer', (d) => d.state.agent === 'ready', 900_000, 1000);
    const ssh = (driver() as unknown as { ssh: SshDriver }).ssh;
    const inGuest = async (script: string) => {
      const r = await ssh.exec(`bash -c ${shQuote(script)}`, 600_000);
      return `${r.stdout}${r.stderr}`;
    };
    // The agent answers before udev and networkd are done on a loaded host: wait for DHCP's address.
    for (
      const until = Date.now() + 300_000;
      !/inet \d/.test(await inGuest('ip -4 -o addr show dev eth0 2>/dev/null'));
    ) {
      if (Date.now() > until) throw new Error('the board never got its address');
      await sleep(1000);
    }
    const procs = boardProcesses();
    console.log(
      `board ${BOARD} (minimal image, 2 harts, TCG) booted; passt pid ${procs.passt}, QEMU pid ${procs.qemu}; ${MIB} MiB per transfer, ${ROUNDS} rounds; load ${os.loadavg()[0].toFixed(2)}`,
    );
    type Side = 'host' | 'board';
    const rows: Record<string, Record<Side, number[]> & { passt: number[]; qemu: number[] }> = {};
    for (const [name, script] of [
      ['download (outside → board)', download],
      ['upload (board → outside)', upload],
    ] as const) {
      const row = {
        host: [] as number[],
        board: [] as number[],
        passt: [] as number[],
        qemu: [] as number[],
      };
      rows[name] = row;
      for (let round = 0; round < ROUNDS; round++) {
        const order: Side[] = round % 2 === 0 ? ['host', 'board'] : ['board', 'host'];
        for (const side of order) {
          const c0 = { passt: cpu(procs.passt), qemu: cpu(procs.qemu) };
          const r = parse(side === 'host' ? await onHost(script) : await inGuest(script));
          if (r.bytes < BYTES) throw new Error(`${side} moved ${r.bytes} of ${BYTES} bytes`);
          const mibs = BYTES / 1024 / 1024 / r.s;
          row[side].push(mibs);
          if (side === 'board') {
            const gib = BYTES / 1024 ** 3;
            row.passt.push((cpu(procs.passt) - c0.passt) / gib);
            row.qemu.push((cpu(procs.qemu) - c0.qemu) / gib);
          }
          console.log(`  ${name}, round ${round + 1}, ${side}: ${f1(mibs)} MiB/s (${f2(r.s)} s)`);
        }
      }
    }
    console.log(
      '\n| direction | host process (anchor), MiB/s | board (product), MiB/s | board ÷ host | passt CPU s/GiB | QEMU CPU s/GiB |',
    );
    console.log('|---|---|---|---|---|---|');
    for (const [name, r] of Object.entries(rows)) {
      const h = median(r.host);
      const b = median(r.board);
      console.log(
        `| ${name} | ${f1(h)} (${r.host.map(f1).join(', ')}) | ${f1(b)} (${r.board.map(f1).join(', ')}) | ${f2(b / h)} | ${f1(median(r.passt))} | ${f1(median(r.qemu))} |`,
      );
    }
    console.log(
      `\nload average at the end: ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await t.close();
    outside.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
