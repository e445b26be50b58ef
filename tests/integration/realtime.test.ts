import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Destinations } from '#shared/realtime.ts';
import { bodyText } from '#shared/stomp-codec.ts';
import type { TestApp } from './helpers/app.ts';
import { startRealtimeApp } from './helpers/realtime-app.ts';
import { connectStomp, openSocket, wsUrl } from './helpers/stomp-client.ts';
import { testAppliesFeature } from './helpers/test-applies.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

describe('the realtime endpoint', () => {
  let t: TestApp;
  let port: number;
  let alice: TestUser;
  let bob: TestUser;
  const applies = testAppliesFeature();

  beforeAll(async () => {
    ({ t, port } = await startRealtimeApp({
      applies,
      env: {
        BIANBU_PUBLIC_URL: 'http://console.example:8080',
        BIANBU_ALLOWED_ORIGINS: 'https://extra.example',
        BIANBU_STOMP_HEARTBEAT_MS: '300',
      },
    }));
    alice = await makeUser(t.app);
    bob = await makeUser(t.app);
    applies.applies.set('apply-a', {
      applyId: 'apply-a',
      deviceId: 'board-1',
      userId: alice.id,
      leaseId: 'l1',
    });
    applies.applies.set('apply-b', {
      applyId: 'apply-b',
      deviceId: 'board-2',
      userId: bob.id,
      leaseId: 'l2',
    });
  });
  afterAll(() => t.close());

  it('answers CONNECTED with heart-beat 0,<ms> for a valid token and apply', async () => {
    const c = await connectStomp(port, { token: alice.token, applyId: 'apply-a' });
    const f = c.frames[0];
    expect(f.command).toBe('CONNECTED');
    expect(f.headers.version).toBe('1.2');
    expect(f.headers['heart-beat']).toBe('0,300');
    c.close();
  });

  it('answers a bad token with an ERROR carrying the session code and closes the socket', async () => {
    const c = await connectStomp(port, { token: 'bbt_not-a-real-token' });
    const err = c.frames.find((f) => f.command === 'ERROR')!;
    expect(err.headers.code).toBe('50008');
    expect(err.headers.error).toBe('auth.token_illegal');
    expect((await c.closed).code).toBe(1008);
  });

  it('answers a missing token with an ERROR and closes', async () => {
    const c = await connectStomp(port, {});
    expect(c.frames[0].command).toBe('ERROR');
    await c.closed;
  });

  it('refuses an applyId that is not the user’s with an ERROR and closes', async () => {
    const c = await connectStomp(port, { token: alice.token, applyId: 'apply-b' });
    expect(c.frames[0]).toMatchObject({
      command: 'ERROR',
      headers: expect.objectContaining({ error: 'apply.invalid' }),
    });
    await c.closed;
  });

  it('refuses a frame before CONNECT, garbage, oversized and unknown frames with ERROR then close', async () => {
    const cases: Array<[string | Buffer, boolean]> = [
      ['SEND\ndestination:/app/shell/x/input\n\nhi\0', false],
      ['HELLO\n\n\0', false],
      [Buffer.from([0xff, 0x00, 0x13, 0x37]), true],
      ['CONNECT\naccept-version:1.2\n', false],
    ];
    for (const [raw, binary] of cases) {
      const c = await openSocket(wsUrl(port));
      c.sendRaw(raw, binary);
      const f = await c.waitFor((x) => x.command === 'ERROR');
      expect(f.headers.error).toBeTruthy();
      await c.closed;
    }
    const big = await openSocket(wsUrl(port));
    big.sendRaw(`SEND\ndestination:/x\n\n${'x'.repeat(300 * 1024)}\0`);
    expect((await big.closed).code).toBe(1009);
  });

  it('refuses the upgrade from a foreign Origin and accepts the console’s and the listed ones', async () => {
    await expect(openSocket(wsUrl(port), { origin: 'https://evil.example' })).rejects.toThrow(/403/);
    for (const origin of [
      'http://console.example:8080',
      'https://extra.example',
      `http://127.0.0.1:${port}`,
    ]) {
      const c = await openSocket(wsUrl(port), { origin });
      c.close();
    }
  });

  it('answers RECEIPT for SUBSCRIBE, SEND-less DISCONNECT, and delivers the user’s own notifications', async () => {
    const c = await connectStomp(port, { token: alice.token, applyId: 'apply-a' });
    c.sendFrame('SUBSCRIBE', { id: 'n', destination: Destinations.userNotifications, receipt: 'r1' });
    await c.waitFor((f) => f.command === 'RECEIPT' && f.headers['receipt-id'] === 'r1');
    t.app.realtime.publishToUser(bob.id, { kind: 'lease.expiring', data: { who: 'bob' } });
    t.app.realtime.publishToUser(alice.id, { kind: 'lease.expiring', data: { minutes: 10 } });
    const m = await c.waitFor((f) => f.command === 'MESSAGE' && f.headers.subscription === 'n');
    expect(JSON.parse(bodyText(m))).toMatchObject({ kind: 'lease.expiring', data: { minutes: 10 } });
    expect(c.frames.filter((f) => f.command === 'MESSAGE')).toHaveLength(1);
    c.sendFrame('DISCONNECT', { receipt: 'bye' });
    await c.waitFor((f) => f.command === 'RECEIPT' && f.headers['receipt-id'] === 'bye');
    await c.closed;
  });

  it('lets a holder subscribe to its board’s state and refuses another user’s board without closing', async () => {
    const c = await connectStomp(port, { token: alice.token, applyId: 'apply-a' });
    c.sendFrame('SUBSCRIBE', {
      id: 'mine',
      destination: Destinations.boardState('board-1'),
      receipt: 'r-mine',
    });
    c.sendFrame('SUBSCRIBE', {
      id: 'theirs',
      destination: Destinations.boardState('board-2'),
      receipt: 'r-theirs',
    });
    await c.waitFor((f) => f.headers['receipt-id'] === 'r-theirs');
    const refused = c.frames.find((f) => f.headers.subscription === 'theirs')!;
    expect(refused.headers.event).toBe('refused');
    t.app.realtime.publishBoardState('board-2', { state: 'resetting' });
    t.app.realtime.publishBoardState('board-1', { state: 'online' });
    const m = await c.waitFor((f) => f.command === 'MESSAGE' && f.headers.subscription === 'mine');
    expect(JSON.parse(bodyText(m))).toMatchObject({ deviceId: 'board-1', state: 'online' });
    expect(c.frames.filter((f) => f.headers.subscription === 'theirs')).toHaveLength(1);
    // The apply ends: its board subscription is cut at once.
    await t.app.shells.closeForApply('apply-a', 'lease.expired');
    const cut = await c.waitFor((f) => f.headers.subscription === 'mine' && f.headers.event === 'closed');
    expect(cut.headers.reason).toBe('lease.expired');
    c.close();
  });

  it('refuses SEND to a shell the connection is not subscribed to with ERROR and close', async () => {
    const c = await connectStomp(port, { token: alice.token });
    c.sendFrame(
      'SEND',
      { destination: Destinations.shellInput('someone-elses'), receipt: 's' },
      'rm -rf /\n',
    );
    const e = await c.waitFor((f) => f.command === 'ERROR');
    expect(e.headers['receipt-id']).toBe('s');
    expect(e.headers.error).toBe('auth.forbidden');
    await c.closed;
  });

  it('cleans up a client that vanishes without DISCONNECT after the heart-beat window', async () => {
    const c = await connectStomp(port, { token: alice.token });
    c.sendFrame('SUBSCRIBE', { id: 'n', destination: Destinations.userNotifications, receipt: 'r' });
    await c.waitFor((f) => f.command === 'RECEIPT');
    expect(t.app.realtime.connections.size).toBeGreaterThanOrEqual(1);
    // Vanish: stop reading and answering pings, like a laptop lid closing.
    c.ws.pause();
    (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    c.ws.pong = () => {};
    const before = Date.now();
    while (t.app.realtime.connections.size > 0 && Date.now() - before < 5000)
      await new Promise((r) => setTimeout(r, 50));
    expect(t.app.realtime.connections.size).toBe(0);
    expect(Date.now() - before).toBeGreaterThanOrEqual(500);
    c.close();
  });
});
