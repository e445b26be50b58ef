// An ssh board's desktop and code window through the whole service: the board is a real OpenSSH
// server on loopback (this host), its "VNC server" a small RFB greeter and its code-server the fixture
// web app (helpers/code-board-app.cjs), both on the board's own loopback at the ports the lab file
// declares. The service reaches them only by SSH port forwarding; the app is started by the lab's
// codeServer command on the code window's first request.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import YAML from 'yaml';
import { HOUR_MS } from '#shared/constants.ts';
import { listen } from './files.fixtures.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { loopbackGet, loopbackLookup } from './helpers/loopback-names.ts';
import { startSshd, type TestSshd } from './helpers/sshd.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const APP = path.join(import.meta.dirname, 'helpers', 'code-board-app.cjs');

async function freePort(): Promise<number> {
  const s = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('an ssh board’s desktop and code window through the service', () => {
  let sshd: TestSshd;
  let t: TestApp;
  let port: number;
  let u: TestUser;
  let applyId: string;
  let rfb: net.Server;
  let codePort: number;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-ssh-desktop-'));
  const starts = path.join(work, 'code-starts');

  const call = async (url: string, body: object, apply?: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${url}`, {
      method: 'POST',
      headers: { ...u.headers, 'content-type': 'application/json', ...(apply ? { applyaccess: apply } : {}) },
      body: JSON.stringify(body),
    });
    return (await r.json()) as { code: number; data: Record<string, unknown>; message: string };
  };

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('the ssh board tests need root (sshd)');
    sshd = await startSshd();
    // The board's VNC server: greets like RFB 3.8, then echoes what it is sent.
    rfb = net.createServer((c) => {
      c.write('RFB 003.008\n');
      c.pipe(c);
    });
    rfb.listen(0, '127.0.0.1');
    await new Promise((r) => rfb.once('listening', r));
    codePort = await freePort();
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(
      labFile,
      YAML.stringify({
        boards: [
          {
            id: 'ssh-desk',
            name: 'ssh-desk',
            model: 'K1',
            driver: 'ssh',
            options: {
              host: '127.0.0.1',
              port: sshd.port,
              user: 'root',
              privateKey: sshd.clientKey,
              hostKeyFingerprint: sshd.hostKeyFingerprint,
              rootDir: work,
              timeoutMs: 10_000,
              vncPort: (rfb.address() as net.AddressInfo).port,
              codeServerPort: codePort,
              commands: {
                codeServer: [
                  'sh',
                  '-c',
                  `echo started >> ${starts}; (${process.execPath} ${APP} ${codePort} >${work}/app.log 2>&1 &)`,
                ],
              },
            },
          },
        ],
      }),
    );
    t = await makeTestApp({
      env: {
        BIANBU_LAB_FILE: labFile,
        BIANBU_CODE_PORT: '0',
        HOST: '127.0.0.1',
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    port = await listen(t.app);
    u = await makeUser(t.app);
    const lease = await call('/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: {},
      serverName: 'ssh-desktop',
    });
    expect(lease.code, JSON.stringify(lease)).toBe(20000);
    const a = await call('/api/device/apply-device', { deviceId: lease.data.deviceId });
    expect(a.code, JSON.stringify(a)).toBe(20000);
    applyId = String(a.data.applyId);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    rfb?.close();
    await sshd?.stop();
    // The app the board's command started runs on this host: end it.
    const pids = fs.existsSync(`${work}/app.log`)
      ? (await import('node:child_process'))
          .spawnSync('pgrep', ['-f', `${APP} ${codePort}`])
          .stdout.toString()
      : '';
    for (const pid of pids.split(/\s+/).filter(Boolean)) process.kill(Number(pid), 'SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('offers both, before anything runs on the code port, and starts nothing by asking', async () => {
    const r = await call('/api/device/desktop-status', { applyId }, applyId);
    expect(r.code).toBe(20000);
    expect(r.data).toEqual({ vnc: { available: true }, code: { available: true } });
    expect(fs.existsSync(starts)).toBe(false);
  });

  it('bridges /vnc/ to the VNC port the lab declares, through the SSH connection', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/vnc/${applyId}`, ['binary', `bianbu.token.${u.token}`]);
    const got: Buffer[] = [];
    ws.on('message', (d: Buffer) => got.push(d));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const until = async (text: string) => {
      const deadline = Date.now() + 10_000;
      while (!Buffer.concat(got).toString().includes(text)) {
        if (Date.now() > deadline) throw new Error(`no ${text}: ${Buffer.concat(got).toString()}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await until('RFB 003.008\n');
    ws.send(Buffer.from('RFB 003.008\n'));
    await until('RFB 003.008\nRFB 003.008\n');
    ws.close();
  });

  it('starts code-server with the lab’s command on the first request, once, and shows it through /code/', async () => {
    const ticket = await call('/api/device/code-ticket', { applyId }, applyId);
    expect(ticket.code, JSON.stringify(ticket)).toBe(20000);
    const x = await loopbackGet(String(ticket.data.url));
    expect(x.status).toBe(303);
    const cookie = String(x.headers['set-cookie']?.[0]).split(';')[0];
    const prefix = String(x.headers.location).replace(/\/$/, '');
    const origin = new URL(String(ticket.data.url)).origin;
    const pages = await Promise.all([1, 2, 3].map(() => loopbackGet(`${origin}${prefix}/`, { cookie })));
    for (const p of pages) {
      expect(p.status).toBe(200);
      expect(p.body).toContain('id="code-fixture"');
    }
    expect(fs.readFileSync(starts, 'utf8')).toBe('started\n');
    // Its WebSocket too, through a fresh forwarded channel.
    const ws = new WebSocket(`${origin.replace('http', 'ws')}${prefix}/ws`, [], {
      headers: { cookie },
      origin,
      lookup: loopbackLookup,
    });
    const messages: string[] = [];
    ws.on('message', (d) => messages.push(d.toString()));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send('over ssh');
    const deadline = Date.now() + 10_000;
    while (!messages.includes('over ssh')) {
      if (Date.now() > deadline) throw new Error(`no echo: ${JSON.stringify(messages)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    ws.close();
  }, 60_000);
});
