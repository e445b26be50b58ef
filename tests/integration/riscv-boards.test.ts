// riscv64 boards as a user drives them (issue 35): a real QEMU `virt` machine booted by OpenSBI and
// U-Boot from its own disk, reached with the `bianbu` CLI as a script would. Needs the board images
// (scripts/board-images/build.sh; .ci/run builds them into BIANBU_BOARD_IMAGES) and QEMU (helpers/riscv-lab.ts).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCredential } from '#server/auth/tokens.ts';
import type { PtyHandle } from '#server/boards/driver.ts';
import { boardImageTag } from '#server/boards/qemu/board-images.ts';
import type { QemuDriver } from '#server/boards/qemu/qemu-driver.ts';
import type { TestApp } from './helpers/app.ts';
import { type CliEnv, runCli } from './helpers/cli-run.ts';
import { boardImagesDir, requireBoardImages, startRiscvLab, untilDriver } from './helpers/riscv-lab.ts';
import { makeUser } from './helpers/users.ts';

const IMAGES = boardImagesDir();
const BOARD = 'rv-test';
const NAME = 'rv';

let t: TestApp;
let env: CliEnv;
let work: string;
let serial: PtyHandle;
let serialLog = '';

const bianbu = (args: string[], timeoutMs = 600_000) => runCli(env, args, { timeoutMs });
let driver: () => QemuDriver;

/** Runs a command on the held board with `bianbu exec`; answers stdout, fails on a non-zero status. */
async function sh(cmd: string): Promise<string> {
  const r = await bianbu(['exec', NAME, '--', 'sh', '-c', cmd]);
  if (r.code !== 0) throw new Error(`exec ${cmd}: ${r.code} ${r.stderr}`);
  return r.stdout.trim();
}

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; serial ends: ${serialLog.slice(-600)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('a riscv64 board under QEMU, driven with the bianbu CLI', () => {
  beforeAll(async () => {
    requireBoardImages(IMAGES, ['minimal', 'developer']);
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-rv-'));
    ({ t, driver } = await startRiscvLab({
      work,
      imagesDir: IMAGES,
      // Egress none: the probes below at addresses outside this machine must never leave it
      // (riscv-network.test.ts attacks the board under each policy).
      board: { id: BOARD, image: 'developer', cores: 2, memoryMb: 1024, network: { egress: 'none' } },
      probeIntervalMs: 2000,
    }));
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const user = await makeUser(t.app, {
      username: 'rv-user',
      perms: ['device.add_flash', 'device.view_flash'],
    });
    const key = await issueCredential(t.app.storage.db, user.id, 'apikey');
    env = { url, key, configFile: path.join(work, 'cli.json') };
    // The board's serial console from power-on (the ring replays what came before this attach).
    await untilDriver(driver, 'the board driver', (d) => d.state.running, 300_000);
    serial = await driver().openSerial({ cols: 120, rows: 40 });
    // Offline while its first disk was written (the probes found no machine): back once one answers.
    for (const deadline = Date.now() + 120_000; (await t.app.boards.row(BOARD))?.state !== 'idle'; ) {
      if (Date.now() > deadline)
        throw new Error(`the board never came into service: ${(await t.app.boards.row(BOARD))?.state}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    serial.onData((d) => {
      serialLog += d.toString('latin1');
    });
    const r = await bianbu(['request', NAME, '--duration', '48h']);
    expect(r.code, r.stderr).toBe(0);
  }, 600_000);

  afterAll(async () => {
    serial?.close();
    await t?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('boots OpenSBI, U-Boot and the kernel from its own disk, and answers riscv64', async () => {
    const arch = await sh('uname -m');
    expect(arch).toBe('riscv64');
    expect(serialLog).toMatch(/OpenSBI v\d/);
    expect(serialLog).toMatch(/U-Boot \d{4}\.\d{2}/);
    expect(serialLog).toMatch(/extlinux\.conf/);
    // The serial console's kernel is the one running.
    const release = await sh('uname -r');
    const line = /Linux version (\S+)/.exec(serialLog);
    expect(line?.[1]).toBe(release);
    // The catalogue shows the machine's own facts.
    const row = await t.app.boards.row(BOARD);
    expect(row?.attributes.arch).toBe('riscv64');
    expect(String(row?.attributes.isa)).toMatch(/^rv64imafdc/);
    expect(row?.attributes.kernel).toBe(release);
    expect(row?.attributes.cores).toBe(2);
  }, 600_000);

  it('compiles and runs a C program on the developer image: a RISC-V executable', async () => {
    fs.writeFileSync(
      path.join(work, 'hello.c'),
      '#include <stdio.h>\nint main(void){puts("hello from riscv64");return 0;}\n',
    );
    const cp = await bianbu(['cp', path.join(work, 'hello.c'), `${NAME}:/root/hello.c`]);
    expect(cp.code, cp.stderr).toBe(0);
    expect(await sh('cd /root && gcc -O2 -o hello hello.c && ./hello')).toBe('hello from riscv64');
    expect(await sh('readelf -h /root/hello')).toMatch(/Machine:\s+RISC-V/);
  }, 600_000);

  it('reaches nothing of the host: a NIC under egress none, no host loopback', async () => {
    // Its NIC (passt outside the machine) refuses everything under `none` (riscv-network.test.ts).
    for (const port of [5432, 6379, Number(new URL(env.url).port)]) {
      const out = await sh(
        `for h in 10.0.2.2 127.0.0.1 192.168.0.1; do timeout 3 bash -c "exec 3<>/dev/tcp/$h/${port}" 2>/dev/null && echo "open $h"; done; echo done`,
      );
      expect(out).toBe('done');
    }
    // The machine runs as an unprivileged uid in a network namespace of its own.
    const pids = execFileSync('pgrep', ['-f', 'qemu-system-riscv64'], { encoding: 'utf8' })
      .trim()
      .split('\n');
    const qemu = pids.find((p) =>
      fs.readFileSync(`/proc/${p}/cmdline`, 'latin1').startsWith('/usr/bin/qemu-system-riscv64'),
    );
    expect(qemu).toBeDefined();
    const status = fs.readFileSync(`/proc/${qemu}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).not.toBe('0');
    expect(/^CapEff:\s+(\S+)/m.exec(status)?.[1]).toBe('0000000000000000');
    expect(/^Seccomp:\s+(\d)/m.exec(status)?.[1]).toBe('2');
    expect(fs.readlinkSync(`/proc/${qemu}/ns/net`)).not.toBe(fs.readlinkSync('/proc/self/ns/net'));
  }, 600_000);

  it('power reset: the host resets the machine, OpenSBI prints again, the board comes back, and after a crash too', async () => {
    const before = serialLog.split('OpenSBI v').length;
    await sh('echo marker > /root/kept && sync');
    // As an attacker: the board's root makes uname lie, with 5,000 characters and terminal escapes,
    // for the facts the service reads after the reset.
    await sh(
      `printf '#!/bin/sh\\nhead -c 5000 /dev/zero | tr "\\\\0" x; printf "\\\\033]0;pwned\\\\007\\\\n"\\n' > /usr/local/bin/uname && chmod 755 /usr/local/bin/uname && sync`,
    );
    expect((await sh('uname -r')).length).toBeGreaterThan(4000);
    // Consoles hear the new boot's facts as the machine says them (lab 'facts' → board state topic).
    const heard: Array<Record<string, unknown>> = [];
    t.app.boards.events.on('facts', (f: { boardId: string; attributes: Record<string, unknown> }) => {
      if (f.boardId === BOARD) heard.push(f.attributes);
    });
    const r = await bianbu(['reset', NAME]);
    expect(r.code, r.stderr).toBe(0);
    // `bianbu reset` answers once the board is back: the machine went through OpenSBI again and the
    // board answers calls (the CLI waited through board.booting, and said so once).
    expect(r.stdout).toContain(`${NAME}: back`);
    expect(r.stderr).toContain('waiting for the board to boot');
    expect(serialLog.split('OpenSBI v').length).toBeGreaterThan(before);
    expect(await sh('cat /root/kept')).toBe('marker');
    await until('the facts of the new boot', () => driver().state.agent === 'ready', 300_000);
    expect(heard.some((a) => typeof a.cores === 'number')).toBe(true);
    expect(heard.some((a) => typeof a.isa === 'string' && String(a.isa).startsWith('rv64'))).toBe(true);
    const row = await t.app.boards.row(BOARD);
    for (const k of ['arch', 'kernel']) {
      const v = String(row?.attributes[k]);
      expect(v.length).toBeLessThanOrEqual(200);
      expect(v).not.toMatch(/[\u0000-\u001f\u007f]/);
    }
    await sh('rm /usr/local/bin/uname');
    // QEMU ends on its own (a crash, an OOM kill): the board boots again by itself, its disk intact.
    const { boots, pid } = driver().state;
    expect(pid).toBeGreaterThan(0);
    process.kill(pid!, 'SIGKILL');
    await until('the machine started again', () => driver().state.boots > boots, 120_000);
    expect(driver().state.pid).not.toBe(pid);
    expect(await sh('cat /root/kept')).toBe('marker');
  }, 600_000);

  it('a serial flood from inside costs a viewer that does not read at most 1 MiB', async () => {
    const view = await driver().openSerial({ cols: 80, rows: 24 });
    let got = 0;
    view.onData((d) => {
      got += d.length;
    });
    await new Promise((r) => setTimeout(r, 200));
    view.pause();
    got = 0;
    const flooded = serialLog.length;
    // In pieces, each opening the line again: a getty that restarts hangs up the line (EIO) meanwhile.
    await sh(
      'for i in $(seq 40); do head -c 40000 /dev/urandom | base64 -w 0 > /dev/ttyS0 2>/dev/null; done; true',
    );
    await until('the flood on the serial line', () => serialLog.length - flooded > 1_500_000, 120_000);
    view.resume();
    expect(got).toBeGreaterThan(0);
    expect(got).toBeLessThanOrEqual(1024 * 1024 + 65_536);
    view.close();
  }, 600_000);

  it('flashing the minimal image changes the OS and its programs, and boots it', async () => {
    const before = serialLog.split('OpenSBI v').length;
    expect(await sh('command -v gcc')).toBe('/usr/bin/gcc');
    const r = await bianbu(['flash', boardImageTag('minimal'), NAME, '--wait']);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(serialLog.split('OpenSBI v').length).toBeGreaterThan(before);
    expect(await sh('command -v gcc || echo none')).toBe('none');
    expect(await sh('test -e /root/kept && echo kept || echo gone')).toBe('gone');
    expect(await sh('uname -m')).toBe('riscv64');
    const row = await t.app.boards.row(BOARD);
    expect(row?.attributes.kernel).toBe(await sh('uname -r'));
  }, 900_000);
});
