// The /code/ proxy's cuts on the real service with a real local board: what ends a code session's
// connections besides the apply and the sign-in (code-proxy.test.ts has those). A power reset and a
// flash cut the open WebSocket with the board's reason and leave the session usable once the board is
// back; removing a member from the share group ends the member's session alone, the owner's goes on.
// The board runs the fixture application (helpers/code-board-app.cjs) as its user on the code port.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { PtyHandle } from '#server/boards/driver.ts';
import type { LocalDriver } from '#server/boards/local/local-driver.ts';
import { VncClose } from '#shared/desktop.ts';
import { listen } from './files.fixtures.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { loopbackGet, loopbackLookup } from './helpers/loopback-names.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { call, endIn, H48 } from './leases.fixtures.ts';

const APP_SOURCE = fs.readFileSync(path.join(import.meta.dirname, 'helpers', 'code-board-app.cjs'), 'utf8');
const PERMS = [
  'device.view_share',
  'device.add_share',
  'device.change_share',
  'device.del_share',
  'device.add_flash',
  'device.view_flash',
];

/** GET on the code listener with a cookie: status and body. */
function get(url: string, cookie: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { cookie }, agent: false, lookup: loopbackLookup }, (res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body += b.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

async function status(url: string, cookie: string): Promise<number> {
  return (await get(url, cookie)).status;
}

/**
 * The first answer other than a 502 within `ms` (the board's app just came up again: under CI's load
 * one request right after a reset was seen answered 502 once), as "status body" for the assertion.
 */
async function firstAnswer(url: string, cookie: string, ms = 10_000): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await get(url, cookie);
    if (r.status !== 502 || Date.now() > deadline)
      return `${r.status} ${r.status === 200 ? '' : r.body}`.trim();
    await new Promise((res) => setTimeout(res, 250));
  }
}

describe('the /code/ proxy cut by a reset, a flash and a member’s removal', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-code-cuts-'));
  let t: TestApp;
  let port: number;
  let owner: TestUser;
  let member: TestUser;
  let deviceId: string;
  let ownerApply: string;
  let memberApply: string;

  const post = (who: TestUser, url: string, body: Record<string, unknown>, apply?: string) =>
    call(t.app, who, 'POST', url, body, apply ? { applyaccess: apply } : {});

  /** A code session as the iframe gets it: ticket, 303 with the cookie, the path with the key. */
  const openSession = async (who: TestUser, applyId: string) => {
    const r = await fetch(`http://127.0.0.1:${port}/api/device/code-ticket`, {
      method: 'POST',
      headers: { ...who.headers, 'content-type': 'application/json', applyaccess: applyId },
      body: JSON.stringify({ applyId }),
    });
    const env = (await r.json()) as { code: number; data: { url: string } };
    expect(env.code).toBe(20000);
    const x = await loopbackGet(env.data.url);
    expect(x.status).toBe(303);
    const cookie = String(x.headers['set-cookie']?.[0]).split(';')[0];
    const origin = new URL(env.data.url).origin;
    return { origin, prefix: String(x.headers.location).replace(/\/$/, ''), cookie };
  };

  /** An open WebSocket to the fixture's echo, and how it ended. */
  const openSocket = async (s: { origin: string; prefix: string; cookie: string }) => {
    const ws = new WebSocket(`${s.origin.replace('http', 'ws')}${s.prefix}/ws`, [], {
      headers: { cookie: s.cookie },
      origin: s.origin,
      lookup: loopbackLookup,
    });
    const ended = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    // The fixture greets every socket first ("hello <origin>").
    const hello = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once('error', reject);
    });
    expect(await hello).toMatch(/^hello /);
    const echoed = new Promise<string>((resolve) => ws.once('message', (d) => resolve(d.toString())));
    ws.send('still here');
    expect(await echoed).toBe('still here');
    return { ws, ended };
  };

  /** Starts the fixture inside the board as its user (uid 1000) on the code port, through a root shell. */
  const startApp = async () => {
    const driver = t.app.boards.driver(deviceId) as LocalDriver;
    const deadline = Date.now() + 60_000;
    while (!driver.running) {
      if (Date.now() > deadline) throw new Error('the board did not come back');
      await new Promise((r) => setTimeout(r, 100));
    }
    await driver.files.write('/tmp/code-app.cjs', APP_SOURCE);
    const sh: PtyHandle = await driver.openShell({ cols: 200, rows: 50 });
    let out = '';
    sh.onData((b) => {
      out += b.toString();
    });
    sh.write(
      'chmod 644 /tmp/code-app.cjs; (setpriv --reuid=1000 --regid=1000 --init-groups node /tmp/code-app.cjs 8080 >/tmp/code-app.log 2>&1 &); ' +
        'for i in $(seq 100); do grep -q listening /tmp/code-app.log 2>/dev/null && break; sleep 0.1; done; echo app-""up; cat /tmp/code-app.log\n',
    );
    while (!out.includes('app-up')) {
      if (Date.now() > deadline) throw new Error(`the fixture did not start: ${out.slice(-400)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    sh.close();
  };

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('local boards need the tests to run as root');
    const lab = {
      boards: [
        {
          id: 'cc-a',
          name: 'cc-a',
          model: 'K1',
          driver: 'local',
          options: { memoryMb: 512, diskQuotaMb: 256, maxProcesses: 256 },
        },
      ],
    };
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(labFile, JSON.stringify(lab));
    t = await makeTestApp({
      env: {
        BIANBU_LAB_FILE: labFile,
        BIANBU_CODE_PORT: '0',
        HOST: '127.0.0.1',
        // The stand-in app on the code port, restarted by the test after a reset: boards start no code-server.
        BIANBU_CODE_SERVER_DIR: '',
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    port = await listen(t.app);
    owner = await makeUser(t.app, { perms: PERMS });
    member = await makeUser(t.app, { perms: PERMS });
    const lease = await post(owner, '/api/device/request-device', {
      requestDate: endIn(new Date(), H48),
      filterReq: {},
      serverName: 'cuts',
    });
    expect(lease.code, JSON.stringify(lease)).toBe(20000);
    deviceId = lease.data.deviceId;
    ownerApply = (await post(owner, '/api/device/apply-device', { deviceId })).data.applyId;
    for (const [url, body] of [
      ['add-share-group', { groupName: 'cuts' }],
      ['add-share-user', { userId: member.id, groupName: 'cuts' }],
      ['set-group-devices', { groupName: 'cuts', devices: [deviceId] }],
    ] as const) {
      const r = await post(owner, `/api/device/share/${url}`, body);
      expect(r.code, `${url}: ${JSON.stringify(r)}`).toBe(20000);
    }
    const m = await post(member, '/api/device/apply-device', { deviceId });
    expect(m.code, JSON.stringify(m)).toBe(20000);
    memberApply = m.data.applyId;
    await startApp();
  }, 180_000);

  afterAll(async () => {
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('a power reset cuts the open WebSocket with board.reset; the session works again once the board is back', async () => {
    const s = await openSession(owner, ownerApply);
    const c = await openSocket(s);
    const r = await post(owner, '/api/device/power-reset', { applyId: ownerApply }, ownerApply);
    expect(r.code, JSON.stringify(r)).toBe(20000);
    expect(await c.ended).toEqual({ code: VncClose.ended, reason: 'board.reset' });
    // The reset killed the board's app with everything else: nothing answers until it runs again.
    await startApp();
    expect(await firstAnswer(`${s.origin}${s.prefix}/`, s.cookie)).toBe('200');
    const again = await openSocket(s);
    again.ws.close();
  }, 120_000);

  it('a flash cuts the open WebSocket with board.flashing; the session works again on the new image', async () => {
    const s = await openSession(owner, ownerApply);
    const c = await openSocket(s);
    const r = await post(owner, '/api/device/post-flash', {
      applyId: null,
      flashImageTag: 'bianbu-minimal',
      deviceId,
    });
    expect(r.code, JSON.stringify(r)).toBe(20000);
    expect(await c.ended).toEqual({ code: VncClose.ended, reason: 'board.flashing' });
    const deadline = Date.now() + 90_000;
    for (;;) {
      const j = await call(t.app, owner, 'GET', '/api/device/fetch-flash-job', { deviceId });
      const state = j.data.job.state as string;
      if (state === 'SUCCESS') break;
      if (state === 'FAILURE' || state === 'CANCELLED' || Date.now() > deadline)
        throw new Error(`flash ended ${JSON.stringify(j.data.job)}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    await startApp();
    expect(await firstAnswer(`${s.origin}${s.prefix}/`, s.cookie)).toBe('200');
  }, 150_000);

  it('removing a member ends the member’s code session and refuses it after; the owner’s goes on', async () => {
    const mine = await openSession(owner, ownerApply);
    const theirs = await openSession(member, memberApply);
    const own = await openSocket(mine);
    const guest = await openSocket(theirs);
    const r = await post(owner, '/api/device/share/rm-share-user', { userId: member.id, groupName: 'cuts' });
    expect(r.code, JSON.stringify(r)).toBe(20000);
    const ended = await guest.ended;
    expect(ended.code).toBe(VncClose.ended);
    expect(ended.reason).toMatch(/^share\./);
    expect(await status(`${theirs.origin}${theirs.prefix}/`, theirs.cookie)).not.toBe(200);
    // The owner's socket is still open and still echoes.
    expect(own.ws.readyState).toBe(WebSocket.OPEN);
    const echoed = new Promise<string>((resolve) => own.ws.once('message', (d) => resolve(d.toString())));
    own.ws.send('owner still here');
    expect(await echoed).toBe('owner still here');
    expect(await status(`${mine.origin}${mine.prefix}/`, mine.cookie)).toBe(200);
    own.ws.close();
  }, 60_000);
});
