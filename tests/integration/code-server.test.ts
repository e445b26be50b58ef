// The real code-server (scripts/install-code-server.sh) in a local board, through the /code/ proxy of
// the real service: offered before it runs, started by the first request as the board's user inside
// the board's own network namespace, its workbench and a WebSocket through /code/, started again after
// the board's user killed it, and cut when the apply ends. No skipping: a host without the install
// fails here with the reason (`.ci/run` installs it), as the desktop's tests do without Xvnc.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { PtyHandle } from '#server/boards/driver.ts';
import { DEFAULT_CODE_SERVER_DIR, hostCodeServer } from '#server/boards/local/code-server.ts';
import type { LocalDriver } from '#server/boards/local/local-driver.ts';
import { driverLookup } from '#server/shells/shells.routes.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { VncClose } from '#shared/desktop.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { runInBoard } from './helpers/in-board.ts';
import { loopbackGet, loopbackLookup } from './helpers/loopback-names.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const INSTALLED = hostCodeServer(DEFAULT_CODE_SERVER_DIR) !== null;

const request = (url: string, cookie?: string) => loopbackGet(url, cookie ? { cookie } : {});

/** Host processes running the installed code-server: pid, host uid, network namespace. */
/** Whether a process descends from this one (another suite's boards run code-server too). */
function ours(pid: number): boolean {
  for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
    if (p === process.pid) return true;
    const stat = fs.readFileSync(`/proc/${p}/stat`, 'latin1');
    p = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return false;
}

function codeServerProcesses(): { pid: number; uid: number; net: string }[] {
  const found: { pid: number; uid: number; net: string }[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'latin1');
      if (!cmd.includes(`${DEFAULT_CODE_SERVER_DIR}/node_modules/code-server/`)) continue;
      if (!ours(Number(name))) continue;
      const uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${name}/status`, 'latin1'))?.[1]);
      found.push({ pid: Number(name), uid, net: fs.readlinkSync(`/proc/${name}/ns/net`) });
    } catch {}
  }
  return found;
}

// An install that is missing where it is required fails here with the reason.
describe('code-server inside a local board, through the /code/ proxy', () => {
  let t: TestApp;
  let port: number;
  let u: TestUser;
  let applyId: string;
  let deviceId: string;
  let driver: LocalDriver;
  let shell: PtyHandle;

  const api = async (url: string, body: object, apply?: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${url}`, {
      method: 'POST',
      headers: {
        ...u.headers,
        'content-type': 'application/json',
        origin: `http://127.0.0.1:${port}`,
        ...(apply ? { applyaccess: apply } : {}),
      },
      body: JSON.stringify(body),
    });
    return (await r.json()) as { code: number; data: Record<string, string>; message: string };
  };

  /** A code session as the iframe gets one: the ticket exchanged for the path and the cookie. */
  const openSession = async (apply: string) => {
    const r = await api('/api/device/code-ticket', { applyId: apply }, apply);
    expect(r.code).toBe(20000);
    const x = await request(r.data.url);
    expect(x.status).toBe(303);
    return {
      origin: new URL(r.data.url).origin,
      prefix: String(x.headers.location).replace(/\/$/, ''),
      cookie: String(x.headers['set-cookie']?.[0]).split(';')[0],
    };
  };

  /** Runs a command in the board as its root; answers its output. */
  const inBoard = (cmd: string, timeoutMs?: number) => runInBoard(shell, cmd, timeoutMs);

  /** Whether something answers on the board's own 127.0.0.1:8080, asked from inside the board. */
  const boardPortOpen = async () =>
    (
      await inBoard(
        `node -e "require('net').connect(8080,'127.0.0.1').on('connect',function(){console.log('port-'+'open');this.destroy()}).on('error',()=>console.log('port-'+'closed'))"`,
      )
    ).includes('port-open');

  const wsOpen = (s: { origin: string; prefix: string; cookie: string }) => {
    // What the workbench opens: VS Code's remote connection, on the code origin.
    const q = `reconnectionToken=${crypto.randomUUID()}&reconnection=false&skipWebSocketFrames=false`;
    const ws = new WebSocket(`${s.origin.replace('http', 'ws')}${s.prefix}/?${q}`, {
      headers: { cookie: s.cookie },
      origin: s.origin,
      lookup: loopbackLookup,
    });
    const opened = new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_q, res) =>
        reject(new Error(`HTTP ${res.statusCode} ${res.headers['x-code-reason'] ?? ''}`)),
      );
      ws.once('error', reject);
    });
    opened.catch(() => {});
    const ended = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    return { ws, opened, ended };
  };

  beforeAll(async () => {
    if (!INSTALLED)
      throw new Error(`no code-server in ${DEFAULT_CODE_SERVER_DIR}: run scripts/install-code-server.sh`);
    if (process.getuid?.() !== 0) throw new Error('local boards need the tests to run as root');
    t = await makeTestApp({ env: { BIANBU_CODE_PORT: '0', HOST: '127.0.0.1' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    u = await makeUser(t.app);
    const l = await api('/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: {},
      serverName: 'code-server',
    });
    expect(l.code).toBe(20000);
    deviceId = l.data.deviceId;
    const a = await api('/api/device/apply-device', { deviceId });
    expect(a.code).toBe(20000);
    applyId = a.data.applyId;
    driver = (await driverLookup(t.app)(deviceId)) as LocalDriver;
    shell = await driver.openShell({ cols: 200, rows: 50 });
  }, 120_000);

  afterAll(async () => {
    shell?.close();
    await t?.close();
  });

  it('offers the code window before anything runs on the board’s code port, and starts nothing by asking', async () => {
    const r = await api('/api/device/desktop-status', { applyId }, applyId);
    expect(r.data.code).toEqual({ available: true });
    expect(await boardPortOpen()).toBe(false);
  }, 30_000);

  it('starts code-server on the first request and shows its workbench through /code/, and a WebSocket opens', async () => {
    const s = await openSession(applyId);
    const begun = Date.now();
    // It opens the user's home: / sends the browser to that folder.
    const root = await request(`${s.origin}${s.prefix}/`, s.cookie);
    expect(root.status, root.body.slice(0, 300)).toBe(302);
    expect(root.headers.location).toBe(`${s.prefix}/?folder=/home/user`);
    const page = await request(`${s.origin}${s.prefix}/?folder=/home/user`, s.cookie);
    console.log(`code-server started and answered its workbench in ${Date.now() - begun} ms`);
    expect(page.status, page.body.slice(0, 300)).toBe(200);
    expect(page.body).toContain('vscode-workbench-web-configuration');
    expect(page.body).toContain('workbench.js');
    // Its static files come through the same path.
    const manifest = await request(`${s.origin}${s.prefix}/manifest.json`, s.cookie);
    expect(manifest.status).toBe(200);
    expect(JSON.parse(manifest.body).name).toBe('code-server');
    const c = wsOpen(s);
    await c.opened;
    c.ws.close();
  }, 90_000);

  it('runs as the board’s user inside the board’s network namespace, never on the host’s', async () => {
    // Inside the board: every code-server process belongs to uid 1000 (`user`).
    const ps = await inBoard('ps -eo uid=,args= | grep "[c]ode-server/out/node/entry"');
    const uids = [...ps.matchAll(/^\s*(\d+)\s+\S*node\s/gm)].map((m) => Number(m[1]));
    expect(uids.length, ps).toBeGreaterThan(0);
    expect(new Set(uids)).toEqual(new Set([1000]));
    // Seen from the host: the board's user's host uid (never root, never the service's), and the
    // board's network namespace, not the host's.
    const procs = codeServerProcesses();
    expect(procs.length).toBeGreaterThan(0);
    const hostNet = fs.readlinkSync('/proc/self/ns/net');
    const base = driver.hostUid!;
    for (const p of procs) {
      expect(p.uid).toBe(base + 1000);
      expect(p.net).not.toBe(hostNet);
    }
    // Its home in the board holds its data; the board's files are what it opened.
    const data = await inBoard(
      'stat -c %u /home/user/.local/share/code-server; cat /home/user/.local/share/code-server/bianbu.log | head -20',
    );
    expect(data).toMatch(/^1000$/m);
    expect(data).toContain('HTTP server listening on http://127.0.0.1:8080/');
    expect(data).toContain('Authentication is disabled');
  }, 30_000);

  it('starts it again on the next request after the board’s user killed it', async () => {
    const before = codeServerProcesses().map((p) => p.pid);
    const killed = await inBoard(
      'pkill -9 -f "[c]ode-server/out/node/entry"; sleep 0.5; ps -eo pid,uid,stat,args | grep -v "ps -eo"',
    );
    expect(await boardPortOpen(), killed).toBe(false);
    const s = await openSession(applyId);
    const page = await request(`${s.origin}${s.prefix}/?folder=/home/user`, s.cookie);
    expect(page.status).toBe(200);
    expect(page.body).toContain('vscode-workbench-web-configuration');
    const after = codeServerProcesses().map((p) => p.pid);
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((p) => before.includes(p))).toEqual([]);
  }, 90_000);

  it('cuts its WebSocket and refuses its pages when the apply ends', async () => {
    const s = await openSession(applyId);
    const c = wsOpen(s);
    await c.opened;
    const un = await api('/api/device/unapply-device', { applyId }, applyId);
    expect(un.code).toBe(20000);
    expect(await c.ended).toEqual({ code: VncClose.ended, reason: 'apply.ended' });
    expect((await request(`${s.origin}${s.prefix}/`, s.cookie)).status).toBe(401);
  }, 30_000);
});
