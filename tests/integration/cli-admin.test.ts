// `bianbu admin`: the real binary as a subprocess against the real service on a socket. A global
// administrator makes an organisation, a role and a user in it; the user, with the role's entries only,
// lists their organisation and is refused the rest (exit 3); passwords are reset and users deactivated;
// memberships, the audit log with filters, and the lab's boards (an ssh board nobody answers for, so no
// machine is started) through add, change, maintenance and retire; exit codes per error class.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { type CliRun, runCli } from './helpers/cli-run.ts';
import { loginEncryptor } from './helpers/sign-in.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const FINGERPRINT = `SHA256:${'A'.repeat(43)}`;
const sshBoard = (id: string) => ({
  id,
  name: id,
  model: 'lab board',
  driver: 'ssh',
  // Port 1 on loopback: nothing answers, the board is offline, and no call here needs it to run.
  options: { host: '127.0.0.1', port: 1, user: 'root', password: 'x', hostKeyFingerprint: FINGERPRINT },
});

describe('bianbu admin', () => {
  let t: TestApp;
  let url: string;
  let dir: string;
  let admin: TestUser;
  let nobody: TestUser;
  const run = (key: string, args: string[], stdin?: string) =>
    runCli({ url, key, configFile: path.join(dir, 'cli.json') }, args, { stdin, timeoutMs: 60_000 });
  const json = (r: CliRun) => {
    expect(r.stderr, r.stderr).not.toMatch(/^bianbu:/m);
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout);
  };
  async function signIn(username: string, password: string): Promise<string | null> {
    const enc = await loginEncryptor(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      remoteAddress: `198.51.100.${crypto.randomInt(1, 250)}`,
      payload: { username: enc(username), password: enc(password) },
    });
    return res.json().code === 20000 ? res.json().data.accessToken : null;
  }

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-cli-admin-'));
    const lab = path.join(dir, 'lab.yaml');
    fs.writeFileSync(lab, JSON.stringify({ boards: [sshBoard('lab-1')] }));
    t = await makeTestApp({
      env: {
        BIANBU_LAB_FILE: lab,
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
    admin = await makeUser(t.app, { username: 'root-admin', perms: ['*'], orgId: 'SuperAdmin' });
    nobody = await makeUser(t.app, { username: 'plain', perms: ['device.view_device'] });
  });
  afterAll(async () => {
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('makes an organisation, a role and a user who sees only what the role permits', async () => {
    expect(
      json(await run(admin.token, ['admin', 'orgs', 'add', 'Lab Alpha', '--id', 'lab-alpha', '--json'])),
    ).toMatchObject({ id: 'lab-alpha', name: 'Lab Alpha', members: 0 });
    const dup = await run(admin.token, ['admin', 'orgs', 'add', 'Again', '--id', 'lab-alpha']);
    expect(dup.code).toBe(5);
    expect(dup.stderr).toMatch(/\(org\.exists\)/);

    const role = json(
      await run(admin.token, [
        'admin',
        'roles',
        'add',
        'Lab auditor',
        '--id',
        'lab-auditor',
        '--perm',
        'rbac.view_user,audit.view_log',
        '--perm',
        'device.view_device',
        '--json',
      ]),
    );
    expect(role.perms.sort()).toEqual(['audit.view_log', 'device.view_device', 'rbac.view_user']);
    expect((await run(admin.token, ['admin', 'roles', 'add', 'Bad', '--perm', 'not a perm'])).code).toBe(2);

    const made = json(
      await run(admin.token, [
        'admin',
        'users',
        'add',
        'alice',
        '--org',
        'lab-alpha',
        '--role',
        'lab-auditor',
        '--json',
      ]),
    );
    expect(made.user).toMatchObject({
      username: 'alice',
      memberships: [{ orgId: 'lab-alpha', roleId: 'lab-auditor' }],
    });
    expect(made.password).toMatch(/^.{12,}$/);
    const taken = await run(admin.token, ['admin', 'users', 'add', 'alice']);
    expect(taken.code).toBe(5);
    expect(taken.stderr).toMatch(/\(user\.username_taken\)/);
    expect((await run(admin.token, ['admin', 'users', 'ls', '--org', 'lab-alpha', '-q'])).stdout.trim()).toBe(
      'alice',
    );
    const table = await run(admin.token, ['admin', 'users', 'ls', '--search', 'alice']);
    expect(table.stdout).toMatch(/^USER\s+NAME\s+EMAIL\s+ACTIVE\s+MEMBERSHIPS/m);
    expect(table.stdout).toMatch(/alice\s+alice\s+-\s+yes\s+lab-alpha:lab-auditor/);

    // Alice, signed in with the password made for her: her organisation only, and nothing she may not.
    const alice = await signIn('alice', made.password);
    expect(alice).toBeTruthy();
    const key = alice as string;
    expect((await run(key, ['admin', 'users', 'ls', '-q'])).stdout.trim()).toBe('alice');
    for (const args of [
      ['admin', 'roles', 'ls'],
      ['admin', 'orgs', 'ls'],
      ['admin', 'roles', 'add', 'Mine', '--perm', 'rbac.add_user'],
      ['admin', 'users', 'add', 'bob'],
      ['admin', 'boards', 'ls'],
      ['admin', 'users', 'deactivate', 'alice'],
    ]) {
      const r = await run(key, args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(3);
    }
    expect(json(await run(key, ['admin', 'audit', '--json']))).toMatchObject({ total: expect.any(Number) });
    // A user with no administration entry at all.
    expect((await run(nobody.token, ['admin', 'users', 'ls'])).code).toBe(3);

    // Memberships: alice also in Default as org_user, then out again.
    expect(
      json(await run(admin.token, ['admin', 'members', 'set', 'alice', 'Default', 'org_user', '--json'])),
    ).toMatchObject({
      username: 'alice',
      orgId: 'Default',
      roleId: 'org_user',
    });
    expect(
      (await run(admin.token, ['admin', 'members', 'ls', '--user', 'alice', '-q'])).stdout
        .trim()
        .split('\n')
        .sort(),
    ).toEqual(['alice Default org_user', 'alice lab-alpha lab-auditor']);
    json(await run(admin.token, ['admin', 'members', 'rm', 'alice', 'Default', '--json']));
    expect((await run(admin.token, ['admin', 'members', 'rm', 'alice', 'Default'])).code).toBe(4);

    // Organisations and roles in use are kept.
    expect((await run(admin.token, ['admin', 'orgs', 'rm', 'lab-alpha'])).code).toBe(5);
    expect((await run(admin.token, ['admin', 'roles', 'rm', 'lab-auditor'])).code).toBe(5);
    expect((await run(admin.token, ['admin', 'roles', 'rm', 'org_user'])).code).toBe(5);

    // A new password from stdin: the old one stops, the new one signs in; without stdin one is made.
    json(
      await run(
        admin.token,
        ['admin', 'users', 'passwd', 'alice', '--password-stdin', '--json'],
        'Fresh-Passw0rd!\n',
      ),
    );
    expect(await signIn('alice', made.password)).toBeNull();
    expect(await signIn('alice', 'Fresh-Passw0rd!')).toBeTruthy();
    const reset = await run(admin.token, ['admin', 'users', 'passwd', 'alice', '-q']);
    expect(reset.code).toBe(0);
    expect(await signIn('alice', reset.stdout.trim())).toBeTruthy();

    // Deactivated, alice's key stops working at once; activated, she may sign in again.
    expect(json(await run(admin.token, ['admin', 'users', 'deactivate', 'alice', '--json'])).isActive).toBe(
      false,
    );
    expect((await run(key, ['admin', 'users', 'ls'])).code).toBe(3);
    expect(await signIn('alice', reset.stdout.trim())).toBeNull();
    expect(
      json(await run(admin.token, ['admin', 'users', 'activate', made.user.id, '--json'])).isActive,
    ).toBe(true);
    expect(await signIn('alice', reset.stdout.trim())).toBeTruthy();
    expect((await run(admin.token, ['admin', 'users', 'deactivate', 'nobody-here'])).code).toBe(4);

    // The audit log, filtered by call and by user.
    const audit = json(await run(admin.token, ['admin', 'audit', '--action', 'adminUserCreate', '--json']));
    expect(audit.items.length).toBeGreaterThanOrEqual(2);
    expect(new Set(audit.items.map((a: { action: string }) => a.action))).toEqual(
      new Set(['adminUserCreate']),
    );
    expect(audit.items.map((a: { result: string }) => a.result).sort()).toEqual(['failed', 'ok']);
    const failed = json(
      await run(admin.token, ['admin', 'audit', '--user', 'root-admin', '--result', 'failed', '--json']),
    );
    // The refusals the service answered (a bad permission entry and an unknown user never left the cli).
    expect(new Set(failed.items.map((a: { action: string }) => a.action))).toEqual(
      new Set([
        'adminOrgCreate',
        'adminUserCreate',
        'adminMembershipRemove',
        'adminOrgDelete',
        'adminRoleDelete',
      ]),
    );
    expect(new Set(failed.items.map((a: { username: string }) => a.username))).toEqual(
      new Set(['root-admin']),
    );
    expect((await run(admin.token, ['admin', 'audit', '--since', 'yesterday'])).code).toBe(2);
  }, 300_000);

  it('runs the lab: boards listed, added from stdin, changed, in maintenance, retired', async () => {
    expect((await run(admin.token, ['admin', 'boards', 'ls', '-q'])).stdout.trim().split('\n')).toContain(
      'lab-1',
    );
    const added = json(
      await run(admin.token, ['admin', 'boards', 'add', '-', '--json'], JSON.stringify(sshBoard('lab-2'))),
    );
    expect(added).toMatchObject({ deviceId: 'lab-2', driver: 'ssh', source: 'admin' });
    // Secrets come back redacted.
    expect(added.options.password).toBe(true);
    const again = await run(admin.token, ['admin', 'boards', 'add', '-'], JSON.stringify(sshBoard('lab-2')));
    expect(again.code).toBe(5);
    expect(again.stderr).toMatch(/\(board\.exists\)/);

    const changed = json(
      await run(admin.token, [
        'admin',
        'boards',
        'change',
        'lab-2',
        '--name',
        'bench-2',
        '--attr',
        'cores=4',
        '--attr',
        'os=Bianbu',
        '--json',
      ]),
    );
    expect(changed).toMatchObject({ name: 'bench-2', attributes: { cores: 4, os: 'Bianbu' } });

    const on = json(
      await run(admin.token, [
        'admin',
        'boards',
        'maintenance',
        'lab-2',
        'on',
        '--reason',
        'new PSU',
        '--json',
      ]),
    );
    expect(on).toMatchObject({ state: 'maintenance' });
    expect(
      (await run(admin.token, ['admin', 'boards', 'ls', '--state', 'maintenance', '-q'])).stdout.trim(),
    ).toBe('lab-2');
    const off = json(await run(admin.token, ['admin', 'boards', 'maintenance', 'lab-2', 'off', '--json']));
    expect(off.state).not.toBe('maintenance');
    expect((await run(admin.token, ['admin', 'boards', 'maintenance', 'lab-2', 'maybe'])).code).toBe(2);

    expect(json(await run(admin.token, ['admin', 'boards', 'retire', 'lab-2', '--json'])).retiredAt).toEqual(
      expect.any(String),
    );
    expect((await run(admin.token, ['admin', 'boards', 'ls', '-q'])).stdout.split('\n')).not.toContain(
      'lab-2',
    );
    expect(
      (await run(admin.token, ['admin', 'boards', 'ls', '--retired', '-q'])).stdout.split('\n'),
    ).toContain('lab-2');
    expect((await run(admin.token, ['admin', 'boards', 'retire', 'no-such-board'])).code).toBe(4);
    // Only riscv64 QEMU boards have a network the service runs.
    const net = await run(admin.token, ['admin', 'boards', 'network', 'lab-1']);
    expect(net.code).not.toBe(0);
    expect(net.stderr).toMatch(/network\.unsupported|capability\.unsupported/);
  }, 300_000);
  it('uploads an image for everyone, refuses a taken tag and a non-image, and retires it', async () => {
    const root = path.join(dir, 'rootfs');
    fs.mkdirSync(path.join(root, 'etc'), { recursive: true });
    fs.writeFileSync(path.join(root, 'etc', 'os-release'), 'NAME=admin-test\n');
    const archive = path.join(dir, 'rootfs.tar');
    execFileSync('tar', ['-cf', archive, '-C', root, '.']);
    // Someone who flashes and uploads their own images, but may not publish.
    const flasher = await makeUser(t.app, {
      username: 'flasher',
      perms: ['device.view_flash', 'device.add_flash'],
    });
    const up = json(
      await run(admin.token, [
        'admin',
        'images',
        'upload',
        archive,
        '--tag',
        'admin-rootfs',
        '--os',
        'test 1',
        '--json',
      ]),
    );
    expect(up).toMatchObject({ tag: 'admin-rootfs', format: 'tar', ownerId: null, osVersion: 'test 1' });
    expect(up.sha256).toBe(crypto.createHash('sha256').update(fs.readFileSync(archive)).digest('hex'));
    // Everyone's catalogue has it.
    expect((await run(flasher.token, ['images', '-q'])).stdout.split('\n')).toContain('admin-rootfs');
    const taken = await run(admin.token, ['admin', 'images', 'upload', archive, '--tag', 'admin-rootfs']);
    expect(taken.code).toBe(5);
    expect(taken.stderr).toMatch(/\(flash\.tag_taken\)/);
    expect((await run(nobody.token, ['admin', 'images', 'upload', archive, '--tag', 'not-mine'])).code).toBe(
      3,
    );
    const junk = path.join(dir, 'junk.bin');
    fs.writeFileSync(junk, crypto.randomBytes(4096));
    const bad = await run(admin.token, ['admin', 'images', 'upload', junk, '--tag', 'junk']);
    expect(bad.code).toBe(6);
    expect(bad.stderr).toMatch(/\(flash\.image_invalid\)/);

    expect(
      json(await run(admin.token, ['admin', 'images', 'retire', 'admin-rootfs', '--json'])).retiredAt,
    ).toEqual(expect.any(String));
    expect((await run(flasher.token, ['images', '-q'])).stdout.split('\n')).not.toContain('admin-rootfs');
    expect((await run(admin.token, ['admin', 'images', 'retire', 'no-such-image'])).code).toBe(4);
  }, 300_000);
});
