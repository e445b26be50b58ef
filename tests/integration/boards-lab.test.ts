// The board lab on the real app and storage (PGlite, or PostgreSQL with DATABASE_URL): default lab,
// lab file, catalogue calls, administration, state history, health and metrics.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StateChange } from '#server/boards/lab.ts';
import { BOARD_TERMINALS, machineTerminals, terminalBudget } from '#server/boards/local/pty-host/budget.ts';
import { ManualClock } from '#server/clock.ts';
import { ORG_USER_PERMS } from '#server/identity/seed.ts';
import { freshStorage, makeTestApp, type TestApp } from './helpers/app.ts';
import { freePort, startSshd, type TestSshd } from './helpers/sshd.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const admin = ['device.view_device', 'device.add_device', 'device.change_device', 'device.del_device'];

describe('the board lab', () => {
  let t: TestApp;
  let u: TestUser;
  let a: TestUser;
  let sshd: TestSshd;
  const clock = new ManualClock();
  const get = (url: string, who = u) =>
    t.app.inject({ method: 'GET', url, headers: who.headers }).then((r) => r.json());
  const post = (url: string, payload: object, who = a) =>
    t.app.inject({ method: 'POST', url, headers: who.headers, payload }).then((r) => r.json());

  beforeAll(async () => {
    sshd = await startSshd();
    // Probes and samples are driven by the tests, not by timers.
    t = await makeTestApp({
      clock,
      env: { BIANBU_PROBE_INTERVAL_MS: '600000', BIANBU_METRICS_INTERVAL_MS: '600000' },
    });
    u = await makeUser(t.app);
    a = await makeUser(t.app, { perms: admin });
  });
  afterAll(async () => {
    await t?.close();
    await sshd?.stop();
  });

  it('creates the default local lab of four idle, running boards on first start', async () => {
    expect(await get('/api/device/store-all-num')).toMatchObject({
      code: 20000,
      data: { total: 4, states: { idle: 4, offline: 0 } },
    });
    const boards = await t.app.boards.list();
    expect(boards.map((b) => b.name)).toEqual(['board-1', 'board-2', 'board-3', 'board-4']);
    // Sandbox boards say what they are: this host's architecture and cores, never a RISC-V board's.
    expect(boards[0]).toMatchObject({
      driver: 'local',
      model: `${os.machine()} sandbox`,
      attributes: { arch: os.machine(), cores: os.availableParallelism(), kind: 'sandbox' },
    });
    const d = t.app.boards.driver('board-1');
    expect(d.kind).toBe('local');
    await expect(d.probe()).resolves.toBeUndefined();
  });

  it('answers the number of boards in a state', async () => {
    expect(await get('/api/device/store-state-num?state=idle')).toMatchObject({
      data: { state: 'idle', total: 4 },
    });
    expect((await get('/api/device/store-state-num?state=sleeping')).code).toBe(40000);
  });

  it('finds boards by keyword over name, model and attribute values, with LIKE wildcards taken literally', async () => {
    expect((await get('/api/device/fuzzy-query?keyword=BOARD-2')).data).toMatchObject({
      total: 1,
      items: [{ name: 'board-2' }],
    });
    expect((await get('/api/device/fuzzy-query?keyword=sandbox')).data.total).toBe(4);
    expect((await get('/api/device/fuzzy-query?keyword=riscv')).data.total).toBe(0);
    expect((await get('/api/device/fuzzy-query?keyword=%25')).data.total).toBe(0);
    expect((await get('/api/device/fuzzy-query?keyword=board_')).data.total).toBe(0);
  });

  it('filters boards by attributes with paging', async () => {
    // The default lab is sized from the host: which boards have the most memory depends on it.
    const all = await t.app.boards.list();
    const most = Math.max(...all.map((b) => Number(b.attributes.memoryMb)));
    const want = all.filter((b) => Number(b.attributes.memoryMb) >= most).map((b) => b.name);
    const r = await post(
      '/api/device/filter-device',
      { page: 1, pageSize: 2, filters: { memoryMb: { min: most } } },
      u,
    );
    expect(r.data.total).toBe(want.length);
    expect(r.data.items.map((b: { name: string }) => b.name)).toEqual(want.slice(0, 2));
    const p2 = await post(
      '/api/device/filter-device',
      { page: 2, pageSize: 2, filters: { memoryMb: { min: most } } },
      u,
    );
    expect(p2.data.items.map((b: { name: string }) => b.name)).toEqual(want.slice(2, 4));
    const any = await post(
      '/api/device/filter-device',
      { filters: { model: [`${os.machine().toUpperCase()} SANDBOX`, 'MUSE Pi Pro'], os: 'bianbu 2.0' } },
      u,
    );
    expect(any.data.total).toBe(4);
    const bad = await post('/api/device/filter-device', { filters: { 'x; drop table boards': 1 } }, u);
    expect(bad.code).toBe(40000);
  });

  it('records state changes in the history and emits them', async () => {
    const seen: StateChange[] = [];
    t.app.boards.events.on('state', (c: StateChange) => seen.push(c));
    await t.app.boards.setState('board-1', 'leased', 'test lease');
    expect(await t.app.boards.transition('board-1', ['idle'], 'leased', 'second lease')).toBeNull();
    await t.app.boards.setState('board-1', 'idle', 'lease over');
    expect(seen.map((c) => `${c.from}->${c.to}`)).toEqual(['idle->leased', 'leased->idle']);
    const h = await t.app.boards.history('board-1');
    expect(h.slice(0, 2).map((e) => e.reason)).toEqual(['lease over', 'test lease']);
  });

  it('refuses administration without the permission', async () => {
    expect((await get('/api/admin/boards', u)).code).toBe(40300);
  });

  it("refuses the board administration list to an ordinary member, who may view boards but not others' leases", async () => {
    const member = await makeUser(t.app, { perms: ORG_USER_PERMS });
    expect((await get('/api/admin/boards', member)).code).toBe(40300);
  });

  it('adds an ssh board whose secrets are never answered, and probes it', async () => {
    const r = await post('/api/admin/boards/add', {
      id: 'lab-ssh-1',
      name: 'lab-ssh-1',
      model: 'Real K1',
      attributes: { cores: 8, os: 'Bianbu 2.0' },
      driver: 'ssh',
      options: {
        host: '127.0.0.1',
        port: sshd.port,
        user: 'root',
        privateKey: sshd.clientKey,
        password: 'not-to-be-shown',
        hostKeyFingerprint: sshd.hostKeyFingerprint,
        rootDir: sshd.dir,
        timeoutMs: 2000,
      },
    });
    expect(r.code).toBe(20000);
    expect(r.data.options).toMatchObject({ privateKey: true, password: true, host: '127.0.0.1' });
    const list = await get('/api/admin/boards', a);
    expect(JSON.stringify(list)).not.toContain('not-to-be-shown');
    expect(JSON.stringify(list)).not.toContain('PRIVATE KEY');
    const row = (await t.app.boards.row('lab-ssh-1'))!;
    await t.app.boards.probeOne(row);
    expect((await t.app.boards.row('lab-ssh-1'))!.last_seen_at).not.toBeNull();
    expect((await post('/api/admin/boards/add', { id: 'lab-ssh-1', name: 'x', driver: 'local' })).code).toBe(
      40900,
    );
  });

  it('marks a board offline after repeated failed probes and back when it answers', async () => {
    const dead = await freePort();
    await post('/api/admin/boards/change', {
      deviceId: 'lab-ssh-1',
      options: { ...(await sshOpts()), port: dead },
    });
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      await t.app.boards.probeOne((await t.app.boards.row('lab-ssh-1'))!);
      expect(Date.now() - t0).toBeLessThan(5000);
    }
    const off = (await t.app.boards.row('lab-ssh-1'))!;
    expect(off.state).toBe('offline');
    expect(off.last_error).toBe('ssh.unreachable');
    expect(off.consecutive_failures).toBe(3);
    await post('/api/admin/boards/change', { deviceId: 'lab-ssh-1', options: await sshOpts() });
    await t.app.boards.probeOne((await t.app.boards.row('lab-ssh-1'))!);
    expect((await t.app.boards.row('lab-ssh-1'))!.state).toBe('idle');
  });

  it('refuses a board whose host key changed and says why', async () => {
    await post('/api/admin/boards/change', {
      deviceId: 'lab-ssh-1',
      options: { ...(await sshOpts()), hostKeyFingerprint: sshd.otherFingerprint },
    });
    await t.app.boards.probeOne((await t.app.boards.row('lab-ssh-1'))!);
    expect((await t.app.boards.row('lab-ssh-1'))!.last_error).toBe('ssh.host_key_mismatch');
    await post('/api/admin/boards/change', { deviceId: 'lab-ssh-1', options: await sshOpts() });
  });

  it('puts a board into maintenance and back', async () => {
    const on = await post('/api/admin/boards/maintenance', { deviceId: 'board-2', on: true, reason: 'fan' });
    expect(on.data).toMatchObject({ state: 'maintenance', stateReason: 'fan' });
    expect((await get('/api/device/store-state-num?state=maintenance')).data.total).toBe(1);
    const off = await post('/api/admin/boards/maintenance', { deviceId: 'board-2', on: false });
    expect(off.data.state).toBe('idle');
  });

  it('retires a board, keeping its history, and no longer lists or drives it', async () => {
    const r = await post('/api/admin/boards/retire', { deviceId: 'lab-ssh-1' });
    expect(r.data.retiredAt).not.toBeNull();
    expect((await get('/api/device/fuzzy-query?keyword=lab-ssh')).data.total).toBe(0);
    expect(() => t.app.boards.driver('lab-ssh-1')).toThrow(/offline or unknown/);
    expect((await t.app.boards.history('lab-ssh-1')).map((e) => e.kind)).toContain('retired');
    const all = await get('/api/admin/boards?includeRetired=true', a);
    expect(all.data.items.some((b: { deviceId: string }) => b.deviceId === 'lab-ssh-1')).toBe(true);
  });

  it('samples metrics of the running boards, answers recent ones and prunes those past the retention', async () => {
    const n = await t.app.boards.sampleAll();
    expect(n).toBe(4);
    const recent = await t.app.boards.recentMetrics('board-1', Date.now() - 60_000);
    expect(recent).toHaveLength(1);
    expect(recent[0].memTotal).toBe(4096 * 1024 * 1024);
    await t.app.boards.storeSamples([
      ['board-1', { ...recent[0], at: clock.now().getTime() - 25 * 3_600_000 }],
      ['board-1', { ...recent[0], at: clock.now().getTime() - 23 * 3_600_000 }],
    ]);
    expect(await t.app.boards.pruneMetrics()).toBe(1);
    expect(await t.app.boards.recentMetrics('board-1', clock.now().getTime() - 48 * 3_600_000)).toHaveLength(
      2,
    );
  });

  it('restores the default image of a board and puts it back in its state', async () => {
    const d = t.app.boards.driver('board-3');
    await d.files.write('/root/leftover.txt', 'from the last lease');
    await t.app.boards.setState('board-3', 'leased', 'lease');
    await t.app.boards.resetToDefault('board-3');
    expect((await t.app.boards.row('board-3'))!.state).toBe('leased');
    await expect(d.files.stat('/root/leftover.txt')).rejects.toMatchObject({ key: 'path.not_found' });
    await t.app.boards.setState('board-3', 'idle', 'lease over');
  });

  async function sshOpts() {
    return {
      host: '127.0.0.1',
      port: sshd.port,
      user: 'root',
      hostKeyFingerprint: sshd.hostKeyFingerprint,
      rootDir: sshd.dir,
      timeoutMs: 2000,
    };
  }
});

describe('a lab file', () => {
  it('upserts its boards at start and retires those it no longer names', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-labfile-'));
    const file = path.join(dir, 'lab.yaml');
    const board = (id: string, model: string) =>
      `  - id: ${id}\n    name: ${id}\n    model: ${model}\n    driver: local\n    attributes: { cores: 4, os: Bianbu }\n`;
    fs.writeFileSync(file, `boards:\n${board('alpha', 'A1')}${board('beta', 'B1')}`);
    const db = await freshStorage();
    const first = await makeTestApp({ env: { BIANBU_LAB_FILE: file }, storage: db.storage });
    try {
      expect((await first.app.boards.list()).map((b) => b.deviceId)).toEqual(['alpha', 'beta']);
      await first.close();
      fs.writeFileSync(file, `boards:\n${board('alpha', 'A2')}`);
      const second = await makeTestApp({ env: { BIANBU_LAB_FILE: file }, storage: db.storage });
      try {
        expect(await second.app.boards.list()).toMatchObject([{ deviceId: 'alpha', model: 'A2' }]);
        expect((await second.app.boards.row('beta'))?.retired_at).not.toBeNull();
        expect((await second.app.boards.history('beta')).map((e) => e.kind)).toContain('retired');
      } finally {
        await second.close();
      }
    } finally {
      await db.storage.close();
      await db.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("gives each local board a smaller share of the machine's terminals when they do not all fit at 512", async () => {
    // Linux counts terminals machine-wide (budget.ts): seven boards at 512 would overfill the default
    // pool of 3,072, and the last to ask would find none. Each board's devpts max is its share.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-labfile-'));
    const file = path.join(dir, 'lab.yaml');
    const ids = ['t1', 't2', 't3', 't4', 't5', 't6', 't7'];
    const board = (id: string) =>
      `  - id: ${id}\n    name: ${id}\n    model: T\n    driver: local\n    options: { memoryMb: 128, diskQuotaMb: 32 }\n`;
    fs.writeFileSync(file, `boards:\n${ids.map(board).join('')}`);
    const db = await freshStorage();
    const lab = await makeTestApp({ env: { BIANBU_LAB_FILE: file }, storage: db.storage });
    try {
      const { perBoard } = terminalBudget(ids.length, machineTerminals());
      expect(perBoard).toBeLessThan(BOARD_TERMINALS);
      const maxOf = (id: string): string | undefined => {
        const pid = (lab.app.boards.driver(id) as unknown as { initPid?: number }).initPid;
        if (!pid) return undefined;
        const line = fs
          .readFileSync(`/proc/${pid}/mountinfo`, 'latin1')
          .split('\n')
          .find((l) => l.split(' ')[4] === '/dev/pts');
        return /\bmax=(\d+)\b/.exec(line ?? '')?.[1];
      };
      const end = Date.now() + 90_000;
      while (ids.some((id) => maxOf(id) === undefined) && Date.now() < end)
        await new Promise((r) => setTimeout(r, 200));
      expect(ids.map(maxOf)).toEqual(ids.map(() => String(perBoard)));
    } finally {
      await lab.close();
      await db.storage.close();
      await db.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('stops the start with a line naming the fault of a bad lab file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-labfile-'));
    const file = path.join(dir, 'lab.yaml');
    fs.writeFileSync(file, 'boards:\n  - id: Bad Id\n    name: x\n    driver: local\n');
    const db = await freshStorage();
    await expect(makeTestApp({ env: { BIANBU_LAB_FILE: file }, storage: db.storage })).rejects.toThrow(
      /boards\.0\.id/,
    );
    await db.storage.close();
    await db.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
