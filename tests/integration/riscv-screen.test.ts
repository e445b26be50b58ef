// A riscv64 board's own screen (issue 36): QEMU's VNC server in the machine's own network namespace,
// reached by one relay per viewer (src/server/boards/qemu/screen.ts). One real board, booted once: the
// relay reaches that namespace's 127.0.0.1:5900 and nothing else, several viewers see and type on the
// same screen, and no relay outlives its viewer or the board. Needs the board images and QEMU.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QemuDriver } from '#server/boards/qemu/qemu-driver.ts';
import { openNetns } from '#server/boards/qemu/screen.ts';
import {
  grab,
  key,
  litPixels,
  openScreen,
  qemuUnder,
  readerOf,
  type Screen,
  type as typeText,
} from '../bench/rfb-screen.ts';
import type { TestApp } from './helpers/app.ts';
import { boardImagesDir, requireBoardImages, startRiscvLab, untilDriver } from './helpers/riscv-lab.ts';

const IMAGES = boardImagesDir();
const BOARD = 'rv-screen';
const BACKSPACE = 0xff08;

let t: TestApp;
let work: string;
let driver: () => QemuDriver;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(
  what: string,
  probe: () => Promise<T | null> | T | null,
  ms: number,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** The screen relays this process runs now (screen-relay.c, run from its descriptor). */
function relays(): number[] {
  const out: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (!fs.readlinkSync(`/proc/${d}/exe`).includes('bianbu-screen-relay')) continue;
      const ppid = /^PPid:\s*(\d+)$/m.exec(fs.readFileSync(`/proc/${d}/status`, 'utf8'))?.[1];
      if (Number(ppid) === process.pid) out.push(Number(d));
    } catch {}
  }
  return out;
}

async function viewer(): Promise<{ s: Duplex; screen: Screen }> {
  const s = await driver().connectVnc();
  const screen = await openScreen(
    readerOf(s),
    (b) => s.write(b),
    () => s.destroy(),
  );
  return { s, screen };
}

/** The console login on the guest's fbcon: a screen larger than QEMU's 640×480 placeholder, text on it. */
async function loginScreen(screen: Screen): Promise<Buffer> {
  let seen = '';
  try {
    // The guest booted first, told by its agent (cheap to ask): a whole raw frame is megabytes that
    // QEMU encodes under its big lock, and grabbing one every half second while the machine boots
    // slowed the emulated boot past this test's 7 minutes once in CI.
    const t0 = Date.now();
    await until(
      'the board booted (its agent answers)',
      () => driver().state.agent === 'ready',
      420_000,
      1000,
    );
    const booted = Date.now() - t0;
    const shown = await until(
      "tty1's login on the board's screen",
      async () => {
        const px = await grab(screen);
        const lit = litPixels(px, 0, 0, screen.width, screen.height, screen.width);
        seen = `${screen.width}x${screen.height}, ${lit} lit pixels`;
        return screen.width > 640 && lit > 500 ? Buffer.from(px) : null;
      },
      180_000,
      2000,
    );
    console.log(`booted ${booted} ms after the first viewer; tty1's login shown ${Date.now() - t0} ms after`);
    return shown;
  } catch (err) {
    // What the machine said, on one line (the test summary keeps a failure's first lines only).
    const tail = (await serialTail())
      .split(/[\r\n]+/)
      .filter(Boolean)
      .slice(-8)
      .join(' | ');
    throw new Error(`${(err as Error).message} (last screen ${seen}); serial: ${tail.slice(-700)}`);
  }
}

async function serialTail(): Promise<string> {
  const pty = await driver().openSerial({ cols: 80, rows: 24 });
  let text = '';
  pty.onData((c) => {
    text = (text + c.toString('latin1')).slice(-3000);
  });
  await sleep(1000);
  pty.close();
  return text.replace(/\x1b\[[0-9;?]*[a-zA-Z]/g, '');
}

describe("a riscv64 board's own screen", () => {
  beforeAll(async () => {
    requireBoardImages(IMAGES, ['minimal']);
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-rv-screen-'));
    ({ t, driver } = await startRiscvLab({
      work,
      imagesDir: IMAGES,
      board: { id: BOARD, image: 'minimal', cores: 2, memoryMb: 1024 },
      probeIntervalMs: 2000,
    }));
    await untilDriver(driver, 'the board machine', (d) => d.state.running, 300_000, 500);
  }, 600_000);

  afterAll(async () => {
    await t?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it("takes only a sandbox's own network namespace, never the host's or a stranger's", async () => {
    const kids: ChildProcess[] = [];
    const parent = (script: string) => {
      const c = spawn('/bin/sh', ['-c', script], { stdio: 'ignore' });
      kids.push(c);
      return c.pid!;
    };
    try {
      const inHost = parent('sleep 30 & wait');
      const inOwn = parent('unshare --net sleep 30 & wait');
      const two = parent('unshare --net sleep 30 & unshare --net sleep 30 & wait');
      await sleep(500);
      // A child in the host's network: refused.
      expect(openNetns(inHost)).toBeNull();
      // A child in a namespace of its own: its handle.
      const fd = openNetns(inOwn);
      expect(fd).not.toBeNull();
      const child = Number(fs.readFileSync(`/proc/${inOwn}/task/${inOwn}/children`, 'utf8').trim());
      expect(fs.fstatSync(fd!).ino).toBe(fs.statSync(`/proc/${child}/ns/net`).ino);
      fs.closeSync(fd!);
      // Not one child (not a bubblewrap), or no such process: refused.
      expect(openNetns(two)).toBeNull();
      expect(openNetns(2 ** 22 + 7)).toBeNull();
    } finally {
      for (const k of kids) k.kill('SIGKILL');
    }
  });

  it("reaches QEMU's VNC server on 127.0.0.1:5900 of the machine's namespace, and nothing else", async () => {
    // A decoy where a relay that stayed in the host's network would land.
    const decoy = net.createServer((c) => c.end('RFB 003.008\n\x01\x01'));
    const decoyUp = await new Promise<boolean>((r) => {
      decoy.once('error', () => r(false));
      decoy.listen(5900, '127.0.0.1', () => r(true));
    });
    try {
      const { s, screen } = await viewer();
      // QEMU's server names itself; the decoy never answers a ServerInit.
      expect(screen.name).toBe('QEMU');
      const [relay] = relays();
      expect(relay).toBeGreaterThan(0);
      const qemu = qemuUnder(process.pid);
      const ns = (pid: number | 'self', which: string) => fs.readlinkSync(`/proc/${pid}/ns/${which}`);
      // Its network is the machine's; its mounts, pids and users stay the host's (no board path).
      expect(ns(relay, 'net')).toBe(ns(qemu, 'net'));
      expect(ns(relay, 'net')).not.toBe(ns('self', 'net'));
      for (const which of ['mnt', 'pid', 'user']) expect(ns(relay, which)).toBe(ns('self', which));
      // It copies the board's bytes as nobody, with no capabilities.
      const status = fs.readFileSync(`/proc/${relay}/status`, 'utf8');
      expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe('65534');
      expect(/^CapEff:\s+(\S+)/m.exec(status)?.[1]).toBe('0000000000000000');
      expect(/^NoNewPrivs:\s+(\d)/m.exec(status)?.[1]).toBe('1');
      // Its connection: from that namespace's loopback to its port 5900 (0x170C), established.
      const tcp = fs.readFileSync(`/proc/${relay}/net/tcp`, 'utf8');
      expect(tcp).toMatch(/0100007F:[0-9A-F]{4} 0100007F:170C 01/);
      s.destroy();
      if (decoyUp) console.log('decoy listened on the host 127.0.0.1:5900; the relay did not reach it');
    } finally {
      decoy.close();
    }
  }, 60_000);

  it('serves several viewers at once the same screen, and what one types shows on all', async () => {
    const views = await Promise.all([viewer(), viewer(), viewer()]);
    try {
      expect(relays().length).toBe(3);
      const first = await loginScreen(views[0].screen);
      const { width, height } = views[0].screen;
      for (const v of views.slice(1)) {
        await grab(v.screen);
        expect([v.screen.width, v.screen.height]).toEqual([width, height]);
      }
      // Typing on the first viewer: every viewer sees the name tty1 echoes (four glyphs' worth of lit
      // pixels more: more than the blinking cursor's 8×2).
      const lit = (px: Buffer) => litPixels(px, 0, 0, width, height, width);
      const before = lit(first);
      typeText(views[0].screen, 'root');
      const changed = await until(
        'the typed name on every viewer',
        async () => {
          const shots = await Promise.all(views.map((v) => grab(v.screen)));
          return shots.every((p) => lit(p) > before + 40) ? shots.map((p) => Buffer.from(p)) : null;
        },
        60_000,
      );
      // All viewers see the same pixels (fbcon's cursor blinks: grabs taken across a blink differ, so
      // a few tries).
      const same = await until(
        'the same pixels on every viewer',
        async () => {
          const shots = await Promise.all(views.map(async (v) => Buffer.from(await grab(v.screen))));
          return shots.every((p) => p.equals(shots[0])) ? shots : null;
        },
        20_000,
      );
      expect(same.length).toBe(3);
      expect(changed.length).toBe(3);
      // Leave the login prompt as it was for whoever comes next.
      for (let i = 0; i < 4; i++) key(views[0].screen, BACKSPACE);
    } finally {
      for (const v of views) v.s.destroy();
    }
    // The relays end with their viewers.
    await until('no relay after the viewers left', () => relays().length === 0, 10_000);
    // A viewer after the others left is served as the first was.
    const again = await viewer();
    expect(again.screen.name).toBe('QEMU');
    again.s.destroy();
    await until('no relay after the last viewer left', () => relays().length === 0, 10_000);
  }, 600_000);

  it('leaves no relay behind when the machine powers off or the board stops, and says booting while off', async () => {
    const views = await Promise.all([viewer(), viewer()]);
    expect(relays().length).toBe(2);
    const closed = views.map((v) => new Promise<void>((r) => v.s.once('close', () => r())));
    // Off (as between a flash's power-off and power-on): the viewers' relays end, a new one is told
    // to wait (the bridge closes with board.booting, which the pane retries).
    await driver().powerOff();
    await Promise.all(closed);
    await until('no relay after the power-off', () => relays().length === 0, 10_000);
    await expect(driver().connectVnc()).rejects.toMatchObject({ key: 'board.booting' });
    // On again: the new machine's screen, through its own namespace, as soon as it runs.
    await driver().powerOn();
    const again = await viewer();
    expect(again.screen.name).toBe('QEMU');
    const [relay] = relays();
    expect(fs.readlinkSync(`/proc/${relay}/ns/net`)).toBe(
      fs.readlinkSync(`/proc/${qemuUnder(process.pid)}/ns/net`),
    );
    const closedAgain = new Promise<void>((r) => again.s.once('close', () => r()));
    await driver().stop();
    await closedAgain;
    await until('no relay after the board stopped', () => relays().length === 0, 10_000);
    await expect(driver().connectVnc()).rejects.toMatchObject({ key: 'board.not_running' });
  }, 120_000);
});
