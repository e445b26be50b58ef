// The keymap calls on the real app: sign-in required, the shape and the chords checked at the
// boundary with stable codes, each user's keymap their own, and what is saved is what is read back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

describe('keymap calls', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    t = await makeTestApp();
    alice = await makeUser(t.app, { username: 'alice_km' });
    bob = await makeUser(t.app, { username: 'bob_km' });
  });
  afterAll(() => t?.close());

  const get = (u?: TestUser) =>
    t.app.inject({ method: 'GET', url: '/api/user/keymap', headers: u?.headers ?? {} });
  const save = (u: TestUser | undefined, payload: unknown) =>
    t.app.inject({
      method: 'POST',
      url: '/api/user/keymap/save',
      headers: u?.headers ?? {},
      payload: payload as object,
    });

  it('refuses both calls without a sign-in', async () => {
    const r1 = await get();
    expect(r1.statusCode).toBe(401);
    expect(r1.json().error).toBe('auth.required');
    const r2 = await save(undefined, { preset: 'shift', overrides: {} });
    expect(r2.statusCode).toBe(401);
  });

  it('answers the default keymap to a user who never saved one', async () => {
    const r = await get(alice);
    expect(r.json()).toMatchObject({
      code: 20000,
      data: { preset: 'default', overrides: {}, updatedAt: null },
    });
  });

  it('stores a preset and overrides and reads them back', async () => {
    const body = { preset: 'shift', overrides: { newShell: ['Ctrl+Shift+KeyY'], search: [] } };
    const r = await save(alice, body);
    expect(r.json().code, r.body).toBe(20000);
    expect(r.json().data).toMatchObject(body);
    expect(typeof r.json().data.updatedAt).toBe('string');
    const back = await get(alice);
    expect(back.json().data).toMatchObject(body);
    // A second save replaces the first whole.
    await save(alice, { preset: 'tmux', overrides: {} });
    expect((await get(alice)).json().data).toMatchObject({ preset: 'tmux', overrides: {} });
  });

  it("keeps one user's keymap from another", async () => {
    await save(alice, { preset: 'shift', overrides: { close: ['Ctrl+Shift+KeyJ'] } });
    await save(bob, { preset: 'tmux', overrides: { maximize: ['Ctrl+KeyB KeyM'] } });
    expect((await get(alice)).json().data).toMatchObject({
      preset: 'shift',
      overrides: { close: ['Ctrl+Shift+KeyJ'] },
    });
    expect((await get(bob)).json().data).toMatchObject({
      preset: 'tmux',
      overrides: { maximize: ['Ctrl+KeyB KeyM'] },
    });
    // A userId in the body names nobody: it is not part of the call and is not taken.
    const r = await save(bob, { preset: 'default', overrides: {}, userId: alice.id });
    expect(r.json().code).toBe(20000);
    expect((await get(alice)).json().data.preset).toBe('shift');
  });

  it.each([
    ['an unknown action', { preset: 'shift', overrides: { launchRocket: ['Ctrl+Shift+KeyY'] } }, 'overrides'],
    ['an unknown preset', { preset: 'emacs', overrides: {} }, 'preset'],
    [
      'a malformed chord',
      { preset: 'shift', overrides: { newShell: ['Ctrl+Banana'] } },
      'overrides.newShell.0',
    ],
    [
      'modifiers out of order',
      { preset: 'shift', overrides: { newShell: ['Shift+Ctrl+KeyY'] } },
      'overrides.newShell.0',
    ],
    ['a bare letter', { preset: 'shift', overrides: { newShell: ['KeyY'] } }, 'overrides.newShell.0'],
    [
      'three strokes',
      { preset: 'tmux', overrides: { newShell: ['Ctrl+KeyB KeyC KeyC'] } },
      'overrides.newShell.0',
    ],
    [
      'too many chords',
      { preset: 'shift', overrides: { newShell: ['F1', 'F2', 'F3', 'F4'] } },
      'overrides.newShell',
    ],
  ])('refuses %s with request.invalid and the field at fault', async (_name, body, field) => {
    const r = await save(alice, body);
    expect(r.statusCode).toBe(400);
    expect(r.json().code).toBe(40000);
    expect(r.json().error).toBe('request.invalid');
    expect(r.json().fields.map((f: { path: string }) => f.path)).toContain(field);
  });

  it('refuses a chord the browser keeps for itself with keymap.reserved', async () => {
    const before = (await get(alice)).json().data;
    const r = await save(alice, { preset: 'shift', overrides: { newShell: ['Ctrl+KeyT'] } });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toBe('keymap.reserved');
    expect(r.json().fields[0].path).toBe('overrides.newShell');
    const k = await save(alice, { preset: 'shift', overrides: { search: ['Ctrl+KeyK'] } });
    expect(k.json().error).toBe('keymap.reserved');
    // Nothing was stored by the refused calls.
    expect((await get(alice)).json().data).toEqual(before);
  });

  it('refuses two actions on one chord, and a chord that is the prefix of a sequence, with keymap.conflict', async () => {
    const dup = await save(alice, { preset: 'shift', overrides: { newShell: ['Ctrl+Shift+KeyF'] } });
    expect(dup.statusCode).toBe(400);
    expect(dup.json().error).toBe('keymap.conflict');
    expect(dup.json().message).toMatch(/Ctrl\+Shift\+KeyF/);
    const prefix = await save(alice, { preset: 'tmux', overrides: { toggleFiles: ['Ctrl+KeyB'] } });
    expect(prefix.json().error).toBe('keymap.conflict');
  });

  it('refuses a body past the size limit', async () => {
    const r = await t.app.inject({
      method: 'POST',
      url: '/api/user/keymap/save',
      headers: { ...alice.headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ preset: 'shift', overrides: {}, pad: 'x'.repeat(40_000) }),
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toBe('request.too_large');
  });
});
