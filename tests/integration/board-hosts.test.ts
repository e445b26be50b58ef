// Board hosts on one machine (issue 37): a service instance that runs no boards itself, and board
// host processes that dial in over loopback with their credentials. Every board call reaches the
// board through its host; a forged host and a revoked one are refused; a host's death shows its
// boards offline and its return brings them back with their files. The cluster across network
// namespaces (two instances, two hosts, a client of its own) is tests/integration/board-hosts-cluster.test.ts.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BoardDriver } from '#server/boards/driver.ts';
import { hostSupport } from '#server/boards/local/host-support.ts';
import { ORG_USER_PERMS } from '#server/identity/seed.ts';
import { ResultCode } from '#shared/codes.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { type HostProc, startHost, waitFor, writeLab } from './helpers/board-host.ts';
import { runInShell } from './helpers/board-shell.ts';
import { listenOnLoopback } from './helpers/realtime-app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const admin = ['device.view_device', 'device.add_device', 'device.change_device', 'device.del_device'];

describe('board hosts on loopback', () => {
  let t: TestApp;
  let a: TestUser;
  let url: string;
  let dir: string;
  let tokenA = '';
  const hosts: HostProc[] = [];

  const post = async (p: string, payload: Record<string, unknown>, who = a) =>
    (await t.app.inject({ method: 'POST', url: p, headers: who.headers, payload })).json() as {
      code: number;
      msg?: string;
      data: Record<string, unknown> & { token?: string };
    };
  const state = async (id: string) =>
    (
      await t.app.storage.query<{ state: string; state_reason: string; host_id: string | null }>(
        'select state, state_reason, host_id from boards where id = $1',
        [id],
      )
    )[0];
  const addHost = async (name: string) => {
    const r = await post('/api/admin/hosts/add', { name });
    expect(r.code).toBe(ResultCode.Success);
    return String(r.data.token);
  };
  const online = (id: string) =>
    waitFor(`${id} online`, async () => {
      const d = t.app.boards.driverIfAny(id);
      const s = await state(id);
      return d && s?.state === 'idle' ? d : null;
    });

  beforeAll(async () => {
    if (!hostSupport().userns) throw new Error('board hosts tests need bubblewrap and root (local boards)');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-hosts-'));
    t = await makeTestApp({ env: { BIANBU_LOCAL_BOARDS: '0', BIANBU_PROBE_INTERVAL_MS: '500' } });
    a = await makeUser(t.app, { perms: admin });
    url = `http://127.0.0.1:${await listenOnLoopback(t)}`;
  }, 60_000);

  afterAll(async () => {
    if (process.env.HOSTS_DEBUG) for (const h of hosts) console.log(h.log().slice(-6000));
    for (const h of hosts) await h.stop();
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('runs no board itself, and a host adds its boards, reached through it with every call', async () => {
    expect(t.app.boards.driverIfAny('any')).toBeUndefined();
    expect((await t.app.storage.query('select id from boards')).length).toBe(0);
    tokenA = await addHost('lab-a');
    writeLab(path.join(dir, 'a.yaml'), ['ha-1', 'ha-2']);
    const h = startHost({
      serviceUrl: url,
      token: tokenA,
      dataDir: path.join(dir, 'a'),
      labFile: path.join(dir, 'a.yaml'),
    });
    hosts.push(h);
    const d: BoardDriver = await online('ha-1');
    await online('ha-2');
    expect((await state('ha-1')).host_id).not.toBeNull();
    expect(d.kind).toBe('local');

    // Files: small calls, and streams both ways.
    await d.files.mkdir('/root/work');
    await d.files.write('/root/work/a.txt', 'through the host\n');
    expect((await d.files.read('/root/work/a.txt')).toString()).toBe('through the host\n');
    const big = Buffer.alloc(3 << 20, 7);
    const w = await d.files.createWriteStream('/root/work/big.bin');
    w.stream.end(big);
    await new Promise((r) => w.stream.once('finish', r));
    await w.commit();
    const r = await d.files.createReadStream('/root/work/big.bin');
    const chunks: Buffer[] = [];
    for await (const c of r) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(big)).toBe(true);
    expect((await d.files.stat('/root/work/big.bin')).size).toBe(big.length);
    // An aborted upload lands nothing.
    const w2 = await d.files.createWriteStream('/root/work/never.bin');
    w2.stream.write(Buffer.alloc(1000));
    await w2.abort();
    await expect(d.files.stat('/root/work/never.bin')).rejects.toMatchObject({ key: 'path.not_found' });
    // Aborts with bytes still in flight answer as aborts, never as a failed stream (a race seen in CI).
    for (let i = 1; i <= 12; i++) {
      const w3 = await d.files.createWriteStream(`/root/work/never-${i}.bin`);
      w3.stream.write(Buffer.alloc(48_000 * i, i));
      if (i % 3 === 0) w3.stream.end();
      await w3.abort();
    }
    expect(
      (await d.files.list('/root/work')).map((e) => e.name).filter((n) => n.startsWith('never')),
    ).toEqual([]);

    // A shell, over a stream, and the board's facts from itself.
    const sh = await d.openShell({ cols: 100, rows: 30 });
    const out = await runInShell(sh, 'echo $((6*7)) $(cat /root/work/a.txt) $(hostname)');
    expect(out).toContain('42 through the host ha-1');
    // As an attacker inside the board: the service's host link is out of reach (the board has no
    // network), and the host's credential is nowhere in what the board can read.
    const port = new URL(url).port;
    const probe = await runInShell(
      sh,
      `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo LINK-REACHED || echo LINK-REFUSED; grep -rl BIANBU_HOST_TOKEN /proc/*/environ 2>/dev/null | wc -l | sed 's/^/TOKEN-SEEN-/'`,
    );
    expect(probe).toContain('LINK-REFUSED');
    expect(probe).not.toContain('LINK-REACHED');
    expect(probe).toContain('TOKEN-SEEN-0');
    sh.close();
    const m = await d.sampleMetrics();
    expect(m.memTotal).toBeGreaterThan(0);

    // The serial console, the board's screen (RFB) and a plugin, each through the host.
    const serial = await d.openSerial({ cols: 80, rows: 24 });
    const serialBytes = await new Promise<number>((resolve) => {
      let n = 0;
      const off = serial.onData((c) => {
        n += c.length;
        if (n > 0) {
          off();
          resolve(n);
        }
      });
      serial.write('\r');
    });
    expect(serialBytes).toBeGreaterThan(0);
    serial.close();
    const vnc = await (d.connectVnc as () => Promise<import('node:stream').Duplex>)();
    const banner = await new Promise<string>((resolve, reject) => {
      let got = Buffer.alloc(0);
      vnc.on('data', (c: Buffer) => {
        got = Buffer.concat([got, c]);
        if (got.length >= 12) resolve(got.subarray(0, 12).toString());
      });
      vnc.once('error', reject);
    });
    expect(banner).toBe('RFB 003.008\n');
    vnc.destroy();
    const info = JSON.parse(await d.callPlugin('board-info', '', 'n1')) as { hostname: string; arch: string };
    expect(info.hostname).toBe('ha-1');
    expect(info.arch).toBe(os.arch() === 'x64' ? 'x86_64' : os.arch());

    // The host keeps the shells the service opens: their ids carry its name, the bus reaches them.
    const { clientId } = await t.app.shells.open({
      applyId: 'apply-1',
      deviceId: 'ha-1',
      userId: a.id,
      shellType: 'login',
    });
    expect(clientId.startsWith('lab-a_')).toBe(true);
    expect(await t.app.shells.describe(clientId)).toMatchObject({
      deviceId: 'ha-1',
      applyId: 'apply-1',
      ended: false,
    });
    await t.app.shells.close('apply-1', clientId);
    await waitFor('shell ended', async () => (await t.app.shells.describe(clientId))?.ended);

    const list = await t.app.inject({ method: 'GET', url: '/api/admin/hosts', headers: a.headers });
    const lab = (list.json().data.items as { name: string; health: string; boards: unknown[] }[]).find(
      (x) => x.name === 'lab-a',
    );
    expect(lab).toMatchObject({ health: 'online' });
    expect(lab?.boards).toHaveLength(2);
  }, 120_000);

  it("refuses a host that claims another host's board, and keeps the board its owner's", async () => {
    const token = await addHost('lab-forger');
    writeLab(path.join(dir, 'f.yaml'), ['ha-1', 'hf-1']);
    const h = startHost({
      serviceUrl: url,
      token,
      dataDir: path.join(dir, 'f'),
      labFile: path.join(dir, 'f.yaml'),
    });
    hosts.push(h);
    await waitFor('refusal', async () => /host\.board_taken/.test(h.log()), 60_000);
    const owner = await t.app.storage.query<{ name: string }>(
      'select h.name from boards b join board_hosts h on h.id = b.host_id where b.id = $1',
      ['ha-1'],
    );
    expect(owner[0].name).toBe('lab-a');
    expect(await state('hf-1')).toBeUndefined();
    await h.stop();
    // A made-up credential never links.
    const bad = startHost({
      serviceUrl: url,
      token: `bbh_aaaaaaaaaaaa_${'x'.repeat(43)}`,
      dataDir: path.join(dir, 'bad'),
      labFile: path.join(dir, 'f.yaml'),
    });
    hosts.push(bad);
    await waitFor('refusal', async () => /host\.refused/.test(bad.log()), 30_000);
    await bad.stop();
  }, 120_000);

  it("shows a killed host's boards offline within seconds, and its return brings them back with their files", async () => {
    const h = hosts[0];
    const begun = Date.now();
    await h.kill9();
    await waitFor('offline', async () => (await state('ha-1')).state === 'offline', 15_000);
    const took = Date.now() - begun;
    expect(took).toBeLessThan(10_000);
    expect((await state('ha-1')).state_reason).toMatch(/board host lab-a disconnected/);
    expect(() => t.app.boards.driver('ha-1')).toThrow(/offline/);

    const again = startHost({
      serviceUrl: url,
      token: tokenA,
      dataDir: path.join(dir, 'a'),
      labFile: path.join(dir, 'a.yaml'),
    });
    hosts[0] = again;
    const d = await online('ha-1');
    expect((await d.files.read('/root/work/a.txt')).toString()).toBe('through the host\n');
  }, 120_000);

  it("ends a flash as interrupted when the board's host dies under it; the board keeps its files", async () => {
    await online('ha-1');
    const u = await makeUser(t.app, { perms: ORG_USER_PERMS });
    const lease = await post(
      '/api/device/request-device',
      {
        requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
        filterReq: { name: 'ha-1' },
        serverName: 'f',
      },
      u,
    );
    expect(lease.code, JSON.stringify(lease)).toBe(ResultCode.Success);
    // An image big enough that its trip to the host takes seconds: a root with one large file.
    const root = path.join(dir, 'img-root');
    fs.mkdirSync(path.join(root, 'root'), { recursive: true });
    execFileSync('head', ['-c', '160M', '/dev/urandom'], {
      stdio: ['ignore', fs.openSync(path.join(root, 'big.bin'), 'w'), 'ignore'],
    });
    const img = path.join(dir, 'big.tar');
    execFileSync('tar', ['-C', root, '-cf', img, '.']);
    await t.app.storage.query(
      `insert into flash_images (tag, name, format, size, sha256, path, source, created_at)
       values ('big', 'big', 'tar', $1, $2, $3, 'lab', now())`,
      [fs.statSync(img).size, crypto.createHash('sha256').update(fs.readFileSync(img)).digest('hex'), img],
    );
    const job = await post(
      '/api/device/post-flash',
      { applyId: null, flashImageTag: 'big', deviceId: 'ha-1' },
      u,
    );
    expect(job.code, JSON.stringify(job)).toBe(ResultCode.Success);
    const jobId = String(job.data.jobId);
    const jobRow = async () =>
      (
        await t.app.storage.query<{ state: string; error_key: string | null }>(
          'select state, error_key from flash_jobs where id = $1',
          [jobId],
        )
      )[0];
    await waitFor('flash running', async () => (await jobRow()).state === 'RUNNING', 30_000);
    await hosts[0].kill9();
    const ended = await waitFor(
      'flash ended',
      async () => {
        const r = await jobRow();
        return r.state === 'RUNNING' || r.state === 'PENDING' ? null : r;
      },
      30_000,
    );
    expect(ended).toMatchObject({ state: 'FAILURE', error_key: 'flash.interrupted' });
    hosts[0] = startHost({
      serviceUrl: url,
      token: tokenA,
      dataDir: path.join(dir, 'a'),
      labFile: path.join(dir, 'a.yaml'),
    });
    const d = await waitFor('ha-1 back', async () => t.app.boards.driverIfAny('ha-1'), 60_000);
    expect((await d.files.read('/root/work/a.txt')).toString()).toBe('through the host\n');
    // The lease is kept through all of it.
    const live = await t.app.storage.query(`select 1 from leases where board_id = 'ha-1' and state = 'live'`);
    expect(live).toHaveLength(1);
  }, 180_000);

  it('ends a revoked host at once: its boards go offline and it cannot link again', async () => {
    await online('ha-1');
    const r = await post('/api/admin/hosts/revoke', { name: 'lab-a' });
    expect(r.code).toBe(ResultCode.Success);
    expect(r.data.health).toBe('revoked');
    await waitFor('offline', async () => (await state('ha-1')).state === 'offline', 5_000);
    expect((await state('ha-1')).state_reason).toMatch(/revoked/);
    expect(t.app.boards.driverIfAny('ha-1')).toBeUndefined();
    await waitFor('refused again', async () => /host\.revoked/.test(hosts[0].log()), 30_000);
  }, 60_000);
});
