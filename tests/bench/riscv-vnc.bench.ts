// A riscv64 board's own screen (issue 36): the desktop pane's path against a VNC client on QEMU's own
// server, in one run, while the screen changes. Prints figures; not pass/fail.
//
// One lab-file board (driver 'qemu', the minimal image, 2 harts, 1 GiB), booted to tty1's login on
// its virtio GPU. The screen then changes all the time, written through the agent (BENCH_RVNC_LOADS):
//   date    `while :; do date; done > /dev/tty1`: a line at a time as fast as the guest forks `date`;
//           once fbcon scrolls, lines of the same second scroll onto equal pixels, so a frame is small.
//   base64  `base64 /dev/urandom > /dev/tty1`: new random text on every row, each frame most of the
//           screen (the worst case for a text console).
// Two paths to QEMU's VNC server:
//   relay   driver.connectVnc(): the product's relay (screen-relay.c, in the machine's network
//           namespace) as a stream in this process. The anchor: QEMU's server has no socket a client can
//           reach without entering that namespace, and the relay only copies bytes, so it is the
//           closest to "straight on QEMU's socket" (tests/e2e/riscv-board.test.ts also compares the
//           pixels against an nsenter'd plain socket).
//   bridge  /vnc/{applyId}: the WebSocket the console's noVNC uses, signed in, to the same relay.
// Each pass: a new session, one full frame not counted, then incremental update requests for
// BENCH_RVNC_SECONDS, one at a time (as noVNC asks: the next request after each answer). QEMU answers an
// incremental request only once something changed, so each answer is a frame. Frames per second,
// bytes per frame on the wire (RFB bytes; the bridge's WebSocket framing is a few bytes more), and the
// service's CPU per frame (this process: the bridge or the relay's stream, and the client). Encodings:
// `raw` (Raw only) and `zrle` (ZRLE first, as a compressing client asks). Passes alternate the paths'
// order (relay+bridge, bridge+relay, …), BENCH_RVNC_ROUNDS per encoding.
//
//   npm run bench -- riscv-vnc
//   BENCH_RVNC_SECONDS=15 BENCH_RVNC_ROUNDS=3 BENCH_RVNC_LOADS=date,base64 BIANBU_BOARD_IMAGES=/var/cache/bianbu/board-images
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { HOUR_MS } from '#shared/constants.ts';
import {
  boardImagesDir,
  requireBoardImages,
  startRiscvLab,
  untilDriver,
} from '../integration/helpers/riscv-lab.ts';
import { makeUser } from '../integration/helpers/users.ts';
import { Reader } from './rfb-client.ts';
import {
  Encoding,
  grab,
  litPixels,
  openScreen,
  qemuUnder,
  readerOf,
  readUpdate,
  requestUpdate,
  type Screen,
} from './rfb-screen.ts';

const IMAGES = boardImagesDir('/var/cache/bianbu/board-images');
const SECONDS = Number(process.env.BENCH_RVNC_SECONDS ?? 15);
const ROUNDS = Number(process.env.BENCH_RVNC_ROUNDS ?? 3);
const LOADS = {
  date: 'while :; do date; done > /dev/tty1 2>&1 &',
  base64: 'base64 /dev/urandom > /dev/tty1 2>&1 &',
} as const;
const LOAD_NAMES = (process.env.BENCH_RVNC_LOADS ?? 'date,base64').split(',') as (keyof typeof LOADS)[];
const BOARD = 'rv-vnc-bench';
const TICK = 100;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const ENCODINGS = {
  raw: [Encoding.raw, Encoding.desktopSize],
  zrle: [Encoding.zrle, Encoding.raw, Encoding.desktopSize],
} as const;
type EncName = keyof typeof ENCODINGS;

interface Pass {
  fps: number;
  bytesPerFrame: number;
  mibs: number;
  cpuMsPerFrame: number;
  qemuCpu: number;
}

function qemuCpuSeconds(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / TICK;
}

async function measure(open: () => Promise<Screen>, qemu: number): Promise<Pass> {
  const s = await open();
  await grab(s);
  let frames = 0;
  let bytes = 0;
  const cpu0 = process.cpuUsage();
  const q0 = qemuCpuSeconds(qemu);
  const t0 = performance.now();
  while (performance.now() - t0 < SECONDS * 1000) {
    requestUpdate(s, true);
    const st = await readUpdate(s);
    if (st.resized) continue;
    frames++;
    bytes += st.bytes;
  }
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const qemuCpu = (qemuCpuSeconds(qemu) - q0) / secs;
  s.close();
  return {
    fps: frames / secs,
    bytesPerFrame: bytes / Math.max(1, frames),
    mibs: bytes / secs / 2 ** 20,
    cpuMsPerFrame: (cpu.user + cpu.system) / 1000 / Math.max(1, frames),
    qemuCpu,
  };
}

async function main() {
  if (process.getuid?.() !== 0) throw new Error('riscv64 boards need root');
  requireBoardImages(IMAGES, ['minimal']);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-rvnc-'));
  const { t, driver } = await startRiscvLab({
    work,
    imagesDir: IMAGES,
    board: { id: BOARD, image: 'minimal', cores: 2, memoryMb: 1024 },
    silent: true,
  });
  try {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as AddressInfo).port;
    const begun = Date.now();
    await untilDriver(
      driver,
      'the board to boot (15 minutes)',
      (d) => d.state.agent === 'ready',
      900_000,
      1000,
    );
    const u = await makeUser(t.app);
    const post = async (url: string, body: object) =>
      (await t.app.inject({ method: 'POST', url, headers: u.headers, payload: body })).json();
    const lease = await post('/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: {},
      serverName: 'rvnc-bench',
    });
    const applyId: string = (await post('/api/device/apply-device', { deviceId: lease.data.deviceId })).data
      .applyId;
    const qemu = qemuUnder(process.pid);

    const relay = (enc: EncName) => async () => {
      const s = await driver().connectVnc();
      return openScreen(
        readerOf(s),
        (b) => s.write(b),
        () => s.destroy(),
        [...ENCODINGS[enc]],
      );
    };
    const bridge = (enc: EncName) => async () => {
      const ws = new WebSocket(
        `ws://127.0.0.1:${port}/vnc/${applyId}`,
        ['binary', `bianbu.token.${u.token}`],
        {
          perMessageDeflate: false,
        },
      );
      const reader = new Reader();
      ws.on('message', (b: Buffer) => reader.push(b));
      ws.on('close', () => reader.end());
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      return openScreen(
        reader,
        (b) => ws.send(b),
        () => ws.close(),
        [...ENCODINGS[enc]],
      );
    };

    // tty1's login first: the screen is the guest's framebuffer console.
    const first = await relay('raw')();
    for (;;) {
      const px = await grab(first);
      if (first.width > 640 && litPixels(px, 0, 0, first.width, first.height, first.width) > 500) break;
      if (Date.now() - begun > 900_000) throw new Error('no console login on the screen');
      await sleep(2000);
    }
    console.log(
      `board booted to its screen's login in ${Math.round((Date.now() - begun) / 1000)} s; screen ${first.width}×${first.height}, 32 bpp`,
    );
    first.close();

    const shell = await driver().openShell({ cols: 80, rows: 24 });
    const results: Record<string, Pass[]> = {};
    for (const load of LOAD_NAMES) {
      shell.write(`${LOADS[load]}\n`);
      await sleep(3000);
      for (const enc of Object.keys(ENCODINGS) as EncName[]) {
        for (let round = 0; round < ROUNDS; round++) {
          const order = round % 2 === 0 ? (['relay', 'bridge'] as const) : (['bridge', 'relay'] as const);
          for (const path_ of order) {
            const r = await measure(path_ === 'relay' ? relay(enc) : bridge(enc), qemu);
            const key = `${load} ${enc} ${path_}`;
            results[key] ??= [];
            results[key].push(r);
            console.log(
              `${load.padEnd(6)} ${enc.padEnd(4)} ${path_.padEnd(6)} round ${round + 1}: ${r.fps.toFixed(1)} frames/s, ${(r.bytesPerFrame / 1024).toFixed(1)} KiB/frame, ${r.mibs.toFixed(2)} MiB/s, service CPU ${r.cpuMsPerFrame.toFixed(2)} ms/frame, QEMU ${(r.qemuCpu * 100).toFixed(0)} % of a core, load ${os.loadavg()[0].toFixed(1)}`,
            );
          }
        }
      }
      shell.write('kill %1\n');
      await sleep(1000);
    }
    shell.close();

    console.log('\nmedians over the rounds:');
    console.log(
      '| load | encoding | path | frames/s | KiB/frame | MiB/s | service CPU ms/frame | QEMU % of a core |',
    );
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const [key, rs] of Object.entries(results)) {
      const [load, enc, p] = key.split(' ');
      const m = (f: (r: Pass) => number) => median(rs.map(f));
      console.log(
        `| ${load} | ${enc} | ${p} | ${m((r) => r.fps).toFixed(1)} | ${(m((r) => r.bytesPerFrame) / 1024).toFixed(1)} | ${m((r) => r.mibs).toFixed(2)} | ${m((r) => r.cpuMsPerFrame).toFixed(2)} | ${(m((r) => r.qemuCpu) * 100).toFixed(0)} |`,
      );
    }
    for (const load of LOAD_NAMES)
      for (const enc of Object.keys(ENCODINGS)) {
        const b = results[`${load} ${enc} bridge`];
        const r = results[`${load} ${enc} relay`];
        const ratios = b.map((x, i) => x.fps / r[i].fps);
        console.log(
          `${load} ${enc}: bridge / relay frames per second, per round ${ratios.map((x) => `${(x * 100).toFixed(0)}%`).join(' ')}`,
        );
      }
  } finally {
    await t.close();
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
