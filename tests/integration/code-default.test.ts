// The code window out of the box: the real service started as `npm start` starts it, with none of the
// code window's variables (no BIANBU_CODE_PORT, BIANBU_CODE_HOST, BIANBU_CODE_ORIGIN,
// BIANBU_CODE_SERVER_DIR), serves a local board's VS Code on an origin of its own — the console's port
// + 1 on `{label}.code.localhost` — and its workbench page answers through the ticket, the cookie and
// the proxy. Before, the proxy was off unless BIANBU_CODE_PORT was set, and the window said so.
// Needs the host's code-server install (scripts/install-code-server.sh; .ci/run installs it) and root.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CODE_SERVER_DIR, hostCodeServer } from '#server/boards/local/code-server.ts';
import { SERVICE_NODE_FLAGS } from '#server/system/gc-policy.ts';
import { passwordLogin, requestBoard } from '../e2e/helpers/api.ts';
import { loopbackGet } from './helpers/loopback-names.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PASSWORD = 'Code-default-Passw0rd!';

const free = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A free port whose next one is free too (the code proxy's default). */
async function freePair(): Promise<number> {
  for (;;) {
    const p = await new Promise<number>((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    if (p < 65535 && (await free(p + 1))) return p;
  }
}

describe('the code window with no code variables set', () => {
  let child: ChildProcess;
  let out = '';
  let port: number;
  let base: string;
  let dataDir: string;
  let token: string;
  let applyId: string;

  const api = async (url: string, body: object) => {
    const r = await fetch(`${base}${url}`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/json', applyaccess: applyId ?? '' },
      body: JSON.stringify(body),
    });
    return (await r.json()) as { code: number; data: Record<string, unknown>; message: string };
  };

  beforeAll(async () => {
    if (!hostCodeServer(DEFAULT_CODE_SERVER_DIR))
      throw new Error(`no code-server in ${DEFAULT_CODE_SERVER_DIR}: run scripts/install-code-server.sh`);
    if (process.getuid?.() !== 0) throw new Error('local boards need the tests to run as root');
    port = await freePair();
    base = `http://127.0.0.1:${port}`;
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-code-default-'));
    const env: Record<string, string | undefined> = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('BIANBU_CODE_')) delete env[k];
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    Object.assign(env, {
      PORT: String(port),
      BIANBU_DATA_DIR: dataDir,
      BIANBU_ADMIN_PASSWORD: PASSWORD,
      BIANBU_RISCV_BOARDS: '0',
      BIANBU_WEB_DIR: path.join(dataDir, 'no-web'),
      LOG_LEVEL: 'info',
    });
    child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, '--import', 'tsx', 'src/server/main.ts'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.stderr?.on('data', (b: Buffer) => {
      out += b.toString();
    });
    const deadline = Date.now() + 150_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the service exited:\n${out}`);
      const ok = await fetch(`${base}/api/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`no /api/health in 150 s:\n${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    token = await passwordLogin(base, 'admin', PASSWORD);
    const lease = await requestBoard<{ deviceId: string }>(base, token, 'code-default');
    const a = await api('/api/device/apply-device', { deviceId: lease.deviceId });
    expect(a.code, a.message).toBe(20000);
    applyId = String(a.data.applyId);
  }, 180_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    }
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it('offers VS Code, on the next port and a code host name of its own, and its workbench answers', async () => {
    const status = await api('/api/device/desktop-status', { applyId });
    expect(status.code, status.message).toBe(20000);
    expect(status.data.code).toEqual({ available: true });
    const t = await api('/api/device/code-ticket', { applyId });
    expect(t.code, t.message).toBe(20000);
    const url = new URL(String(t.data.url));
    expect(url.port).toBe(String(port + 1));
    expect(url.hostname).toMatch(/^a[0-9a-f]{24}\.code\.localhost$/);
    const x = await loopbackGet(url.toString());
    expect(x.status).toBe(303);
    const prefix = String(x.headers.location).replace(/\/$/, '');
    const cookie = String(x.headers['set-cookie']?.[0]).split(';')[0];
    const root = await loopbackGet(`${url.origin}${prefix}/`, { cookie });
    expect(root.status, root.body.slice(0, 300)).toBe(302);
    const page = await loopbackGet(`${url.origin}${prefix}/?folder=/home/user`, { cookie });
    expect(page.status, page.body.slice(0, 300)).toBe(200);
    expect(page.body).toContain('vscode-workbench-web-configuration');
    // The console's own port refuses the code host name (its cookies never live there).
    const wrong = await loopbackGet(`http://${url.hostname}:${port}/api/health`);
    expect(wrong.status).toBe(421);
  }, 120_000);
});
