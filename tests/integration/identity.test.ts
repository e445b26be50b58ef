// Sign-in flows other than single sign-on (password, phone code, sequence code), the tokens they end
// in (expiry, revocation, single session), API keys and the avatar.
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser } from './helpers/users.ts';

const ADMIN_PASSWORD = 'Adm1n-secret!';
const MINUTE = 60_000;

let ipCounter = 0;
/** A fresh client address per test, so per-address limits of one test never reach another. */
const freshIp = () => `203.0.113.${++ipCounter}`;

function encryptFor(publicKey: string) {
  // What WebCrypto's RSA-OAEP with SHA-256 produces, done with node:crypto.
  return (text: string) =>
    crypto
      .publicEncrypt(
        { key: publicKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
        Buffer.from(text),
      )
      .toString('base64');
}

// A real PNG of the given size (solid colour), written by hand: signature, IHDR, IDAT, IEND.
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}
function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0x7f)]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function multipart(field: string, filename: string, type: string, data: Buffer) {
  const boundary = `----bianbu${crypto.randomBytes(8).toString('hex')}`;
  const payload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`,
    ),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

describe('identity: sign-in flows, tokens, API keys and avatar', () => {
  let t: TestApp;
  let clock: ManualClock;
  let encrypt: (s: string) => string;

  beforeAll(async () => {
    clock = new ManualClock(Date.parse('2026-03-01T08:00:00Z'));
    t = await makeTestApp({
      env: { BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD, BIANBU_TOKEN_TTL_HOURS: '2' },
      clock,
    });
    const res = await t.app.inject({ method: 'GET', url: '/api/user/public-key' });
    const publicKey: string = res.json().data.publicKey;
    expect(publicKey).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    encrypt = encryptFor(publicKey);
  });
  afterAll(() => t?.close());

  const login = (username: string, password: string, ip = freshIp()) =>
    t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      remoteAddress: ip,
      payload: { username: encrypt(username), password: encrypt(password) },
    });

  async function adminToken(): Promise<string> {
    const res = await login('admin', ADMIN_PASSWORD);
    expect(res.json().code).toBe(20000);
    return res.json().data.accessToken;
  }

  async function makeAccount(username: string, password: string, extra: Record<string, unknown> = {}) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/admin/users/create',
      headers: { authorization: await adminToken() },
      payload: { username, password, ...extra },
    });
    expect(res.json().code, res.body).toBe(20000);
    return res.json().data.user as { id: string; username: string };
  }

  const info = (token: string) =>
    t.app.inject({ method: 'GET', url: '/api/user/info', headers: { authorization: token } });

  describe('password sign-in', () => {
    it('signs in with RSA-OAEP encrypted, trimmed credentials and answers a working token', async () => {
      await makeAccount('alice', 'Al1ce-pass');
      const res = await login('  alice ', ' Al1ce-pass  ');
      expect(res.statusCode).toBe(200);
      const token = res.json().data.accessToken;
      expect(token).toMatch(/^bbt_/);
      const me = await info(token);
      expect(me.json().data).toMatchObject({ username: 'alice', groupResource: { id: 'Default' } });
      const audit = await t.storage.query<{ result: string; detail: { method: string } }>(
        "select result, detail from audit_log where action = 'login' and username = 'alice' order by id desc limit 1",
      );
      expect(audit[0]).toMatchObject({ result: 'ok', detail: { method: 'password' } });
    });

    it('answers a wrong password and an unknown user with the same message, and just as slowly', async () => {
      await makeAccount('bob', 'B0b-password');
      const timed = async (u: string) => {
        const started = performance.now();
        const res = await login(u, 'not-the-password');
        return { res, ms: performance.now() - started };
      };
      const wrong = [await timed('bob'), await timed('bob')];
      const unknown = [await timed('nobody-at-all'), await timed('nobody-at-all')];
      for (const { res } of [...wrong, ...unknown]) {
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({
          message: 'Incorrect username or password',
          error: 'auth.bad_credentials',
          data: null,
        });
      }
      // An unknown name still costs a full password verification (no fast path that reveals it).
      const fastest = (xs: { ms: number }[]) => Math.min(...xs.map((x) => x.ms));
      expect(fastest(unknown)).toBeGreaterThan(fastest(wrong) * 0.3);
      const failed = await t.storage.query<{ n: string }>(
        "select count(*) as n from audit_log where action = 'login' and result = 'failed' and username in ('bob', 'nobody-at-all')",
      );
      expect(Number(failed[0].n)).toBe(4);
    });

    it('answers 400 and signs nobody in for a tampered or undecryptable payload', async () => {
      await makeAccount('carol', 'Car0l-pass');
      const good = encrypt('Car0l-pass');
      const bytes = Buffer.from(good, 'base64');
      bytes[10] ^= 0xff;
      const tampered = await t.app.inject({
        method: 'POST',
        url: '/api/user/login',
        payload: { username: encrypt('carol'), password: bytes.toString('base64') },
      });
      expect(tampered.statusCode).toBe(400);
      expect(tampered.json()).toMatchObject({ error: 'auth.payload_undecryptable', data: null });

      const plain = await t.app.inject({
        method: 'POST',
        url: '/api/user/login',
        payload: {
          username: Buffer.from('carol').toString('base64'),
          password: Buffer.from('Car0l-pass').toString('base64'),
        },
      });
      expect(plain.statusCode).toBe(400);
      expect(plain.json().error).toBe('auth.payload_undecryptable');

      const notBase64 = await t.app.inject({
        method: 'POST',
        url: '/api/user/login',
        payload: { username: 'carol!', password: '***' },
      });
      expect(notBase64.statusCode).toBe(400);
    });

    it('answers 429 with Retry-After after repeated failures, even to the right password, until the window passes', async () => {
      await makeAccount('dave', 'Dave-pass1');
      for (let i = 0; i < 5; i++) expect((await login('dave', `wrong-${i}`)).statusCode).toBe(400);
      const locked = await login('dave', 'Dave-pass1');
      expect(locked.statusCode).toBe(429);
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
      expect(locked.json().data).toBeNull();
      clock.advance(16 * MINUTE);
      const after = await login('dave', 'Dave-pass1');
      expect(after.statusCode).toBe(200);
    });

    it('limits failures per address across usernames', async () => {
      const ip = freshIp();
      let last = 0;
      for (let i = 0; i < 21; i++) last = (await login(`spray-${i}`, 'guess', ip)).statusCode;
      expect(last).toBe(429);
      expect((await login('spray-x', 'guess', freshIp())).statusCode).toBe(400);
    });
  });

  describe('tokens', () => {
    it('accepts the raw token, a quoted one and the Bearer scheme, and answers 401 without one', async () => {
      const u = await makeUser(t.app);
      expect((await info(u.token)).json().code).toBe(20000);
      expect((await info(`"${u.token}"`)).json().code).toBe(20000);
      expect((await info(`Bearer ${u.token}`)).json().code).toBe(20000);
      const none = await t.app.inject({ method: 'GET', url: '/api/user/info' });
      expect(none.statusCode).toBe(401);
    });

    it('answers 50014 once the token lifetime has passed', async () => {
      await makeAccount('erin', 'Er1n-pass!');
      const token = (await login('erin', 'Er1n-pass!')).json().data.accessToken;
      expect((await info(token)).json().code).toBe(20000);
      clock.advance(2 * 60 * MINUTE + 1000);
      const expired = await info(token);
      expect(expired.statusCode).toBe(200);
      expect(expired.json().code).toBe(50014);
    });

    it('revokes the token on logout: a later use answers 50008', async () => {
      await makeAccount('frank', 'Fr4nk-pass');
      const token = (await login('frank', 'Fr4nk-pass')).json().data.accessToken;
      const other = (await login('frank', 'Fr4nk-pass')).json().data.accessToken;
      const out = await t.app.inject({
        method: 'POST',
        url: '/api/user/logout',
        headers: { authorization: token },
      });
      expect(out.json().code).toBe(20000);
      expect((await info(token)).json().code).toBe(50008);
      // Only the token of that call is revoked; another sign-in of the same user goes on.
      expect((await info(other)).json().code).toBe(20000);
      // The route layer writes this entry after answering: wait for it.
      await vi.waitFor(async () => {
        const audit = await t.storage.query<{ n: string }>(
          "select count(*) as n from audit_log where action = 'userLogout' and username = 'frank' and result = 'ok'",
        );
        expect(Number(audit[0].n)).toBe(1);
      });
    });
  });

  describe('phone sign-in', () => {
    async function outboxCode(phone: string): Promise<string> {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/admin/phone-outbox?phone=${encodeURIComponent(phone)}`,
        headers: { authorization: await adminToken() },
      });
      expect(res.json().code).toBe(20000);
      const body: string = res.json().data.items[0].body;
      const m = body.match(/\b(\d{6})\b/);
      if (!m) throw new Error(`no code in ${body}`);
      return m[1];
    }
    const sendCode = (phone: string, ip = freshIp()) =>
      t.app.inject({
        method: 'POST',
        url: '/api/user/phone-code',
        remoteAddress: ip,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ phone }).toString(),
      });
    const phoneLogin = (phone: string, code: string, ip = freshIp()) =>
      t.app.inject({
        method: 'POST',
        url: '/api/user/phone-login',
        remoteAddress: ip,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ phone, code }).toString(),
      });

    it('signs in with the code from the outbox once, creating the account of a new number', async () => {
      const phone = '13800000001';
      const sent = await sendCode(` ${phone} `);
      expect(sent.json()).toMatchObject({ code: 20000, data: { expiresInSeconds: 300 } });
      const code = await outboxCode(phone);
      const res = await phoneLogin(phone, ` ${code} `);
      expect(res.json().code).toBe(20000);
      const me = (await info(res.json().data.accessToken)).json().data;
      expect(me.phone).toBe(phone);
      // Single use.
      const again = await phoneLogin(phone, code);
      expect(again.statusCode).toBe(400);
      expect(again.json().error).toBe('auth.code_invalid');
    });

    it('refuses an expired code and a resend within a minute', async () => {
      const phone = '13800000002';
      expect((await sendCode(phone)).json().code).toBe(20000);
      const tooSoon = await sendCode(phone);
      expect(tooSoon.statusCode).toBe(429);
      expect(Number(tooSoon.headers['retry-after'])).toBeGreaterThan(0);
      const code = await outboxCode(phone);
      clock.advance(5 * MINUTE + 1000);
      const late = await phoneLogin(phone, code);
      expect(late.statusCode).toBe(400);
      expect(late.json().error).toBe('auth.code_invalid');
      // A new code after the resend pause works, and only the newest code counts.
      expect((await sendCode(phone)).json().code).toBe(20000);
      const fresh = await outboxCode(phone);
      expect((await phoneLogin(phone, fresh)).json().code).toBe(20000);
    });

    it('burns a code after repeated wrong guesses and then limits the phone', async () => {
      const phone = '13800000003';
      await sendCode(phone);
      const code = await outboxCode(phone);
      const wrong = code === '000000' ? '111111' : '000000';
      for (let i = 0; i < 5; i++) expect((await phoneLogin(phone, wrong)).statusCode).toBe(400);
      const blocked = await phoneLogin(phone, code);
      expect(blocked.statusCode).toBe(429);
      clock.advance(16 * MINUTE);
      const burnt = await phoneLogin(phone, code);
      expect(burnt.statusCode).toBe(400);
    });

    it('lets no one but a global administrator read the outbox', async () => {
      const u = await makeUser(t.app, { perms: ['rbac.view_user'] });
      const res = await t.app.inject({ method: 'GET', url: '/api/admin/phone-outbox', headers: u.headers });
      expect(res.statusCode).toBe(403);
    });
  });

  describe('third-party sequence codes', () => {
    const mint = async (authorization: string, payload: Record<string, unknown>) =>
      t.app.inject({
        method: 'POST',
        url: '/api/admin/sequence-codes/create',
        headers: { authorization },
        payload,
      });
    const rainier = (sequenceCode: string, ip = freshIp()) =>
      t.app.inject({
        method: 'POST',
        url: '/api/thridparty/rainier_login',
        remoteAddress: ip,
        payload: { sequenceCode },
      });

    it('signs in once with a minted code and refuses its reuse', async () => {
      const minted = await mint(await adminToken(), {
        username: 'partner-user',
        createIfMissing: true,
        name: 'Partner',
      });
      expect(minted.json().code).toBe(20000);
      const { sequenceCode } = minted.json().data;
      expect(Buffer.from(sequenceCode.slice(3), 'base64url').length).toBeGreaterThanOrEqual(16);
      const first = await rainier(sequenceCode);
      expect(first.json().code).toBe(20000);
      expect((await info(first.json().data.accessToken)).json().data.username).toBe('partner-user');
      const second = await rainier(sequenceCode);
      expect(second.statusCode).toBe(400);
      expect(second.json().error).toBe('auth.sequence_invalid');
    });

    it('refuses an expired code', async () => {
      const minted = await mint(await adminToken(), { username: 'partner-user', ttlSeconds: 30 });
      clock.advance(31_000);
      expect((await rainier(minted.json().data.sequenceCode)).statusCode).toBe(400);
    });

    it('needs the permission to mint codes', async () => {
      const u = await makeUser(t.app, { perms: ['device.view_device'] });
      const res = await mint(u.token, { username: u.username });
      expect(res.statusCode).toBe(403);
    });

    it('limits guesses per address', async () => {
      const ip = freshIp();
      let last = 0;
      for (let i = 0; i < 11; i++)
        last = (await rainier(`sq_${crypto.randomBytes(32).toString('base64url')}`, ip)).statusCode;
      expect(last).toBe(429);
    });
  });

  describe('API keys', () => {
    it('shows a new key in full once, then only its hint; the key authenticates', async () => {
      const u = await makeUser(t.app);
      const first = await t.app.inject({ method: 'GET', url: '/api/apikey/get-key', headers: u.headers });
      const key: string = first.json().data.apiKey;
      expect(key).toMatch(/^bbk_/);
      const second = await t.app.inject({ method: 'GET', url: '/api/apikey/get-key', headers: u.headers });
      expect(second.json().data.apiKey).toBeNull();
      expect(second.json().data.hint).toBe(first.json().data.hint);
      expect(key.startsWith(second.json().data.hint.slice(0, 8))).toBe(true);
      expect((await info(key)).json().data.username).toBe(u.username);
    });

    it('refreshes the key: the old one stops working at once', async () => {
      const u = await makeUser(t.app);
      const old = (
        await t.app.inject({ method: 'GET', url: '/api/apikey/get-key', headers: u.headers })
      ).json().data.apiKey;
      const fresh = (
        await t.app.inject({ method: 'GET', url: '/api/apikey/refresh-key', headers: u.headers })
      ).json().data.apiKey;
      expect(fresh).toMatch(/^bbk_/);
      expect(fresh).not.toBe(old);
      expect((await info(old)).json().code).toBe(50008);
      expect((await info(fresh)).json().code).toBe(20000);
      // A key cannot mint keys: a leaked one must not lock its owner out.
      const byKey = await t.app.inject({
        method: 'GET',
        url: '/api/apikey/refresh-key',
        headers: { authorization: fresh },
      });
      expect(byKey.statusCode).toBe(403);
    });
  });

  describe('avatar', () => {
    const upload = (headers: Record<string, string>, field: string, data: Buffer, type = 'image/png') => {
      const body = multipart(field, 'avatar.png', type, data);
      return t.app.inject({
        method: 'POST',
        url: '/api/user/avatar',
        headers: { ...headers, ...body.headers },
        payload: body.payload,
      });
    };

    it('stores a valid image, serves it back by the returned URL and shows it in user info', async () => {
      const u = await makeUser(t.app);
      const image = png(200, 180);
      const res = await upload(u.headers, 'avatar', image);
      expect(res.json().code, res.body).toBe(20000);
      const url: string = res.json().data.files.avatar;
      expect(url).toMatch(/^\/api\/user\/avatar\/.+\.png$/);
      const got = await t.app.inject({ method: 'GET', url });
      expect(got.statusCode).toBe(200);
      expect(got.headers['content-type']).toBe('image/png');
      expect(got.rawPayload.equals(image)).toBe(true);
      expect((await info(u.token)).json().data.avatar).toBe(url);

      // Replacing it removes the old file.
      const next = await upload(u.headers, 'avatar', png(160, 160));
      expect(next.json().code).toBe(20000);
      expect((await t.app.inject({ method: 'GET', url })).statusCode).toBe(404);
    });

    it('refuses images that are too small, not images, truncated, too large or in another field', async () => {
      const u = await makeUser(t.app);
      const small = await upload(u.headers, 'avatar', png(149, 300));
      expect(small.statusCode).toBe(400);
      expect(small.json().error).toBe('avatar.too_small');

      const text = await upload(
        u.headers,
        'avatar',
        Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
        'image/png',
      );
      expect(text.json().error).toBe('avatar.not_image');

      const whole = png(200, 200);
      const cut = await upload(u.headers, 'avatar', whole.subarray(0, whole.length - 12));
      expect(cut.json().error).toBe('avatar.not_image');

      const huge = Buffer.concat([png(200, 200), Buffer.alloc(10_240 * 1024)]);
      const big = await upload(u.headers, 'avatar', huge);
      expect(big.statusCode).toBe(413);
      expect(big.json().error).toBe('avatar.too_large');

      const field = await upload(u.headers, 'picture', png(200, 200));
      expect(field.json().error).toBe('avatar.missing');
      expect((await info(u.token)).json().data.avatar).toBe('');
    });

    it('serves nothing for names that are not stored avatars', async () => {
      for (const name of ['..%2F..%2Fetc%2Fpasswd', 'x.png', 'a'.repeat(36)]) {
        expect((await t.app.inject({ method: 'GET', url: `/api/user/avatar/${name}` })).statusCode).toBe(404);
      }
    });
  });

  describe('the current user', () => {
    it('answers only the caller’s own data and switches only to the caller’s own organisations', async () => {
      const a = await makeUser(t.app, { perms: ['device.view_device'], orgId: 'org-a' });
      await makeUser(t.app, { orgId: 'org-b' });
      const me = (await info(a.token)).json().data;
      expect(me).toMatchObject({
        id: a.id,
        username: a.username,
        perms: ['device.view_device'],
        groupResource: { id: 'org-a' },
      });
      const sw = await t.app.inject({
        method: 'POST',
        url: '/api/user/switch-org',
        headers: a.headers,
        payload: { orgId: 'org-b' },
      });
      expect(sw.statusCode).toBe(404);
      const applies = await t.app.inject({ method: 'GET', url: '/api/user/apply-info', headers: a.headers });
      expect(applies.json()).toMatchObject({ code: 20000, data: [] });
    });
  });
});

describe('identity with the single-session setting', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp({ env: { BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD, BIANBU_SINGLE_SESSION: '1' } });
  });
  afterAll(() => t?.close());

  it('answers 50012 to an older token after a newer sign-in of the same user', async () => {
    const encrypt = encryptFor(
      (await t.app.inject({ method: 'GET', url: '/api/user/public-key' })).json().data.publicKey,
    );
    const signIn = async () =>
      (
        await t.app.inject({
          method: 'POST',
          url: '/api/user/login',
          payload: { username: encrypt('admin'), password: encrypt(ADMIN_PASSWORD) },
        })
      ).json().data.accessToken as string;
    const first = await signIn();
    const second = await signIn();
    const older = await t.app.inject({
      method: 'GET',
      url: '/api/user/info',
      headers: { authorization: first },
    });
    expect(older.json().code).toBe(50012);
    const newer = await t.app.inject({
      method: 'GET',
      url: '/api/user/info',
      headers: { authorization: second },
    });
    expect(newer.json().code).toBe(20000);
  });
});
