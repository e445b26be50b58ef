// A riscv64 board (QEMU) through the real app: its code window says plainly that VS Code cannot run
// there (code.no_riscv_build: code-server has no riscv64 build this service can install in the guest)
// instead of "no code-server is installed", and the shipped board-info plugin, copied into the guest
// and run by its agent, answers the guest's own facts (riscv64, its ISA string, its kernel).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QemuDriver } from '#server/boards/qemu/qemu-driver.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { DesktopUnavailable } from '#shared/desktop.ts';
import type { TestApp } from './helpers/app.ts';
import { runInBoard } from './helpers/in-board.ts';
import { boardImagesDir, requireBoardImages, startRiscvLab, untilDriver } from './helpers/riscv-lab.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { call } from './leases.fixtures.ts';

const IMAGES = boardImagesDir();
const BOARD = 'rv-code';

describe('a riscv64 board: the code window says why, and board-info answers from the guest', () => {
  let t: TestApp;
  let work: string;
  let driver: () => QemuDriver;
  let u: TestUser;
  let applyId: string;

  const post = (url: string, payload: Record<string, unknown>) =>
    call<Record<string, unknown>>(t.app, u, 'POST', url, payload, applyId ? { applyaccess: applyId } : {});

  beforeAll(async () => {
    requireBoardImages(IMAGES, ['minimal']);
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-rv-code-'));
    ({ t, driver } = await startRiscvLab({
      work,
      imagesDir: IMAGES,
      board: { id: BOARD, image: 'minimal', cores: 2, memoryMb: 1024 },
      probeIntervalMs: 2000,
    }));
    await untilDriver(driver, "the board's agent", (d) => d.state.agent === 'ready', 420_000, 500);
    u = await makeUser(t.app);
    const l = await post('/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: {},
      serverName: 'rv-code',
    });
    expect(l.code, l.message).toBe(20000);
    const a = await post('/api/device/apply-device', { deviceId: l.data.deviceId });
    expect(a.code, a.message).toBe(20000);
    applyId = String(a.data.applyId);
  }, 600_000);

  afterAll(async () => {
    await t?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('says the code window cannot run VS Code on a riscv64 board', async () => {
    const r = await post('/api/device/desktop-status', { applyId });
    expect(r.code, r.message).toBe(20000);
    expect(r.data.code).toEqual({ available: false, reason: DesktopUnavailable.codeNoRiscvBuild });
  }, 60_000);

  it("answers board-info with the guest's own facts", async () => {
    const r = await post('/api/device/call-plugin', { applyId, topic: 'board-info' });
    expect(r.code, r.message).toBe(20000);
    const info = JSON.parse(String(r.data.result)) as Record<string, string | number>;
    expect(info.arch).toBe('riscv64');
    expect(String(info.isa)).toMatch(/^rv64/);
    // The same facts, asked of a shell of that guest.
    const shell = await driver().openShell({ cols: 200, rows: 50 });
    try {
      const said = (cmd: string) => runInBoard(shell, cmd, 60_000).then((s) => s.trim());
      expect(info.hostname).toBe(await said('uname -n'));
      expect(info.kernel).toBe(await said('uname -r'));
      expect(info.isa).toBe(await said("sed -n 's/^isa[[:space:]]*: *//p' /proc/cpuinfo | head -n 1"));
    } finally {
      shell.close();
    }
    expect(info.cpus).toBe(2);
    expect(info.osId).toBe('debian');
    expect(Number(info.memoryTotalBytes)).toBeGreaterThan(512 * 2 ** 20);
    expect(Number(info.memoryTotalBytes)).toBeLessThanOrEqual(1024 * 2 ** 20);
  }, 120_000);
});
