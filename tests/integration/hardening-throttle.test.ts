// Sign-in limits hold under parallel attempts: an attempt reserves its place in the failure counter
// before the secret is checked, so N parallel guesses cost N attempts and only as many as the limit
// are ever checked. Sequential behaviour is unchanged (the 6th password attempt answers 429).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import { LIMITS } from '#server/identity/identity.service.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { loginEncryptor } from './helpers/sign-in.ts';

const ADMIN_PASSWORD = 'Adm1n-secret!';
const PASSWORD_LIMIT = LIMITS.loginUser('x').max;

let addressCounter = 0;
/** A fresh client address, so that the per-address limits never interfere with the per-account one. */
const freshAddress = () => {
  addressCounter++;
  return `198.18.${Math.floor(addressCounter / 250)}.${(addressCounter % 250) + 1}`;
};

describe('sign-in limits under parallel attempts', () => {
  let t: TestApp;
  let clock: ManualClock;
  let encrypt: (s: string) => string;
  let admin: string;

  beforeAll(async () => {
    clock = new ManualClock(Date.parse('2026-03-01T08:00:00Z'));
    t = await makeTestApp({ env: { BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD }, clock });
    encrypt = await loginEncryptor(t.app);
    const res = await login('admin', ADMIN_PASSWORD);
    expect(res.json().code, res.body).toBe(20000);
    admin = res.json().data.accessToken;
  });
  afterAll(() => t?.close());

  function login(username: string, password: string, remoteAddress = freshAddress()) {
    return t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      remoteAddress,
      payload: { username: encrypt(username), password: encrypt(password) },
    });
  }

  async function makeAccount(username: string, password: string) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/admin/users/create',
      headers: { authorization: admin },
      payload: { username, password },
    });
    expect(res.json().code, res.body).toBe(20000);
  }

  it(`checks at most ${PASSWORD_LIMIT} of 100 parallel password guesses for one account`, async () => {
    expect(PASSWORD_LIMIT).toBe(5);
    await makeAccount('victim', 'Right-pass1');
    const RIGHT = 50;
    const attempts = Array.from({ length: 100 }, (_, i) => (i === RIGHT ? 'Right-pass1' : `wrong-${i}`));
    const answers = await Promise.all(attempts.map((p) => login('victim', p)));
    const statuses = answers.map((a) => a.statusCode);
    const checked = statuses.filter((s) => s !== 429).length;
    expect(checked, JSON.stringify(statuses)).toBeLessThanOrEqual(PASSWORD_LIMIT);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(100 - PASSWORD_LIMIT);
    // The right password, when it was among the refused, got no token.
    const right = answers[RIGHT];
    if (right.statusCode === 429) {
      expect(right.json().data).toBeNull();
      expect(JSON.stringify(right.json())).not.toMatch(/bbt_/);
      // The burst used up the account's attempts: even the right password waits for the window.
      expect((await login('victim', 'Right-pass1')).statusCode).toBe(429);
    } else expect(right.statusCode).toBe(200);
    const failed = await t.storage.query<{ n: number }>(
      "select count(*)::int as n from audit_log where action = 'login' and result = 'failed' and username = 'victim'",
    );
    expect(failed[0].n).toBeLessThanOrEqual(PASSWORD_LIMIT);
    clock.advance(16 * 60_000);
    expect((await login('victim', 'Right-pass1')).statusCode).toBe(200);
  });

  it('keeps the sequential behaviour: five failures, then 429 even to the right password; success clears', async () => {
    await makeAccount('steady', 'Steady-pass1');
    expect((await login('steady', 'wrong-0')).statusCode).toBe(400);
    expect((await login('steady', 'Steady-pass1')).statusCode).toBe(200);
    // The success cleared the account's counter: five more failures are allowed.
    for (let i = 0; i < PASSWORD_LIMIT; i++)
      expect((await login('steady', `wrong-${i}`)).statusCode).toBe(400);
    const locked = await login('steady', 'Steady-pass1');
    expect(locked.statusCode).toBe(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    clock.advance(16 * 60_000);
    expect((await login('steady', 'Steady-pass1')).statusCode).toBe(200);
  });

  it('does not count successful sign-ins against the address limit', async () => {
    await makeAccount('busy', 'Busy-pass1');
    const address = freshAddress();
    for (let i = 0; i < 25; i++) expect((await login('busy', 'Busy-pass1', address)).statusCode).toBe(200);
  });

  it('sends one phone code for 20 parallel requests within the resend pause', async () => {
    const phone = '13900000001';
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        t.app.inject({
          method: 'POST',
          url: '/api/user/phone-code',
          remoteAddress: freshAddress(),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ phone }).toString(),
        }),
      ),
    );
    const statuses = answers.map((a) => a.statusCode);
    expect(statuses.filter((s) => s === 200).length, JSON.stringify(statuses)).toBe(1);
    expect(statuses.filter((s) => s === 429).length).toBe(19);
  });

  it('checks at most five of 50 parallel phone-code guesses', async () => {
    const phone = '13900000002';
    const sent = await t.app.inject({
      method: 'POST',
      url: '/api/user/phone-code',
      remoteAddress: freshAddress(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ phone }).toString(),
    });
    expect(sent.statusCode).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        t.app.inject({
          method: 'POST',
          url: '/api/user/phone-login',
          remoteAddress: freshAddress(),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ phone, code: String(100000 + i) }).toString(),
        }),
      ),
    );
    const statuses = answers.map((a) => a.statusCode);
    expect(statuses.filter((s) => s !== 429).length, JSON.stringify(statuses)).toBeLessThanOrEqual(
      LIMITS.phoneLoginPhone('x').max,
    );
  });

  it('checks at most ten of 40 parallel sequence-code guesses from one address', async () => {
    const address = freshAddress();
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        t.app.inject({
          method: 'POST',
          url: '/api/thridparty/rainier_login',
          remoteAddress: address,
          payload: { sequenceCode: `sq_${crypto.randomBytes(32).toString('base64url')}` },
        }),
      ),
    );
    const statuses = answers.map((a) => a.statusCode);
    expect(statuses.filter((s) => s !== 429).length, JSON.stringify(statuses)).toBeLessThanOrEqual(
      LIMITS.sequenceIp('x').max,
    );
  });
});
