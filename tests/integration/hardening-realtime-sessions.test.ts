// An open realtime connection never outlives the sign-in it was opened with: logout, revocation of
// an API key, displacement by a newer sign-in, expiry and deactivation each end the affected
// connections at once (an ERROR frame with the session code the console words, then the socket
// closes), end the shells opened with that sign-in, and deactivation also ends the user's leases.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCredential } from '#server/auth/tokens.ts';
import { ManualClock } from '#server/clock.ts';
import { identityFeature } from '#server/identity/identity.routes.ts';
import { leasesFeature } from '#server/leases/leases.routes.ts';
import { realtimeFeature } from '#server/realtime/realtime.feature.ts';
import { systemFeature } from '#server/system/system.routes.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { Destinations } from '#shared/realtime.ts';
import { parseMessage } from '#shared/stomp-codec.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { listenOnLoopback, startRealtimeApp } from './helpers/realtime-app.ts';
import { openShell, ShellFollower } from './helpers/shell-client.ts';
import { loginEncryptor } from './helpers/sign-in.ts';
import { connectStomp, type TestStompClient } from './helpers/stomp-client.ts';
import { testAppliesFeature } from './helpers/test-applies.ts';
import { testBoardsFeature } from './helpers/test-pty-driver.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { call, endIn, H48, makeBoard } from './leases.fixtures.ts';

const ADMIN_PASSWORD = 'Adm1n-secret!';
/** How soon after the ending call returns the ERROR must be on the wire and the socket closed. */
const BOUND_MS = 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Held {
  c: TestStompClient;
  f: ShellFollower;
  shellId: string;
  applyId: string;
  leaseId: string;
  /** Frames the client managed to send after the ERROR arrived, while its socket was still open. */
  afterError: Promise<void>;
}

const marker = () => path.join(os.tmpdir(), `bianbu-after-end-${crypto.randomBytes(6).toString('hex')}`);

/**
 * Once an ERROR arrives, the client at once types into the shell (a command that would leave a file
 * behind) and asks for a new subscription, as an attacker holding the socket would.
 */
function tryAfterError(c: TestStompClient, shellId: string, file: string): Promise<void> {
  return new Promise((resolve) => {
    c.ws.on('message', (data: Buffer) => {
      const frames = parseMessage(data, {
        maxFrameBytes: 1 << 30,
        maxHeaders: 64,
        maxHeaderLineBytes: 1 << 16,
        maxFramesPerMessage: 1000,
      });
      if (!frames.some((f) => f.command === 'ERROR')) return;
      if (c.ws.readyState === c.ws.OPEN) {
        c.sendFrame('SEND', { destination: Destinations.shellInput(shellId) }, `touch ${file}\n`);
        c.sendFrame('SUBSCRIBE', {
          id: 'after-end',
          destination: Destinations.userNotifications,
          receipt: 'after-end',
        });
      }
      resolve();
    });
  });
}

/** Waits (bounded) for a shell to end. */
async function waitForShellEnd(app: FastifyInstance, shellId: string, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!app.shells.stats(shellId)[0]?.ended && Date.now() < deadline) await sleep(20);
}

async function expectEnded(
  app: FastifyInstance,
  port: number,
  h: Held,
  token: string,
  code: number,
  key: string,
  endedAt: number,
  file: string,
): Promise<void> {
  const err = await h.c.waitFor((f) => f.command === 'ERROR', BOUND_MS + 2000);
  expect(Date.now() - endedAt).toBeLessThan(BOUND_MS);
  expect(err.headers).toMatchObject({ code: String(code), error: key });
  const closed = await Promise.race([h.c.closed, sleep(BOUND_MS).then(() => null)]);
  expect(closed, 'socket closed').not.toBeNull();
  await h.afterError;
  // The shell ended with the session, and what was typed after the ERROR never ran.
  await waitForShellEnd(app, h.shellId, BOUND_MS);
  expect(app.shells.stats(h.shellId)[0].ended).toBe('session.ended');
  await sleep(300);
  expect(fs.existsSync(file)).toBe(false);
  expect(h.c.frames.some((f) => f.headers['receipt-id'] === 'after-end')).toBe(false);
  // No new connection, hence no new SUBSCRIBE, with that token.
  const again = await connectStomp(port, { token, applyId: h.applyId });
  expect(again.frames[0]).toMatchObject({
    command: 'ERROR',
    headers: expect.objectContaining({ code: String(code) }),
  });
  await again.closed;
}

describe('realtime connections end with their sign-in', () => {
  const clock = new ManualClock(Date.now());
  let t: TestApp;
  let port: number;
  let encrypt: (s: string) => string;

  beforeAll(async () => {
    t = await makeTestApp({
      clock,
      env: {
        BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD,
        BIANBU_SINGLE_SESSION: '1',
        BIANBU_STOMP_HEARTBEAT_MS: '1000',
        BIANBU_LEASE_TICK_MS: '0',
      },
      features: [systemFeature, testBoardsFeature(), leasesFeature, realtimeFeature, identityFeature],
    });
    port = await listenOnLoopback(t);
    encrypt = await loginEncryptor(t.app);
  });
  afterAll(() => t?.close());

  async function signIn(username: string, password: string): Promise<string> {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      headers: { 'x-forwarded-for': `198.51.100.${crypto.randomInt(1, 250)}` },
      payload: { username: encrypt(username), password: encrypt(password) },
    });
    expect(res.json().code, res.body).toBe(20000);
    return res.json().data.accessToken;
  }

  /** A lease, an apply, a shell opened with `shellToken` and a connection subscribed to it with `wsToken`. */
  async function hold(
    user: TestUser,
    file: string,
    wsToken = user.token,
    shellToken = user.token,
  ): Promise<Held> {
    const board = await makeBoard(t.app, { driver: 'local' });
    const lease = await call(t.app, user, 'POST', '/api/device/request-device', {
      requestDate: endIn(clock.now(), H48),
      filterReq: {},
      serverName: `s-${board.id}`,
    });
    expect(lease.code, lease.message).toBe(20000);
    // A board an earlier test released may be handed out instead: any free one will do.
    const applied = await call(t.app, user, 'POST', '/api/device/apply-device', {
      deviceId: lease.data.deviceId,
    });
    const applyId = applied.data.applyId as string;
    const shellId = await openShell(t.app, { ...user, headers: { authorization: shellToken } }, applyId);
    const c = await connectStomp(port, { token: wsToken, applyId });
    expect(c.frames[0].command).toBe('CONNECTED');
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    f.input('echo RE""ADY\n');
    await f.until((s) => s.includes('READY'));
    return {
      c,
      f,
      shellId,
      applyId,
      leaseId: lease.data.leaseId,
      afterError: tryAfterError(c, shellId, file),
    };
  }

  /** A connection that must stay up: it still answers a SUBSCRIBE with a RECEIPT. */
  async function expectAlive(h: Held): Promise<void> {
    const id = `alive-${crypto.randomBytes(3).toString('hex')}`;
    h.c.sendFrame('SUBSCRIBE', { id, destination: Destinations.userNotifications, receipt: id });
    await h.c.waitFor((f) => f.headers['receipt-id'] === id, 3000);
    expect(h.c.frames.some((f) => f.command === 'ERROR')).toBe(false);
    expect(t.app.shells.stats(h.shellId)[0].ended).toBeNull();
  }

  it('logout ends the connections and shells of that token, and no other', async () => {
    const alice = await makeUser(t.app);
    const other = await issueCredential(t.storage.db, alice.id, 'access', {
      ttlMs: HOUR_MS,
      now: clock.now(),
    });
    const file = marker();
    const h = await hold(alice, file);
    const kept = await hold({ ...alice, token: other, headers: { authorization: other } }, marker());
    const res = await t.app.inject({ method: 'POST', url: '/api/user/logout', headers: alice.headers });
    expect(res.json().code).toBe(20000);
    await expectEnded(t.app, port, h, alice.token, 50008, 'auth.token_illegal', Date.now(), file);
    await expectAlive(kept);
    kept.c.close();
  });

  it('refreshing the API key ends the connections and shells of the old key', async () => {
    const bob = await makeUser(t.app);
    const got = await call(t.app, bob, 'GET', '/api/apikey/get-key');
    const apiKey = got.data.apiKey as string;
    expect(apiKey).toMatch(/^bbk_/);
    const file = marker();
    const h = await hold(bob, file, apiKey, apiKey);
    const kept = await hold(bob, marker());
    const res = await call(t.app, bob, 'GET', '/api/apikey/refresh-key');
    expect(res.code).toBe(20000);
    await expectEnded(t.app, port, h, apiKey, 50008, 'auth.token_illegal', Date.now(), file);
    await expectAlive(kept);
    kept.c.close();
  });

  it('a newer sign-in displaces the older token’s connections with 50012', async () => {
    const first = await signIn('admin', ADMIN_PASSWORD);
    const admin = (
      await t.app.inject({ method: 'GET', url: '/api/user/info', headers: { authorization: first } })
    ).json().data;
    const user: TestUser = {
      id: admin.id,
      username: 'admin',
      token: first,
      headers: { authorization: first },
    };
    const file = marker();
    const h = await hold(user, file);
    await signIn('admin', ADMIN_PASSWORD);
    await expectEnded(t.app, port, h, first, 50012, 'auth.token_displaced', Date.now(), file);
  });

  it('deactivation ends every connection and shell of the user and their leases', async () => {
    const root = await makeUser(t.app, { perms: ['*'] });
    const carol = await makeUser(t.app);
    const second = await issueCredential(t.storage.db, carol.id, 'access', {
      ttlMs: HOUR_MS,
      now: clock.now(),
    });
    const file1 = marker();
    const file2 = marker();
    const h1 = await hold(carol, file1);
    const h2 = await hold({ ...carol, token: second, headers: { authorization: second } }, file2);
    const bystander = await hold(await makeUser(t.app), marker());
    const res = await call(t.app, root, 'POST', '/api/admin/users/deactivate', { id: carol.id });
    expect(res.code, res.message).toBe(20000);
    const at = Date.now();
    await expectEnded(t.app, port, h1, carol.token, 50008, 'auth.token_illegal', at, file1);
    await expectEnded(t.app, port, h2, second, 50008, 'auth.token_illegal', at, file2);
    // Both leases ended through the lease lifecycle: applies closed, boards on their way back.
    for (const h of [h1, h2]) {
      const [lease] = await t.storage.query<{ state: string }>('select state from leases where id = $1', [
        h.leaseId,
      ]);
      expect(lease.state).not.toBe('live');
      const [apply] = await t.storage.query<{ state: string }>('select state from applies where id = $1', [
        h.applyId,
      ]);
      expect(apply.state).not.toBe('open');
    }
    await expectAlive(bystander);
    bystander.c.close();
  });

  it('expiry ends the shells opened with the token while no connection is open', async () => {
    const frank = await makeUser(t.app);
    const token = await issueCredential(t.storage.db, frank.id, 'access', {
      ttlMs: HOUR_MS,
      now: clock.now(),
    });
    const user = { ...frank, token, headers: { authorization: token } };
    // One shell opened with the expiring token, one with another of the user's tokens.
    const h = await hold(user, marker());
    const kept = await hold(frank, marker());
    h.c.close();
    await h.c.closed;
    await sleep(1200); // a sweep or two with the shell known and its token live
    expect(t.app.shells.stats(h.shellId)[0].ended).toBeNull();
    const before = clock.now();
    clock.advance(HOUR_MS + 1000);
    try {
      await waitForShellEnd(t.app, h.shellId, BOUND_MS);
      expect(t.app.shells.stats(h.shellId)[0].ended).toBe('session.ended');
    } finally {
      clock.set(before);
    }
    await expectAlive(kept);
    kept.c.close();
  });

  it('expiry ends the connection when the service clock passes the token’s end', async () => {
    const dave = await makeUser(t.app);
    const token = await issueCredential(t.storage.db, dave.id, 'access', {
      ttlMs: HOUR_MS,
      now: clock.now(),
    });
    const user = { ...dave, token, headers: { authorization: token } };
    const file = marker();
    const h = await hold(user, file);
    const before = clock.now();
    clock.advance(HOUR_MS + 1000);
    try {
      await expectEnded(t.app, port, h, token, 50014, 'auth.token_expired', Date.now(), file);
    } finally {
      clock.set(before);
    }
  });
});

describe('realtime connections end when their token expires (wall clock)', () => {
  let t: TestApp;
  let port: number;
  const applies = testAppliesFeature();

  beforeAll(async () => {
    ({ t, port } = await startRealtimeApp({ applies }));
  });
  afterAll(() => t?.close());

  it('closes the connection at the token’s expiry, not at the next heart-beat sweep', async () => {
    const erin = await makeUser(t.app);
    const ttl = 1500;
    const token = await issueCredential(t.storage.db, erin.id, 'access', { ttlMs: ttl });
    const expiresAt = Date.now() + ttl;
    applies.applies.set('ex', { applyId: 'ex', deviceId: 'board-ex', userId: erin.id, leaseId: 'l-ex' });
    const user = { ...erin, token, headers: { authorization: token } };
    const shellId = await openShell(t.app, user, 'ex');
    const c = await connectStomp(port, { token, applyId: 'ex' });
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    const file = marker();
    const h: Held = {
      c,
      f,
      shellId,
      applyId: 'ex',
      leaseId: 'l-ex',
      afterError: tryAfterError(c, shellId, file),
    };
    await expectEnded(t.app, port, h, token, 50014, 'auth.token_expired', expiresAt, file);
  });

  it('closes a shell at its token’s expiry with no connection open', async () => {
    const gail = await makeUser(t.app);
    const ttl = 2000;
    const token = await issueCredential(t.storage.db, gail.id, 'access', { ttlMs: ttl });
    const expiresAt = Date.now() + ttl;
    applies.applies.set('ex2', { applyId: 'ex2', deviceId: 'board-ex2', userId: gail.id, leaseId: 'l-ex2' });
    const shellId = await openShell(t.app, { ...gail, token, headers: { authorization: token } }, 'ex2');
    // Another shell of the user, opened with a token that stays valid, stays open.
    applies.applies.set('ex3', { applyId: 'ex3', deviceId: 'board-ex3', userId: gail.id, leaseId: 'l-ex3' });
    const other = await openShell(t.app, gail, 'ex3');
    await waitForShellEnd(t.app, shellId, ttl + BOUND_MS);
    expect(t.app.shells.stats(shellId)[0].ended).toBe('session.ended');
    expect(Date.now() - expiresAt).toBeLessThan(BOUND_MS);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt - 50);
    expect(t.app.shells.stats(other)[0].ended).toBeNull();
  });
});
