// Sharing across organisations (issue 38): an owner adds to a share group the people of any organisation
// they belong to (not only the current one), and an owner whose role holds `device.share_any_org` any
// active user; everyone else outside stays "not found", exactly like a user that does not exist.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFeature } from '#server/identity/identity.routes.ts';
import { shareFeature } from '#server/share/share.routes.ts';
import { SHARE_ANY_ORG_PERM } from '#shared/share.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { lifecycleOnly } from './leases.fixtures.ts';

const SHARE = ['device.view_share', 'device.add_share', 'device.change_share', 'device.del_share'];

describe('share groups across organisations', () => {
  let t: TestApp;
  let admin: TestUser;
  const post = (who: TestUser, url: string, payload: object) =>
    t.app.inject({ method: 'POST', url, headers: who.headers, payload }).then((r) => r.json());
  const get = (who: TestUser, url: string) =>
    t.app.inject({ method: 'GET', url, headers: who.headers }).then((r) => r.json());
  const addUser = (owner: TestUser, groupName: string, by: { userId?: string; phone?: string }) =>
    post(owner, '/api/device/share/add-share-user', { groupName, ...by });

  beforeAll(async () => {
    t = await makeTestApp({ features: [...lifecycleOnly(), shareFeature, identityFeature] });
    admin = await makeUser(t.app, { username: 'root', perms: ['*'], orgId: 'SuperAdmin' });
  });
  afterAll(() => t?.close());

  it('reaches the people of every organisation the owner belongs to, and no one else', async () => {
    const owner = await makeUser(t.app, { username: 'owner-a', perms: SHARE, orgId: 'org-a' });
    const guest = await makeUser(t.app, { username: 'guest-b', perms: SHARE, orgId: 'org-b' });
    await t.app.storage.query('update users set phone = $1 where id = $2', ['13700001111', guest.id]);
    expect((await post(owner, '/api/device/share/add-share-group', { groupName: 'bridge' })).code).toBe(
      20000,
    );

    // Another organisation's user: not found, by id and by phone.
    for (const by of [{ userId: guest.id }, { phone: '13700001111' }]) {
      const r = await addUser(owner, 'bridge', by);
      expect(r.code).toBe(40400);
      expect(r.error).toBe('share.user_not_found');
    }

    // An administrator puts the owner in org-b too (their current organisation stays org-a).
    const m = await post(admin, '/api/admin/memberships/set', {
      userId: owner.id,
      orgId: 'org-b',
      roleId: 'org_user',
    });
    expect(m.code, m.message).toBe(20000);
    expect((await get(owner, '/api/user/info')).data.groupResource.id).toBe('org-a');
    const added = await addUser(owner, 'bridge', { phone: '13700001111' });
    expect(added.code, added.message).toBe(20000);
    expect(added.data).toMatchObject({ userId: guest.id, username: 'guest-b' });
    const seen = await get(guest, '/api/device/share/fetch-group-info');
    expect(
      seen.data.groups.map((g: { groupName: string; ownerName: string }) => [g.groupName, g.ownerName]),
    ).toEqual([['bridge', 'owner-a']]);

    // Out of org-b again: a further user there is out of reach.
    const other = await makeUser(t.app, { username: 'other-b', perms: SHARE, orgId: 'org-b' });
    expect(
      (await post(admin, '/api/admin/memberships/remove', { userId: owner.id, orgId: 'org-b' })).code,
    ).toBe(20000);
    expect((await addUser(owner, 'bridge', { userId: other.id })).error).toBe('share.user_not_found');
  });

  it(`reaches any active user with ${SHARE_ANY_ORG_PERM}, never a deactivated one`, async () => {
    const wide = await makeUser(t.app, {
      username: 'wide',
      perms: [...SHARE, SHARE_ANY_ORG_PERM],
      orgId: 'org-c',
    });
    const narrow = await makeUser(t.app, { username: 'narrow', perms: SHARE, orgId: 'org-c' });
    const far = await makeUser(t.app, { username: 'far', perms: SHARE, orgId: 'org-d' });
    for (const owner of [wide, narrow])
      expect((await post(owner, '/api/device/share/add-share-group', { groupName: 'lab' })).code).toBe(20000);

    expect((await addUser(narrow, 'lab', { userId: far.id })).error).toBe('share.user_not_found');
    const r = await addUser(wide, 'lab', { userId: far.id });
    expect(r.code, r.message).toBe(20000);
    expect(r.data.username).toBe('far');

    const gone = await makeUser(t.app, { username: 'gone', perms: SHARE, orgId: 'org-d' });
    expect((await post(admin, '/api/admin/users/deactivate', { id: gone.id })).code).toBe(20000);
    expect((await addUser(wide, 'lab', { userId: gone.id })).error).toBe('share.user_not_found');
  });
});
