// Teams on the real service with real local boards: share groups, the (owner, member, removed member,
// stranger) × (share calls, apply, shell, files, subscription) matrix, bad input, immediate revocation
// with live STOMP sockets and an upload in flight, joined shells (read-only guests, granted input,
// presence, removing a guest), grants, and the owner's lease ending.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import { Destinations } from '#shared/realtime.ts';
import { listen, multipartHead } from './files.fixtures.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { openShell, ShellFollower } from './helpers/shell-client.ts';
import { connectStomp, type TestStompClient } from './helpers/stomp-client.ts';
import { makeUser as makeIdentityUser, type TestUser } from './helpers/users.ts';
import { call, endIn, H48 } from './leases.fixtures.ts';

const SHARE_PERMS = ['device.view_share', 'device.add_share', 'device.change_share', 'device.del_share'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function makeUser(app: TestApp['app'], orgId = 'test-org', phone?: string): Promise<TestUser> {
  const u = await makeIdentityUser(app, { perms: SHARE_PERMS, orgId });
  await app.storage.query('update credentials set expires_at = null where user_id = $1', [u.id]);
  if (phone) await app.storage.query('update users set phone = $1 where id = $2', [phone, u.id]);
  return u;
}

describe('share groups on real local boards', () => {
  let t: TestApp;
  let port: number;
  let owner: TestUser;
  let member: TestUser;
  let removed: TestUser;
  let stranger: TestUser;
  let foreigner: TestUser;
  const clock = new ManualClock(Date.now());
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-share-'));
  const boards: Record<string, string> = {};
  const sockets: TestStompClient[] = [];
  const post = (
    u: TestUser,
    url: string,
    body: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) => call(t.app, u, 'POST', `/api/device/share/${url}`, body, headers);
  const get = (u: TestUser, url: string) => call(t.app, u, 'GET', `/api/device/share/${url}`);
  const apply = (u: TestUser, deviceId: string) =>
    call(t.app, u, 'POST', '/api/device/apply-device', { deviceId });
  const stomp = async (u: TestUser, applyId = '') => {
    const c = await connectStomp(port, { token: u.token, applyId });
    sockets.push(c);
    return c;
  };
  const browse = (u: TestUser, applyId: string) =>
    call(t.app, u, 'POST', '/api/device/file-browser', { applyId, path: '/root' }, { applyaccess: applyId });

  beforeAll(async () => {
    const lab = {
      boards: ['a', 'b', 'c'].map((n) => ({
        id: `sh-${n}`,
        name: `sh-${n}`,
        model: 'K1',
        attributes: { slot: n },
        driver: 'local',
        options: { memoryMb: 256, diskQuotaMb: 64, maxProcesses: 256 },
      })),
    };
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(labFile, JSON.stringify(lab));
    t = await makeTestApp({
      clock,
      env: {
        BIANBU_LAB_FILE: labFile,
        BIANBU_LEASE_TICK_MS: '0',
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    port = await listen(t.app);
    owner = await makeUser(t.app);
    member = await makeUser(t.app, 'test-org', '13800001111');
    removed = await makeUser(t.app);
    stranger = await makeUser(t.app);
    foreigner = await makeUser(t.app, 'other-org', '13900002222');
    // The owner holds a and b; the stranger holds c.
    for (const [u, slot, name] of [
      [owner, 'a', 'shared'],
      [owner, 'b', 'private'],
      [stranger, 'c', 'theirs'],
    ] as const) {
      const r = await call(t.app, u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: { slot },
        serverName: name,
      });
      expect(r.code).toBe(20000);
      boards[slot] = r.data.deviceId;
    }
  }, 180_000);

  afterAll(async () => {
    for (const s of sockets) s.close();
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  describe('bad input', () => {
    it('refuses group names with control or invisible characters, empty, or 10,000 characters', async () => {
      for (const groupName of [
        'a\u0000b',
        'tab\tname',
        'x\u202eevil',
        '   ',
        'n'.repeat(10_000),
        'line\nbreak',
      ]) {
        const r = await post(owner, 'add-share-group', { groupName });
        expect(r.status, JSON.stringify(groupName.slice(0, 20))).toBe(400);
        expect(r.fields?.[0]?.path).toBe('groupName');
      }
      expect((await get(owner, 'fetch-share-info')).data.groups).toEqual([]);
    });

    it('creates a group once; a duplicate name is a clear conflict', async () => {
      const r = await post(owner, 'add-share-group', { groupName: ' team ' });
      expect(r.code).toBe(20000);
      expect(r.data).toMatchObject({ groupName: 'team', users: [], devices: [], grants: [] });
      const dup = await post(owner, 'add-share-group', { groupName: 'team' });
      expect(dup.status).toBe(409);
      expect(dup.error).toBe('share.group_exists');
    });

    it('adds by id and by phone; refuses oneself, duplicates, unknown phones and other organisations alike', async () => {
      const self = await post(owner, 'add-share-user', { userId: owner.id, groupName: 'team' });
      expect(self.status).toBe(400);
      expect(self.error).toBe('share.self');
      const unknown = await post(owner, 'add-share-user', { phone: '10000000000', groupName: 'team' });
      expect(unknown.status).toBe(404);
      expect(unknown.error).toBe('share.user_not_found');
      expect(unknown.fields?.[0]?.path).toBe('phone');
      // A user of another organisation answers exactly like one that does not exist.
      const foreignByPhone = await post(owner, 'add-share-user', { phone: '13900002222', groupName: 'team' });
      const foreignById = await post(owner, 'add-share-user', { userId: foreigner.id, groupName: 'team' });
      expect([foreignByPhone.error, foreignById.error]).toEqual([
        'share.user_not_found',
        'share.user_not_found',
      ]);
      const neither = await post(owner, 'add-share-user', { groupName: 'team' });
      expect(neither.status).toBe(400);

      const byPhone = await post(owner, 'add-share-user', {
        phone: '13800001111',
        userId: '',
        groupName: 'team',
      });
      expect(byPhone.code).toBe(20000);
      expect(byPhone.data).toMatchObject({ userId: member.id, phone: '*******1111' });
      const dup = await post(owner, 'add-share-user', { userId: member.id, groupName: 'team' });
      expect(dup.status).toBe(409);
      expect(dup.error).toBe('share.user_exists');
      expect((await post(owner, 'add-share-user', { userId: removed.id, groupName: 'team' })).code).toBe(
        20000,
      );
    });

    it('shares only boards the owner holds: someone else’s board and a made-up id get the same answer', async () => {
      for (const devices of [[boards.c], ['no-such-board'], [boards.a, boards.c]]) {
        const r = await post(owner, 'set-group-devices', { groupName: 'team', devices });
        expect(r.status).toBe(400);
        expect(r.error).toBe('share.device_not_held');
      }
      const ok = await post(owner, 'set-group-devices', { groupName: 'team', devices: [boards.a] });
      expect(ok.code).toBe(20000);
      expect(ok.data.devices.map((d: { deviceId: string }) => d.deviceId)).toEqual([boards.a]);
    });

    it('answers a guessed group name like a missing one, for every owner call', async () => {
      for (const [u, name] of [
        [stranger, 'team'],
        [owner, 'nope'],
        [member, 'team'],
      ] as const) {
        const answers = await Promise.all([
          post(u, 'rm-share-group', { groupName: name }),
          post(u, 'add-share-user', { userId: stranger.id, groupName: name }),
          post(u, 'rm-share-user', { userId: member.id, groupName: name }),
          post(u, 'share-user-info', { groupName: name }),
          post(u, 'set-group-devices', { groupName: name, devices: [] }),
          post(u, 'set-group-grants', { groupName: name, grants: [] }),
        ]);
        for (const a of answers) {
          expect(a.status).toBe(404);
          expect(a.error).toBe('share.group_not_found');
        }
      }
      const notMember = await post(owner, 'rm-share-user', { userId: stranger.id, groupName: 'team' });
      expect(notMember.error).toBe('share.not_member');
    });
  });

  describe('the access matrix', () => {
    let memberApply: string;
    let removedApply: string;

    it('lets members (and only members) see and start the shared board, never the owner’s others', async () => {
      const ownerApply = (await apply(owner, boards.a)).data.applyId as string;
      const m = await apply(member, boards.a);
      expect(m.code).toBe(20000);
      memberApply = m.data.applyId;
      expect(memberApply).not.toBe(ownerApply);
      expect(m.data.deviceDto).toMatchObject({ deviceId: boards.a, serverName: 'shared' });
      removedApply = (await apply(removed, boards.a)).data.applyId;

      for (const [u, deviceId] of [
        [member, boards.b],
        [stranger, boards.a],
        [foreigner, boards.a],
        [member, boards.c],
      ] as const) {
        const r = await apply(u, deviceId);
        expect(r.status).toBe(404);
        expect(r.error).toBe('device.not_held');
      }

      const shared = await get(member, 'fetch-share-device');
      expect(shared.data.items).toHaveLength(1);
      expect(shared.data.items[0]).toMatchObject({
        deviceId: boards.a,
        ownerName: owner.username,
        groups: ['team'],
        applyId: memberApply,
      });
      expect(shared.data.items[0].remainingMs).toBeGreaterThan(H48 - 60_000);
      expect((await get(stranger, 'fetch-share-device')).data.items).toEqual([]);
      expect((await get(stranger, 'fetch-group-info')).data.groups).toEqual([]);
      const mg = await get(member, 'fetch-group-info');
      expect(mg.data.groups[0]).toMatchObject({ groupName: 'team', ownerName: owner.username });
      // Members see fellow members' names, never their phone numbers.
      expect(JSON.stringify(mg.data)).not.toContain('1111');
      const info = await get(owner, 'fetch-share-info');
      const active = info.data.groups[0].devices[0].activeUsers
        .map((a: { userId: string }) => a.userId)
        .sort();
      expect(active).toEqual([owner.id, member.id, removed.id].sort());
      expect((await get(member, 'fetch-share-info')).data.groups).toEqual([]);
    });

    it('gives a member the owner’s files, shells, load and board topic on the shared board', async () => {
      await t.app.boards.driver(boards.a).files.write('/root/owner-note.txt', 'from the owner');
      const files = await browse(member, memberApply);
      expect(files.code).toBe(20000);
      expect(JSON.stringify(files.data)).toContain('owner-note.txt');
      const load = await call(t.app, member, 'GET', '/api/device/recent-mem-loading', { deviceId: boards.a });
      expect(load.code).toBe(20000);
      const loadB = await call(t.app, member, 'GET', '/api/device/recent-mem-loading', {
        deviceId: boards.b,
      });
      expect(loadB.error).toBe('device.not_held');

      const c = await stomp(member, memberApply);
      const shellId = await openShell(t.app, member, memberApply);
      const f = await ShellFollower.subscribe(c, shellId);
      f.input('echo member-$((40+2))\n');
      await f.until((s) => s.includes('member-42'));
      c.sendFrame('SUBSCRIBE', {
        id: 'board',
        destination: Destinations.boardState(boards.a),
        receipt: 'rb',
      });
      await c.waitFor((fr) => fr.command === 'RECEIPT' && fr.headers['receipt-id'] === 'rb');
      await sleep(100);
      expect(
        c.frames.some((fr) => fr.headers.subscription === 'board' && fr.headers.event === 'refused'),
      ).toBe(false);
    });

    it('answers strangers like nothing exists: someone else’s apply, shell and board topic', async () => {
      const viaMemberApply = await browse(stranger, memberApply);
      expect(viaMemberApply.status).toBe(404);
      expect(viaMemberApply.error).toBe('apply.not_found');
      const ownerApply = (await apply(owner, boards.a)).data.applyId as string;
      const ownerShell = await openShell(t.app, owner, ownerApply);
      for (const u of [stranger, member]) {
        const c = await stomp(u);
        c.sendFrame('SUBSCRIBE', { id: 'x', destination: Destinations.shellOutput(ownerShell) });
        const refused = await c.waitFor(
          (fr) => fr.headers.subscription === 'x' && fr.headers.event === 'refused',
        );
        expect(refused.headers.error).toBe('resource.not_found');
      }
      const c = await stomp(stranger);
      c.sendFrame('SUBSCRIBE', { id: 'b', destination: Destinations.boardState(boards.a) });
      expect((await c.waitFor((fr) => fr.headers.subscription === 'b')).headers.event).toBe('refused');
    });

    it('revokes a removed member at once: shell, board topic, upload in flight, notification, new calls', async () => {
      const c = await stomp(removed, removedApply);
      c.sendFrame('SUBSCRIBE', { id: 'n', destination: Destinations.userNotifications, receipt: 'rn' });
      await c.waitFor((fr) => fr.headers['receipt-id'] === 'rn');
      const shellId = await openShell(t.app, removed, removedApply);
      const f = await ShellFollower.subscribe(c, shellId);
      f.input('echo still-$((1+1))\n');
      await f.until((s) => s.includes('still-2'));
      c.sendFrame('SUBSCRIBE', {
        id: 'board',
        destination: Destinations.boardState(boards.a),
        receipt: 'rb',
      });
      await c.waitFor((fr) => fr.headers['receipt-id'] === 'rb');

      // An upload that keeps streaming until the revocation stops it.
      const mp = multipartHead({ applyId: removedApply, path: '/root' }, 'big.bin');
      let stop = false;
      let revoking = false;
      const answer = new Promise<{ status: number; body: string; error?: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/api/device/uploadFile',
            headers: {
              ...removed.headers,
              applyaccess: removedApply,
              'content-type': mp.contentType,
              'content-length': mp.head.length + 40 * 1024 * 1024 + mp.tail.length,
            },
          },
          (res) => {
            stop = true;
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        // The service answers 404 and closes the connection; a write racing with that close may see
        // the connection cut (EPIPE, ECONNRESET) before the answer is read: the transfer was cut either way.
        req.on('error', (err: NodeJS.ErrnoException) => {
          if (stop) return;
          stop = true;
          if (revoking && ['EPIPE', 'ECONNRESET'].includes(err.code ?? ''))
            resolve({ status: 0, body: '', error: err.code });
          else reject(err);
        });
        req.write(mp.head);
        const chunk = Buffer.alloc(64 * 1024, 7);
        const tick = () => {
          if (stop) return;
          req.write(chunk);
          setTimeout(tick, 20);
        };
        tick();
      });
      await sleep(500);
      const started = Date.now();
      revoking = true;
      const r = await post(owner, 'rm-share-user', { userId: removed.id, groupName: 'team' });
      expect(r.code).toBe(20000);
      expect(r.data.revokedApplies).toBe(1);

      const closed = await c.waitFor(
        (fr) => fr.headers.subscription === f.subId && fr.headers.event === 'closed',
        5000,
      );
      expect(closed.headers.reason).toBe('share.revoked');
      const boardCut = await c.waitFor(
        (fr) => fr.headers.subscription === 'board' && fr.headers.event === 'closed',
        5000,
      );
      expect(boardCut.headers.reason).toBe('share.revoked');
      const up = await answer;
      expect(Date.now() - started).toBeLessThan(5000);
      if (up.status === 0) expect(['EPIPE', 'ECONNRESET']).toContain(up.error);
      else {
        expect(up.status).toBe(404);
        expect(JSON.parse(up.body)).toMatchObject({
          error: 'apply.closed',
          data: { reason: 'share.revoked' },
        });
      }
      const notice = await c.waitFor((fr) => fr.headers.subscription === 'n');
      expect(JSON.parse(Buffer.from(notice.body).toString())).toMatchObject({
        kind: 'share.removed',
        data: { groupName: 'team', ownerName: owner.username },
      });
      // Nothing they had keeps working, and nothing new starts.
      expect((await browse(removed, removedApply)).error).toBe('apply.closed');
      expect((await apply(removed, boards.a)).error).toBe('device.not_held');
      expect((await get(removed, 'fetch-share-device')).data.items).toEqual([]);
      const partial = fs.readdirSync(path.join(t.dataDir)).length; // the service still runs
      expect(partial).toBeGreaterThan(0);
      // The member and the owner are untouched.
      expect((await browse(member, memberApply)).code).toBe(20000);
    });
  });

  describe('joined shells', () => {
    it('lets the owner invite the group: the member watches read-only, types once granted, sees presence, is removed alone', async () => {
      const ownerApply = (await apply(owner, boards.a)).data.applyId as string;
      const memberApply = (await apply(member, boards.a)).data.applyId as string;
      const shellId = await openShell(t.app, owner, ownerApply);
      const oc = await stomp(owner, ownerApply);
      const host = await ShellFollower.subscribe(oc, shellId, { subId: 'host' });

      // Not invited yet: the member cannot join.
      const mc = await stomp(member, memberApply);
      mc.sendFrame('SUBSCRIBE', { id: 'early', destination: Destinations.shellOutput(shellId) });
      expect((await mc.waitFor((fr) => fr.headers.subscription === 'early')).headers.event).toBe('refused');

      // Only the shell's host may invite, and only a group holding the board.
      const notHost = await post(member, 'shell-invite', {
        applyId: memberApply,
        clientId: shellId,
        groupName: 'team',
      });
      expect(notHost.error).toBe('share.shell_not_found');
      const inv = await post(owner, 'shell-invite', {
        applyId: ownerApply,
        clientId: shellId,
        groupName: 'team',
      });
      expect(inv.code).toBe(20000);
      const joinable = await get(member, 'fetch-joinable-shells');
      expect(joinable.data.items).toEqual([
        expect.objectContaining({ clientId: shellId, hostName: owner.username, mine: false }),
      ]);
      expect((await get(stranger, 'fetch-joinable-shells')).data.items).toEqual([]);

      const guest = new ShellFollowerLenient(mc, 'guest', shellId);
      mc.sendFrame('SUBSCRIBE', {
        id: 'guest',
        destination: Destinations.shellOutput(shellId),
        receipt: 'rg',
      });
      await mc.waitFor((fr) => fr.headers['receipt-id'] === 'rg');
      const presence = await oc.waitFor(
        (fr) =>
          fr.headers.subscription === 'host' &&
          fr.headers.event === 'presence' &&
          Buffer.from(fr.body).toString().includes(member.id),
      );
      const users = JSON.parse(Buffer.from(presence.body).toString()).users;
      expect(users).toEqual(
        expect.arrayContaining([
          { userId: owner.id, username: owner.username, host: true, input: true },
          { userId: member.id, username: member.username, host: false, input: false },
        ]),
      );

      host.input('echo host-$((2*21))\n');
      await guest.until((s) => s.includes('host-42'));
      // Read-only: the guest's keystrokes are dropped.
      guest.input('echo guest-$((3*3))\n');
      await sleep(600);
      host.pump();
      expect(host.text).not.toContain('guest-9');

      expect(
        (
          await post(owner, 'shell-grant-input', {
            applyId: ownerApply,
            clientId: shellId,
            userId: member.id,
            input: true,
          })
        ).code,
      ).toBe(20000);
      await sleep(200);
      guest.input('echo guest-$((4*4))\n');
      await host.until((s) => s.includes('guest-16'));

      expect(
        (
          await post(owner, 'shell-revoke-guest', {
            applyId: ownerApply,
            clientId: shellId,
            userId: member.id,
          })
        ).code,
      ).toBe(20000);
      const kicked = await mc.waitFor(
        (fr) => fr.headers.subscription === 'guest' && fr.headers.event === 'closed',
      );
      expect(kicked.headers.reason).toBe('share.guest_removed');
      guest.input('echo after-$((5*5))\n');
      host.input('echo host-still-$((6*6))\n');
      await host.until((s) => s.includes('host-still-36'));
      expect(host.text).not.toContain('after-25');
      expect(host.closedReason).toBeNull();
    });
  });

  describe('grants and the owner’s lease', () => {
    it('keeps renew with the owner until the group grants it; rename and unlock never', async () => {
      const renewalDate = endIn(clock.now(), 3 * 24 * 3_600_000);
      const body = { serverName: 'shared', deviceId: boards.a, renewalDate };
      const before = await call(t.app, member, 'POST', '/api/device/renewal-device', body);
      expect(before.error).toBe('lease.not_found');
      await post(owner, 'set-group-grants', { groupName: 'team', grants: ['renew'] });
      const after = await call(t.app, member, 'POST', '/api/device/renewal-device', body);
      expect(after.code).toBe(20000);
      expect(after.data.endsAt).toBe(renewalDate);
      const rename = await call(t.app, member, 'POST', '/api/device/rename-request-device', {
        deviceId: boards.a,
        oldServerName: 'shared',
        newServerName: 'mine',
      });
      expect(rename.error).toBe('lease.not_found');
      const unlock = await call(t.app, member, 'POST', '/api/device/unlock-request-device', {
        deviceId: boards.a,
        serverName: 'shared',
      });
      expect(unlock.error).toBe('lease.not_found');
    });

    it('revokes when the board leaves the group, and when the group is deleted', async () => {
      const a1 = (await apply(member, boards.a)).data.applyId as string;
      await post(owner, 'set-group-devices', { groupName: 'team', devices: [] });
      expect((await browse(member, a1)).error).toBe('apply.closed');
      expect((await apply(member, boards.a)).error).toBe('device.not_held');
      await post(owner, 'set-group-devices', { groupName: 'team', devices: [boards.a] });
      const a2 = (await apply(member, boards.a)).data.applyId as string;
      expect((await browse(member, a2)).code).toBe(20000);
      const rm = await post(owner, 'rm-share-group', { groupName: 'team' });
      expect(rm.data).toEqual({ groupName: 'team', revokedApplies: 1 });
      expect((await browse(member, a2)).error).toBe('apply.closed');
      expect((await get(member, 'fetch-group-info')).data.groups).toEqual([]);
    });

    it('ends the member’s shell when the owner’s lease ends, and the board leaves the group', async () => {
      await post(owner, 'add-share-group', { groupName: 'team2' });
      await post(owner, 'add-share-user', { userId: member.id, groupName: 'team2' });
      await post(owner, 'set-group-devices', { groupName: 'team2', devices: [boards.a] });
      const a = (await apply(member, boards.a)).data.applyId as string;
      const c = await stomp(member, a);
      const shellId = await openShell(t.app, member, a);
      const f = await ShellFollower.subscribe(c, shellId);
      f.input('echo up\n');
      await f.until((s) => s.includes('up'));
      const r = await call(t.app, owner, 'POST', '/api/device/unlock-request-device', {
        deviceId: boards.a,
        serverName: 'shared',
      });
      expect(r.code).toBe(20000);
      const closed = await c.waitFor(
        (fr) => fr.headers.subscription === f.subId && fr.headers.event === 'closed',
      );
      expect(closed.headers.reason).toBe('apply.ended');
      expect((await browse(member, a)).error).toBe('apply.closed');
      await t.app.leases.drain();
      expect((await get(owner, 'fetch-share-info')).data.groups[0].devices).toEqual([]);
      expect((await get(member, 'fetch-share-device')).data.items).toEqual([]);
    });
  });
});

/** A guest's view: no offsets of its own to check (it joins mid-stream), events other than output skipped. */
class ShellFollowerLenient {
  private seen = 0;
  chunks: Buffer[] = [];
  constructor(
    readonly c: TestStompClient,
    readonly subId: string,
    readonly shellId: string,
  ) {}
  get text() {
    for (; this.seen < this.c.frames.length; this.seen++) {
      const f = this.c.frames[this.seen];
      if (f.command === 'MESSAGE' && f.headers.subscription === this.subId && !f.headers.event)
        this.chunks.push(Buffer.from(f.body));
    }
    return Buffer.concat(this.chunks).toString();
  }
  input(text: string) {
    this.c.sendFrame('SEND', { destination: Destinations.shellInput(this.shellId) }, text);
  }
  async until(pred: (s: string) => boolean, ms = 20_000) {
    const end = Date.now() + ms;
    while (!pred(this.text)) {
      if (Date.now() > end) throw new Error(`timed out: ${JSON.stringify(this.text.slice(-200))}`);
      await sleep(20);
    }
  }
}
