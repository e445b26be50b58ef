import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_ANSWER_TIMEOUT_MS } from '#server/shells/bus-protocol.ts';
import { Destinations } from '#shared/realtime.ts';
import { bodyText } from '#shared/stomp-codec.ts';
import type { TestApp } from './helpers/app.ts';
import { startTwoInstances, type TwoInstances } from './helpers/realtime-app.ts';
import { openShell, ShellFollower } from './helpers/shell-client.ts';
import { connectStomp } from './helpers/stomp-client.ts';
import { testAppliesFeature } from './helpers/test-applies.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

// Two service instances on one PostgreSQL database and one Redis, as in a scaled-out deployment.

describe('two instances sharing Redis and PostgreSQL', () => {
  let two: TwoInstances;
  let a: TestApp;
  let b: TestApp;
  let portA: number;
  let alice: TestUser;
  const applies = testAppliesFeature();

  beforeAll(async () => {
    two = await startTwoInstances({ applies });
    ({ t: a, port: portA } = two.a);
    b = two.b.t;
    alice = await makeUser(b.app);
    applies.applies.set('ra', { applyId: 'ra', deviceId: 'board-r', userId: alice.id, leaseId: 'lr' });
  });
  afterAll(() => two?.close());

  it('uses PostgreSQL and the Redis bus on both instances', () => {
    expect(a.app.storage.kind).toBe('postgres');
    expect(a.app.bus.kind).toBe('redis');
    expect(b.app.bus.kind).toBe('redis');
    expect(a.app.bus.instanceId).not.toBe(b.app.bus.instanceId);
  });

  it('lets a browser on instance A drive a shell opened through instance B', async () => {
    const shellId = await openShell(b.app, alice, 'ra');
    expect(b.app.shells.stats(shellId)).toHaveLength(1);
    expect(a.app.shells.stats(shellId)).toHaveLength(0);
    const c = await connectStomp(portA, { token: alice.token, applyId: 'ra' });
    const f = await ShellFollower.subscribe(c, shellId, { offset: 0 });
    c.sendFrame(
      'SEND',
      { destination: Destinations.shellResize(shellId) },
      JSON.stringify({ cols: 90, rows: 20 }),
    );
    f.input('stty -echo; stty size; echo BEGIN""MARK; seq 1 50000; echo END""MARK\n');
    await f.until((s) => s.includes('ENDMARK'), 30_000);
    const text = f.text;
    expect(text).toContain('20 90');
    const numbers = text
      .slice(text.indexOf('BEGINMARK\r\n') + 11, text.indexOf('ENDMARK'))
      .split('\r\n')
      .filter(Boolean)
      .map(Number);
    expect(numbers).toEqual(Array.from({ length: 50_000 }, (_, i) => i + 1));
    // Acknowledgements crossed back to B: its flow control sees what A's client processed.
    f.pump();
    f.ack();
    const deadline = Date.now() + 5000;
    while (b.app.shells.stats(shellId)[0].acked < f.next && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(b.app.shells.stats(shellId)[0].acked).toBe(f.next);

    // Notifications published on B reach the user's tab on A.
    c.sendFrame('SUBSCRIBE', { id: 'n', destination: Destinations.userNotifications, receipt: 'rn' });
    await c.waitFor((x) => x.headers['receipt-id'] === 'rn');
    b.app.realtime.publishToUser(alice.id, { kind: 'lease.expiring', data: { minutes: 5 } });
    const note = await c.waitFor((x) => x.headers.subscription === 'n' && x.command === 'MESSAGE');
    expect(JSON.parse(bodyText(note))).toMatchObject({ kind: 'lease.expiring' });

    // The apply ends, noticed on A: B's shell is cut and A's pane told why.
    await a.app.shells.closeForApply('ra', 'lease.expired');
    const closed = await c.waitFor((x) => x.headers.subscription === f.subId && x.headers.event === 'closed');
    expect(closed.headers.reason).toBe('lease.expired');
    expect(b.app.shells.stats(shellId)[0].ended).toBe('lease.expired');
    c.close();
  });

  it('refuses on A a shell that exists nowhere', async () => {
    const c = await connectStomp(portA, { token: alice.token, applyId: 'ra' });
    const asked = Date.now();
    c.sendFrame('SUBSCRIBE', {
      id: 'ghost',
      destination: Destinations.shellOutput('no-such-shell'),
      receipt: 'g',
    });
    await c.waitFor((x) => x.headers['receipt-id'] === 'g', 15_000);
    expect(c.frames.find((x) => x.headers.subscription === 'ghost')?.headers.event).toBe('refused');
    // No instance subscribes to its input, so the refusal does not wait for an owner's answer.
    expect(Date.now() - asked).toBeLessThan(OWNER_ANSWER_TIMEOUT_MS / 2);
    c.close();
  });

  it('answers on A for a shell of B, and at once for a shell no instance has', async () => {
    const shellId = await openShell(b.app, alice, 'ra');
    expect(a.app.shells.stats(shellId)).toHaveLength(0);
    // B owns it: A asks over Redis and gets B's answer.
    expect(await a.app.shells.job('ra', shellId)).toMatchObject({ state: expect.any(String) });
    // Nobody subscribes to an unknown shell's input: A answers "not found" without waiting for an owner.
    const asked = Date.now();
    await expect(a.app.shells.job('ra', 'no-such-shell')).rejects.toThrow(/not found/i);
    await expect(a.app.shells.close('ra', 'no-such-shell')).rejects.toThrow(/not found/i);
    expect(Date.now() - asked).toBeLessThan(OWNER_ANSWER_TIMEOUT_MS / 2);
    // B's shell, closed through A, ends on B.
    await a.app.shells.close('ra', shellId);
    expect(b.app.shells.stats(shellId)[0].ended).not.toBeNull();
  });
});
