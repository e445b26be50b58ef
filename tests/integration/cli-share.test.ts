// `bianbu share` and `bianbu queue`: the real binary as a subprocess against the real service on a
// socket, two (and three) users each with their own credential, boards as rows of the lifecycle
// (no board lab: sharing and the waiting line are about leases, not what runs on the board).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFeature } from '#server/identity/identity.routes.ts';
import { queueFeature } from '#server/leases/queue.routes.ts';
import { shareFeature } from '#server/share/share.routes.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { type CliEnv, runCli } from './helpers/cli-run.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { lifecycleOnly, makeBoard, noTimer } from './leases.fixtures.ts';

const PERMS = ['device.view_share', 'device.add_share', 'device.change_share', 'device.del_share'];

describe('bianbu share and bianbu queue', () => {
  let t: TestApp;
  let url: string;
  let cfgDir: string;
  let owner: TestUser;
  let member: TestUser;
  let third: TestUser;
  const as = (u: TestUser, args: string[], opts: Parameters<typeof runCli>[2] = {}) => {
    const env: CliEnv = { url, key: u.token, configFile: path.join(cfgDir, `${u.username}.json`) };
    return runCli(env, args, opts);
  };
  const json = (r: { stdout: string; stderr: string; code: number | null }) => {
    expect(r.stderr, r.stderr).not.toMatch(/^bianbu:/m);
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    t = await makeTestApp({
      env: { ...noTimer },
      features: [...lifecycleOnly(), queueFeature, shareFeature, identityFeature],
    });
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
    owner = await makeUser(t.app, { username: 'owner', perms: PERMS });
    member = await makeUser(t.app, { username: 'member', perms: PERMS });
    third = await makeUser(t.app, { username: 'third', perms: PERMS });
    await t.app.storage.query('update users set phone = $1 where id = $2', ['13800001111', member.id]);
    cfgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-share-'));
  });
  afterAll(async () => {
    await t?.close();
    // Unset when the set-up timed out: its error is the one to read, not a second one from here.
    if (cfgDir) fs.rmSync(cfgDir, { recursive: true, force: true });
  });

  // The tests below run the cli 10 to 30 times each, a process start every time: a second or more
  // apiece beside a load, past the default minute.
  it('creates a group, adds a member, shares a board the member then sees, and takes it back', async () => {
    await makeBoard(t.app, { attributes: { pool: 'share', cores: 4 } });
    const lease = json(await as(owner, ['request', 'mine', '--filter', 'pool=share', '--json']));

    expect(json(await as(owner, ['share', 'create', 'team', '--json']))).toMatchObject({
      groupName: 'team',
      users: [],
      devices: [],
    });
    const dup = await as(owner, ['share', 'create', 'team']);
    expect(dup.code).toBe(5);
    expect(dup.stderr).toMatch(/\(share\.group_exists\)/);

    // By phone, then (already in) by user id.
    expect(json(await as(owner, ['share', 'add-member', 'team', '13800001111', '--json']))).toMatchObject({
      userId: member.id,
      username: 'member',
    });
    const again = await as(owner, ['share', 'add-member', 'team', member.id]);
    expect(again.code).toBe(5);
    expect(again.stderr).toMatch(/\(share\.user_exists\)/);
    const nobody = await as(owner, ['share', 'add-member', 'team', 'no-such-user']);
    expect(nobody.code).toBe(4);
    expect(nobody.stderr).toMatch(/\(share\.user_not_found\)/);
    expect((await as(owner, ['share', 'members', 'team', '-q'])).stdout.trim()).toBe(member.id);

    // Nothing shared yet.
    expect(json(await as(member, ['share', 'boards', '--json'])).items).toEqual([]);

    const g = json(await as(owner, ['share', 'add-board', 'team', 'mine', '--json']));
    expect(g.devices.map((d: { deviceId: string }) => d.deviceId)).toEqual([lease.deviceId]);
    const seen = json(await as(member, ['share', 'boards', '--json']));
    expect(seen.items).toHaveLength(1);
    expect(seen.items[0]).toMatchObject({
      deviceId: lease.deviceId,
      serverName: 'mine',
      ownerName: 'owner',
      groups: ['team'],
      applyId: null,
    });
    expect((await as(member, ['share', 'boards', '-q'])).stdout.trim()).toBe(lease.deviceId);
    const table = await as(member, ['share', 'boards']);
    expect(table.stdout).toMatch(/^DEVICE\s+NAME\s+OWNER/m);
    expect(table.stdout).toMatch(/mine\s+owner/);
    // The third user is in no group: nothing.
    expect(json(await as(third, ['share', 'boards', '--json'])).items).toEqual([]);
    expect(json(await as(member, ['share', 'groups', '--member', '--json'])).groups).toMatchObject([
      { groupName: 'team', ownerName: 'owner' },
    ]);
    expect((await as(owner, ['share', 'groups', '-q'])).stdout.trim()).toBe('team');

    // A member's own group listing is not the owner's: no group of theirs is named team.
    const notTheirs = await as(member, ['share', 'add-board', 'team', 'mine']);
    expect(notTheirs.code).toBe(4);

    expect(json(await as(owner, ['share', 'remove-board', 'team', 'mine', '--json'])).devices).toEqual([]);
    expect(json(await as(member, ['share', 'boards', '--json'])).items).toEqual([]);
    const gone = await as(owner, ['share', 'remove-board', 'team', 'mine']);
    expect(gone.code).toBe(4);

    await as(owner, ['share', 'add-board', 'team', 'mine']);
    // --group selects the held boards the owner put into that group, and no other held board.
    await makeBoard(t.app, { attributes: { pool: 'share', cores: 4 } });
    json(await as(owner, ['request', 'other', '--filter', 'pool=share', '--json']));
    const renewed = json(await as(owner, ['renew', '--group', 'team', '--duration', '7d', '--json']));
    expect(renewed.results.map((r: { board: string; ok: boolean }) => [r.board, r.ok])).toEqual([
      ['mine', true],
    ]);
    const noGroup = await as(owner, ['renew', '--group', 'nope', '--json']);
    expect(noGroup.code).toBe(4);
    expect(JSON.parse(noGroup.stderr).error).toMatchObject({ key: 'share.group_not_found' });
    // A member cannot select by a group they do not own.
    expect((await as(member, ['renew', '--group', 'team'])).code).toBe(4);
    expect(json(await as(owner, ['share', 'remove-member', 'team', 'member', '--json']))).toMatchObject({
      groupName: 'team',
      userId: member.id,
    });
    expect(json(await as(member, ['share', 'boards', '--json'])).items).toEqual([]);
    expect(json(await as(owner, ['share', 'delete', 'team', '--json']))).toMatchObject({ groupName: 'team' });
    const missing = await as(owner, ['share', 'delete', 'team', '--json']);
    expect(missing.code).toBe(4);
    expect(JSON.parse(missing.stderr).error).toMatchObject({ key: 'share.group_not_found', exitCode: 4 });
  }, 180_000);

  it('queue: join, status and leave with their exit codes', async () => {
    const b = await makeBoard(t.app, { attributes: { pool: 'q1' } });
    json(await as(owner, ['request', 'held', '--filter', 'pool=q1', '--json']));
    const none = await as(member, ['request', 'want', '--filter', 'pool=q1']);
    expect(none.code).toBe(5);

    const entry = json(await as(member, ['queue', 'join', 'want', '--filter', 'pool=q1', '--json']));
    expect(entry).toMatchObject({ state: 'waiting', position: 1, serverName: 'want', lease: null });
    const twice = await as(member, ['queue', 'join', 'want2', '--filter', 'pool=q1']);
    expect(twice.code).toBe(5);
    expect(twice.stderr).toMatch(/\(queue\.already_waiting\)/);
    const noMatch = await as(member, ['queue', 'join', 'x', '--filter', 'pool=none-such']);
    expect(noMatch.code).toBe(4);

    const status = json(await as(member, ['queue', 'status', '--json']));
    expect(status.items).toMatchObject([{ entryId: entry.entryId, position: 1, state: 'waiting' }]);
    expect((await as(member, ['queue', 'status', '-q'])).stdout.trim()).toBe(entry.entryId);
    expect((await as(member, ['queue', 'status'])).stdout).toMatch(/want\s+waiting\s+1/);

    // Someone else's entry answers like a missing one.
    const foreign = await as(third, ['queue', 'leave', entry.entryId]);
    expect(foreign.code).toBe(4);
    expect(foreign.stderr).toMatch(/\(queue\.not_found\)/);

    expect(json(await as(member, ['queue', 'leave', 'want', '--json']))).toMatchObject({
      entryId: entry.entryId,
      state: 'cancelled',
    });
    const over = await as(member, ['queue', 'leave', entry.entryId]);
    expect(over.code).toBe(5);
    expect(over.stderr).toMatch(/\(queue\.not_waiting\)/);
    expect(json(await as(member, ['queue', 'status', '--json'])).items).toEqual([]);
    expect(b.id).toBeTruthy();
  }, 180_000);

  it('queue join --wait prints position changes and ends with the granted lease', async () => {
    await makeBoard(t.app, { attributes: { pool: 'q2' } });
    json(await as(owner, ['request', 'first-holder', '--filter', 'pool=q2', '--json']));
    const ahead = json(await as(third, ['queue', 'join', 'ahead', '--filter', 'pool=q2', '--json']));
    expect(ahead.position).toBe(1);

    let said = '';
    const waiting = as(
      member,
      ['queue', 'join', 'later', '--filter', 'pool=q2', '--wait', '--interval', '0.3', '--json'],
      {
        timeoutMs: 60_000,
        onStderr: (s) => (said = s),
      },
    );
    // Until the member is in line (position 2), nothing moves.
    for (let i = 0; i < 100; i++) {
      const s = json(await as(member, ['queue', 'status', '--json']));
      if (s.items.length) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const leases = (u: TestUser) => as(u, ['leases', '--json']).then((r) => json(r).items);
    // The holder lets go: the one ahead gets the board, the member moves up to 1.
    await as(owner, ['unlock', 'first-holder', '--yes']);
    await t.app.leases.drain();
    let granted: { serverName: string }[] = [];
    for (let i = 0; i < 100 && !granted.length; i++) {
      granted = (await leases(third)).filter((l: { serverName: string }) => l.serverName === 'ahead');
      if (!granted.length) await new Promise((r) => setTimeout(r, 200));
    }
    expect(granted).toHaveLength(1);
    // The member has seen its move to 1 before the board frees again (it polls; a fixed second was
    // not always enough for a poll on a loaded machine, and the move went unseen).
    for (let i = 0; i < 300 && !/position 1/.test(said); i++) await new Promise((r) => setTimeout(r, 100));
    expect(said).toMatch(/position 1/);
    await as(third, ['unlock', 'ahead', '--yes']);
    await t.app.leases.drain();

    const r = await waiting;
    expect(r.stderr).toMatch(/position 2/);
    expect(r.stderr).toMatch(/position 1/);
    expect(r.stderr).toMatch(/granted: later/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ serverName: 'later', state: 'live' });
  }, 180_000);

  it('completes the share and queue subcommands', async () => {
    const r = await as(owner, ['completion', 'bash']);
    expect(r.stdout).toMatch(/share\) opts="[^"]*"; boards=1; subs="groups create delete members add-member/);
    expect(r.stdout).toMatch(/queue\) opts="[^"]*--wait[^"]*"; boards=0; subs="join status leave"/);
  });
});
