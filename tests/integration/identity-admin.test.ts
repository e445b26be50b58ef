// Administration of users, organisations, roles and memberships; permission checks and the scope of
// organisation admins; the audit log; the licence detail; first-start seeding.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { seedIdentity } from '#server/identity/seed.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const ADMIN_PASSWORD = 'Adm1n-secret!';

describe('identity administration', () => {
  let t: TestApp;
  let encrypt: (s: string) => string;
  let admin: { authorization: string };

  beforeAll(async () => {
    t = await makeTestApp({
      env: {
        BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD,
        XPACK_ENABLED: '1',
        BIANBU_LICENSE_EXPIRES: '2030-06-30',
        BIANBU_LICENSE_CORPORATION: 'SpacemiT Lab',
        BIANBU_LICENSE_ASSETS: '42',
      },
    });
    const publicKey = (await t.app.inject({ method: 'GET', url: '/api/user/public-key' })).json().data
      .publicKey;
    encrypt = (s) =>
      crypto
        .publicEncrypt(
          { key: publicKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
          Buffer.from(s),
        )
        .toString('base64');
    admin = { authorization: await signIn('admin', ADMIN_PASSWORD) };
  });
  afterAll(() => t?.close());

  async function signIn(username: string, password: string): Promise<string> {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      remoteAddress: `198.51.100.${crypto.randomInt(1, 250)}`,
      payload: { username: encrypt(username), password: encrypt(password) },
    });
    expect(res.json().code, res.body).toBe(20000);
    return res.json().data.accessToken;
  }

  const call = (method: 'GET' | 'POST', url: string, headers: object, payload?: object) =>
    t.app.inject({
      method,
      url,
      headers: headers as Record<string, string>,
      ...(payload ? { payload } : {}),
    });

  it('seeds the organisations, roles and the admin account once', async () => {
    const orgs = (await call('GET', '/api/admin/orgs', admin)).json().data;
    expect(orgs.map((o: { id: string }) => o.id)).toEqual(
      expect.arrayContaining(['ROOT', 'SuperAdmin', 'SystemAdmin', 'VIP_Developer', 'Default']),
    );
    expect(orgs.find((o: { id: string }) => o.id === 'ROOT').type).toBe('ROOT');
    const roles = (await call('GET', '/api/admin/roles', admin)).json().data;
    expect(roles.find((r: { id: string }) => r.id === 'superadmin').perms).toEqual(['*']);
    expect(roles.find((r: { id: string }) => r.id === 'org_user').perms).toContain('device.view_device');

    await seedIdentity(t.app);
    const admins = await t.storage.query<{ n: string }>(
      "select count(*) as n from users where username = 'admin'",
    );
    expect(Number(admins[0].n)).toBe(1);
    // The second run kept the password.
    expect(await signIn('admin', ADMIN_PASSWORD)).toMatch(/^bbt_/);
  });

  it('refuses every admin call to a user without the permission', async () => {
    const u = await makeUser(t.app, { perms: ['device.view_device'] });
    const calls: ['GET' | 'POST', string, object?][] = [
      ['GET', '/api/admin/users'],
      ['POST', '/api/admin/users/create', { username: 'x1' }],
      ['POST', '/api/admin/users/update', { id: u.id, name: 'x' }],
      ['POST', '/api/admin/users/deactivate', { id: u.id }],
      ['GET', '/api/admin/orgs'],
      ['POST', '/api/admin/orgs/create', { name: 'x' }],
      ['GET', '/api/admin/roles'],
      ['POST', '/api/admin/roles/create', { name: 'x', perms: ['*'] }],
      ['GET', '/api/admin/memberships'],
      ['POST', '/api/admin/memberships/set', { userId: u.id, orgId: 'SuperAdmin', roleId: 'superadmin' }],
      ['GET', '/api/admin/audit'],
      ['GET', '/api/admin/phone-outbox'],
      ['GET', '/api/v1/xpack/license/detail'],
    ];
    for (const [method, url, payload] of calls) {
      const res = await call(method, url, u.headers, payload);
      expect(res.statusCode, url).toBe(403);
    }
    const me = (await call('GET', '/api/user/info', u.headers)).json().data;
    expect(me.perms).toEqual(['device.view_device']);
  });

  it('lets a super admin create a user who can then sign in, change them, and deactivate them everywhere', async () => {
    const created = await call('POST', '/api/admin/users/create', admin, {
      username: 'grace',
      name: 'Grace',
      phone: '+8613900000009',
    });
    expect(created.json().code, created.body).toBe(20000);
    const { user, password } = created.json().data;
    expect(password).toMatch(/.{20}/);
    expect(user).toMatchObject({
      username: 'grace',
      currentOrgId: 'Default',
      memberships: [{ orgId: 'Default', roleId: 'org_user' }],
    });

    const dup = await call('POST', '/api/admin/users/create', admin, { username: 'Grace' });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().error).toBe('user.username_taken');

    const token = await signIn('grace', password);
    const key = (await call('GET', '/api/apikey/get-key', { authorization: token })).json().data.apiKey;
    const changed = await call('POST', '/api/admin/users/update', admin, { id: user.id, name: 'Grace H.' });
    expect(changed.json().data.name).toBe('Grace H.');

    const off = await call('POST', '/api/admin/users/deactivate', admin, { id: user.id });
    expect(off.json().data.isActive).toBe(false);
    expect((await call('GET', '/api/user/info', { authorization: token })).json().code).toBe(50008);
    expect((await call('GET', '/api/user/info', { authorization: key })).json().code).toBe(50008);
    const refused = await t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      payload: { username: encrypt('grace'), password: encrypt(password) },
    });
    expect(refused.json().error).toBe('auth.bad_credentials');
  });

  it('manages organisations, roles and memberships, keeping the built-in ones', async () => {
    const org = (
      await call('POST', '/api/admin/orgs/create', admin, { id: 'lab-east', name: 'Lab East' })
    ).json().data;
    expect(org).toMatchObject({ id: 'lab-east', type: 'ORG', builtin: false, members: 0 });
    const role = (
      await call('POST', '/api/admin/roles/create', admin, {
        id: 'viewer',
        name: 'Viewer',
        perms: ['device.view_device'],
      })
    ).json().data;
    expect(role.perms).toEqual(['device.view_device']);
    const bad = await call('POST', '/api/admin/roles/create', admin, { name: 'Bad', perms: ['not a perm'] });
    expect(bad.statusCode).toBe(400);

    const u = await makeUser(t.app);
    const set = await call('POST', '/api/admin/memberships/set', admin, {
      userId: u.id,
      orgId: 'lab-east',
      roleId: 'viewer',
    });
    expect(set.json().data).toMatchObject({ userId: u.id, orgId: 'lab-east', roleId: 'viewer' });
    const switched = await call('POST', '/api/user/switch-org', u.headers, { orgId: 'lab-east' });
    expect(switched.json().data).toMatchObject({
      perms: ['device.view_device'],
      groupResource: { id: 'lab-east' },
    });

    expect((await call('POST', '/api/admin/orgs/delete', admin, { id: 'lab-east' })).json().error).toBe(
      'rbac.in_use',
    );
    expect((await call('POST', '/api/admin/roles/delete', admin, { id: 'viewer' })).json().error).toBe(
      'rbac.in_use',
    );
    expect((await call('POST', '/api/admin/orgs/delete', admin, { id: 'Default' })).json().error).toBe(
      'rbac.builtin_protected',
    );
    expect(
      (await call('POST', '/api/admin/roles/update', admin, { id: 'superadmin', perms: [] })).json().error,
    ).toBe('rbac.builtin_protected');

    await call('POST', '/api/admin/memberships/remove', admin, { userId: u.id, orgId: 'lab-east' });
    expect((await call('POST', '/api/admin/orgs/delete', admin, { id: 'lab-east' })).json().code).toBe(20000);
    expect((await call('POST', '/api/admin/roles/delete', admin, { id: 'viewer' })).json().code).toBe(20000);
    // The user fell back to their remaining organisation.
    const me = (await call('GET', '/api/user/info', u.headers)).json().data;
    expect(me.groupResource.id).toBe('test-org');
  });

  describe('an organisation admin', () => {
    let orgAdmin: TestUser;
    let member: TestUser;
    let outsider: TestUser;
    const orgAdminPerms = [
      'rbac.view_user',
      'rbac.add_user',
      'rbac.change_user',
      'rbac.del_user',
      'rbac.view_membership',
      'rbac.change_membership',
      'rbac.view_organization',
      'audit.view_log',
      'device.view_device',
    ];

    beforeAll(async () => {
      orgAdmin = await makeUser(t.app, { orgId: 'org-west', perms: orgAdminPerms });
      member = await makeUser(t.app, { orgId: 'org-west', perms: ['device.view_device'] });
      outsider = await makeUser(t.app, { orgId: 'org-north', perms: [] });
    });

    it('sees only the members of their organisation', async () => {
      const list = (await call('GET', '/api/admin/users?pageSize=200', orgAdmin.headers)).json().data;
      const names = list.items.map((u: { username: string }) => u.username);
      expect(names).toEqual(expect.arrayContaining([orgAdmin.username, member.username]));
      expect(names).not.toContain(outsider.username);
      expect(names).not.toContain('admin');
      const forced = (await call('GET', '/api/admin/users?orgId=org-north', orgAdmin.headers)).json().data;
      expect(forced.items.map((u: { username: string }) => u.username)).not.toContain(outsider.username);
      const orgs = (await call('GET', '/api/admin/orgs', orgAdmin.headers)).json().data;
      expect(orgs.map((o: { id: string }) => o.id)).toEqual(['org-west']);
    });

    it('cannot touch users outside the organisation or with global powers, and hears "not found"', async () => {
      const other = await call('POST', '/api/admin/users/update', orgAdmin.headers, {
        id: outsider.id,
        name: 'pwned',
      });
      expect(other.statusCode).toBe(404);
      const adminId = (
        await t.storage.query<{ id: string }>("select id from users where username = 'admin'")
      )[0].id;
      expect(
        (await call('POST', '/api/admin/users/deactivate', orgAdmin.headers, { id: adminId })).statusCode,
      ).toBe(404);
      const outsiderInfo = (await call('GET', '/api/user/info', outsider.headers)).json().data;
      expect(outsiderInfo.name).toBe(outsider.username);
    });

    it('cannot grant roles beyond their own permissions nor act in another organisation', async () => {
      const up = await call('POST', '/api/admin/memberships/set', orgAdmin.headers, {
        userId: member.id,
        orgId: 'org-west',
        roleId: 'superadmin',
      });
      expect(up.statusCode).toBe(403);
      const elsewhere = await call('POST', '/api/admin/memberships/set', orgAdmin.headers, {
        userId: member.id,
        orgId: 'SuperAdmin',
        roleId: 'org_user',
      });
      expect(elsewhere.statusCode).toBe(404);
      const orgCreate = await call('POST', '/api/admin/orgs/create', orgAdmin.headers, { name: 'Mine' });
      expect(orgCreate.statusCode).toBe(403);
      const created = await call('POST', '/api/admin/users/create', orgAdmin.headers, {
        username: 'west-new',
        orgId: 'SuperAdmin',
      });
      expect(created.statusCode).toBe(404);
      const inOwn = await call('POST', '/api/admin/users/create', orgAdmin.headers, {
        username: 'west-new',
        roleId: 'org_user',
      });
      expect(inOwn.statusCode).toBe(403); // org_user holds device perms this admin does not
    });

    it('reads only the audit entries of the organisation’s members', async () => {
      await call('POST', '/api/v1/common/resources/cache/', member.headers, { resources: ['a'] });
      await call('POST', '/api/v1/common/resources/cache/', outsider.headers, { resources: ['b'] });
      await vi.waitFor(async () => {
        const rows = await t.storage.query('select 1 from audit_log where user_id = $1', [outsider.id]);
        expect(rows.length).toBeGreaterThan(0);
      });
      const entries = (await call('GET', '/api/admin/audit?pageSize=200', orgAdmin.headers)).json().data
        .items;
      const users = new Set(entries.map((e: { userId: string }) => e.userId));
      expect(users.has(member.id)).toBe(true);
      expect(users.has(outsider.id)).toBe(false);
    });
  });

  it('records sign-ins, failed sign-ins, sign-outs and state changes for the administrator to read', async () => {
    const token = await signIn('admin', ADMIN_PASSWORD);
    await t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      payload: { username: encrypt('admin'), password: encrypt('nope-nope') },
    });
    await call('POST', '/api/user/logout', { authorization: token });
    const read = async (q: string) => (await call('GET', `/api/admin/audit?${q}`, admin)).json().data;
    const logins = await read('action=login&result=ok');
    expect(logins.items[0]).toMatchObject({
      username: 'admin',
      result: 'ok',
      detail: { method: 'password' },
    });
    expect(logins.items[0].ip).toBeTruthy();
    const failed = await read('action=login&result=failed');
    expect(failed.items[0]).toMatchObject({ username: 'admin', result: 'failed' });
    // The route layer writes entries of state-changing calls after answering: wait for them.
    await vi.waitFor(async () => {
      expect((await read('action=userLogout')).total).toBeGreaterThan(0);
      expect((await read('action=adminUserCreate&result=ok')).total).toBeGreaterThan(0);
      const denied = await read('result=denied');
      expect(denied.items.some((e: { action: string }) => e.action === 'adminUserCreate')).toBe(true);
    });
  });

  it('answers the licence detail from configuration and the board count', async () => {
    const res = await call('GET', '/api/v1/xpack/license/detail', admin);
    const [{ n }] = await t.storage.query<{ n: string }>(
      'select count(*) as n from boards where retired_at is null',
    );
    expect(res.json().data).toEqual({
      date_expired: '2030-06-30',
      corporation: 'SpacemiT Lab',
      asset_count: 42,
      current_asset_count: Number(n),
      is_valid: true,
    });
    const settings = (await t.app.inject({ method: 'GET', url: '/api/v1/settings/public/' })).json().data;
    expect(settings.XPACK_ENABLED).toBe(true);
  });
});

describe('a first start without BIANBU_ADMIN_PASSWORD', () => {
  let t: TestApp;
  let printed: string[] = [];
  beforeAll(async () => {
    const write = process.stdout.write.bind(process.stdout);
    const spy = vi
      .spyOn(process.stdout, 'write')
      .mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
        printed.push(String(chunk));
        return write(chunk, ...(rest as []));
      });
    try {
      t = await makeTestApp({ env: { LOG_LEVEL: 'warn' } });
    } finally {
      spy.mockRestore();
    }
  });
  afterAll(() => t?.close());

  it('prints a random admin password once, which signs in, and never prints it again', async () => {
    const text = printed.join('');
    const m = text.match(/Password \(shown once\): (\S+)/);
    expect(m).not.toBeNull();
    const password = (m as RegExpMatchArray)[1];
    expect(password.length).toBeGreaterThanOrEqual(16);
    const publicKey = (await t.app.inject({ method: 'GET', url: '/api/user/public-key' })).json().data
      .publicKey;
    const enc = (v: string) =>
      crypto
        .publicEncrypt(
          { key: publicKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
          Buffer.from(v),
        )
        .toString('base64');
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      payload: { username: enc('admin'), password: enc(password) },
    });
    expect(res.json().code).toBe(20000);
    const stored = await t.storage.query<{ password_hash: string }>(
      "select password_hash from users where username = 'admin'",
    );
    expect(stored[0].password_hash).not.toContain(password);

    printed = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    try {
      await seedIdentity(t.app);
    } finally {
      spy.mockRestore();
    }
    expect(printed.join('')).not.toContain(password);
  });

  it('answers the licence detail "not found" with XPACK off, even to a holder of settings.change_license', async () => {
    const u = await makeUser(t.app, { perms: ['settings.change_license'] });
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/xpack/license/detail',
      headers: u.headers,
    });
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toBe('license.disabled');
  });
});
