// A real riscv64 board (QEMU `virt`, booted by OpenSBI and U-Boot from its own disk) run by a board
// host process and reached through it (issue 37): the service runs no boards itself; the board's
// shell says riscv64, the catalogue shows the facts the machine gave the host, and its serial console
// carries the boot from OpenSBI on.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResultCode } from '#shared/codes.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { type HostProc, startHost, waitFor } from './helpers/board-host.ts';
import { runInBoard } from './helpers/in-board.ts';
import { listenOnLoopback } from './helpers/realtime-app.ts';
import { boardImagesDir, requireBoardImages, writeRiscvLab } from './helpers/riscv-lab.ts';
import { makeUser } from './helpers/users.ts';

const IMAGES = boardImagesDir();

describe('a riscv64 board on a board host', () => {
  let t: TestApp;
  let dir: string;
  let host: HostProc | null = null;
  let a: Awaited<ReturnType<typeof makeUser>>;

  beforeAll(async () => {
    requireBoardImages(IMAGES, ['minimal']);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-riscv-host-'));
    t = await makeTestApp({
      env: { BIANBU_LOCAL_BOARDS: '0', BIANBU_BOARD_IMAGES: IMAGES, BIANBU_PROBE_INTERVAL_MS: '1000' },
    });
    const url = `http://127.0.0.1:${await listenOnLoopback(t)}`;
    a = await makeUser(t.app, { perms: ['device.add_device', 'device.change_device'] });
    const r = (
      await t.app.inject({
        method: 'POST',
        url: '/api/admin/hosts/add',
        headers: a.headers,
        payload: { name: 'rv-lab' },
      })
    ).json();
    expect(r.code).toBe(ResultCode.Success);
    writeRiscvLab(path.join(dir, 'lab.json'), { id: 'rvh-1', image: 'minimal', network: { egress: 'none' } });
    host = startHost({
      serviceUrl: url,
      token: String(r.data.token),
      dataDir: path.join(dir, 'host'),
      labFile: path.join(dir, 'lab.json'),
      env: { BIANBU_BOARD_IMAGES: IMAGES },
    });
  }, 120_000);

  afterAll(async () => {
    await host?.stop();
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('boots on the host and answers through it with the facts of the machine', async () => {
    const d = await waitFor('rvh-1 linked', async () => t.app.boards.driverIfAny('rvh-1'), 60_000);
    expect(d.kind).toBe('qemu');
    // A shell once it has booted (until then the driver answers board.booting).
    const sh = await waitFor(
      'a shell after boot',
      async () => d.openShell({ cols: 120, rows: 40 }).catch(() => null),
      600_000,
    );
    // A first login shell under emulation on a busy machine: seen silent for 20 s once.
    expect((await runInBoard(sh, 'uname -m', 120_000)).trim()).toBe('riscv64');
    sh.close();
    // Its boot, from OpenSBI on, on its serial console through the host (the ring keeps it for a late viewer).
    const serial = await d.openSerial({ cols: 120, rows: 40 });
    let boot = '';
    serial.onData((c) => {
      boot += c.toString('latin1');
    });
    await waitFor('the boot log', async () => /OpenSBI/.test(boot), 30_000);
    serial.close();
    // What the machine said of itself reached the catalogue through the host's link.
    const attrs = await waitFor(
      'facts',
      async () => {
        const [row] = await t.app.storage.query<{ attributes: Record<string, unknown> }>(
          'select attributes from boards where id = $1',
          ['rvh-1'],
        );
        return typeof row?.attributes.kernel === 'string' ? row.attributes : null;
      },
      60_000,
    );
    expect(String(attrs.arch ?? attrs.isa ?? '')).toMatch(/riscv|rv64/);
  }, 720_000);

  it("runs its network on its host: the host's lab file's policy, an administrator's applied live there", async () => {
    const net = async (policy?: object | null) => {
      const r = await t.app.inject(
        policy === undefined
          ? { method: 'GET', url: '/api/admin/boards/network?deviceId=rvh-1', headers: a.headers }
          : {
              method: 'POST',
              url: '/api/admin/boards/network/change',
              headers: a.headers,
              payload: { deviceId: 'rvh-1', policy },
            },
      );
      const body = r.json();
      expect(body.code, JSON.stringify(body)).toBe(ResultCode.Success);
      return body.data as { policy: { egress: string; allow: string[] }; source: string; state: string };
    };
    // The host's lab file says none for this board: what the host runs, told by the host.
    expect(await net()).toMatchObject({ policy: { egress: 'none' }, source: 'board' });
    // An administrator opens it: applied on the host, live.
    const opened = await net({ egress: 'nat', allow: ['192.0.2.0/24'] });
    expect(opened).toMatchObject({ policy: { egress: 'nat', allow: ['192.0.2.0/24'] }, source: 'admin' });
    expect(await net()).toMatchObject({ policy: { egress: 'nat' }, source: 'admin' });
    // Dropped: the host's own again.
    expect(await net(null)).toMatchObject({ policy: { egress: 'none' }, source: 'board' });
  }, 120_000);
});
