// A board at its limits stays its holder's and costs the others little: a fork bomb with busy loops
// takes its board offline (nothing can be started in it), its holder's power reset still works —
// the reset is the host's kill of the board's cgroups — and the board answers again in seconds. The
// board's CPU is bound below the host's. And nothing of the host shows inside a board's /proc.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyHandle } from '#server/boards/driver.ts';
import { DEFAULT_LAB_MEMORY_SHARE, defaultLab } from '#server/boards/labfile.ts';
import { cpuBound } from '#server/boards/local/cgroups.ts';
import { hostSupport } from '#server/boards/local/host-support.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import type { TestUser } from './helpers/users.ts';
import { boardState, call, endIn, H48, makeUser } from './leases.fixtures.ts';

/** Runs `cmd` in a shell and answers what it printed between two markers (the echo of the line left out). */
async function run(sh: PtyHandle, cmd: string, timeoutMs = 30_000): Promise<string> {
  const id = Math.random().toString(36).slice(2, 8);
  let out = '';
  const off = sh.onData((b) => {
    out += b.toString();
  });
  // The markers are split in the typed line, so only the output contains them whole.
  sh.write(`echo BEG""${id}; ${cmd}; echo FIN""${id}\r`);
  const done = new RegExp(`BEG${id}\\r?\\n([\\s\\S]*?)FIN${id}`);
  const deadline = Date.now() + timeoutMs;
  let m = done.exec(out);
  while (!m) {
    if (Date.now() > deadline) throw new Error(`no answer to ${cmd}: ${out.slice(-300)}`);
    await new Promise((r) => setTimeout(r, 20));
    m = done.exec(out);
  }
  off();
  return m[1].trim();
}

describe('the default lab on this host', () => {
  it('hands its boards at most three quarters of the host memory in all, and says so in the catalogue', () => {
    for (const hostMb of [4096, 24_064, 262_144]) {
      const lab = defaultLab(hostMb);
      const sum = lab.reduce((n, b) => n + (b.options as { memoryMb: number }).memoryMb, 0);
      expect(sum).toBeLessThanOrEqual(hostMb * DEFAULT_LAB_MEMORY_SHARE);
      for (const b of lab) expect(b.attributes.memoryMb).toBe((b.options as { memoryMb: number }).memoryMb);
    }
  });

  it('bounds a board below the host: half a core of it always stays for the rest', () => {
    expect(cpuBound(8, 2)).toBe(1.5);
    expect(cpuBound(1, 2)).toBe(1);
    expect(cpuBound(8, 1)).toBe(0.5);
    expect(cpuBound(8, 16)).toBe(8);
  });
});

describe('a fork bomb in a held board', () => {
  let t: TestApp;
  let u: TestUser;
  let work: string;
  let bombed = '';
  let other = '';
  let applyId = '';

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-bomb-'));
    const labFile = path.join(work, 'lab.yaml');
    const board = (id: string) => ({
      id,
      name: id,
      model: 'K1',
      driver: 'local',
      options: { memoryMb: 512, diskQuotaMb: 128, maxProcesses: 256 },
    });
    fs.writeFileSync(labFile, JSON.stringify({ boards: [board('bomb-a'), board('bomb-b')] }));
    t = await makeTestApp({
      env: {
        BIANBU_LAB_FILE: labFile,
        BIANBU_PROBE_INTERVAL_MS: '500',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    u = await makeUser(t.app);
    const lease = await call(t.app, u, 'POST', '/api/device/request-device', {
      requestDate: endIn(t.app.clock.now(), H48),
      filterReq: {},
      serverName: 'bomber',
    });
    expect(lease.code).toBe(20000);
    bombed = lease.data.deviceId;
    other = bombed === 'bomb-a' ? 'bomb-b' : 'bomb-a';
    applyId = (await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId: bombed })).data.applyId;
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('bounds the board’s CPU below the host’s in its cgroup', () => {
    const cpu = hostSupport().cgroups.cpu;
    if (!cpu) throw new Error('no cpu cgroup controller on this host: the limit cannot be checked');
    const dir = fs.readdirSync(cpu.base).find((n) => n.startsWith(`${bombed}-`));
    expect(dir).toBeDefined();
    const cores = os.availableParallelism();
    const quota =
      cpu.version === 1
        ? Number(fs.readFileSync(path.join(cpu.base, dir as string, 'cpu.cfs_quota_us'), 'utf8'))
        : Number(fs.readFileSync(path.join(cpu.base, dir as string, 'cpu.max'), 'utf8').split(' ')[0]);
    expect(quota).toBeGreaterThan(0);
    expect(quota).toBeLessThan(cores * 100_000);
  });

  it('goes offline under a fork bomb, and its holder’s power reset brings it back in seconds', async () => {
    const sh = await t.app.boards.driver(bombed).openShell({ cols: 120, rows: 30 });
    const neighbour = await t.app.boards.driver(other).openShell({ cols: 120, rows: 30 });
    expect(await run(neighbour, 'echo neighbour-up')).toBe('neighbour-up');
    // Four busy loops, then the bomb (the shell itself is taken by it: nothing more is typed there).
    sh.write('for i in 1 2 3 4; do (while :; do :; done) & done; f(){ f|f& }; f\r');
    // The bomb holds the board's process limit: nothing more can start in it.
    const pids = hostSupport().cgroups.pids;
    if (!pids) throw new Error('no pids cgroup controller on this host: the bomb would take the host');
    const group = fs.readdirSync(pids.base).find((n) => n.startsWith(`${bombed}-`)) as string;
    const current = () => Number(fs.readFileSync(path.join(pids.base, group, 'pids.current'), 'utf8'));
    const deadline = Date.now() + 30_000;
    while (current() < 250) {
      if (Date.now() > deadline) throw new Error(`the bomb never filled the board: ${current()} processes`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Probes fail from here on (entering the board needs a process in it); after three the lab marks
    // it offline, as here — the state its holder finds the board in.
    await t.app.boards.setState(bombed, 'offline', '3 failed probes: driver.timeout');
    // The other board still answers, bomb or not.
    expect(await run(neighbour, 'echo still-here', 20_000)).toBe('still-here');
    const began = Date.now();
    const reset = await call(t.app, u, 'POST', '/api/device/power-reset', {}, { applyaccess: applyId });
    expect(reset.code, JSON.stringify(reset)).toBe(20000);
    expect(reset.data).toEqual({ deviceId: bombed, state: 'leased' });
    const tookMs = Date.now() - began;
    expect(tookMs).toBeLessThan(30_000);
    const fresh = await t.app.boards.driver(bombed).openShell({ cols: 120, rows: 30 });
    // Nothing of the bomb survived the reset: the board runs a handful of processes.
    const count = Number(await run(fresh, 'ls -d /proc/[0-9]* | wc -l'));
    expect(count).toBeLessThan(20);
    fresh.close();
    neighbour.close();
    console.log(`fork bomb: the holder's reset took ${tookMs} ms`);
  }, 120_000);

  it('shows nothing of the host in a board’s /proc: no service directory, no host path of its programs', async () => {
    const sh = await t.app.boards.driver(other).openShell({ cols: 200, rows: 50 });
    const seen = await run(
      sh,
      `for p in /proc/[0-9]*; do printf '%s %s %s\\n' "$p" "$(readlink $p/exe)" "$(tr '\\0' ' ' < $p/environ 2>/dev/null)"; done`,
    );
    sh.close();
    expect(seen).toContain('/proc/1 ');
    expect(seen).not.toContain(process.cwd());
    expect(seen).not.toContain(os.tmpdir() + '/');
    expect(seen).not.toContain(t.dataDir);
    expect(seen).not.toMatch(/PWD=\/(?!\s)/);
  }, 60_000);
});
