// X-Forwarded-For, -Proto and -Host are honoured only from a configured trusted proxy
// (BIANBU_TRUSTED_PROXIES). From anyone else the socket address is the client: rotating the header
// neither lifts the per-address limits nor forges the audit log, and X-Forwarded-Host does not steer
// the embedded sign-in provider's idea of its own origin.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Feature } from '#server/feature.ts';
import type { CallContext } from '#server/http/handlers.ts';
import { realtimeFeature } from '#server/realtime/realtime.feature.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { listenOnLoopback } from './helpers/realtime-app.ts';
import { loginEncryptor } from './helpers/sign-in.ts';
import { connectStomp, openSocket, wsUrl } from './helpers/stomp-client.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const ADMIN_PASSWORD = 'Adm1n-secret!';
const ADDRESS_LIMIT = 20; // LIMITS.loginIp

let counter = 0;
/** A header value that changes on every request, as an attacker rotating it would send. */
const rotating = () => {
  counter++;
  return `203.0.113.${(counter % 250) + 1}, 198.51.100.${(counter % 200) + 1}`;
};

const encryptorOf = (t: TestApp) => loginEncryptor(t.app);

function cookiesOf(setCookie: string | string[] | undefined): string {
  const lines = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie];
  return lines.map((l) => l.split(';')[0]).join('; ');
}

/** Starts a sign-in at the provider and answers the interaction page's path and its cookies. */
async function openInteraction(
  t: TestApp,
  publicUrl: string,
  headers: Record<string, string> = {},
  remoteAddress = '192.0.2.99',
) {
  const verifier = crypto.randomBytes(32).toString('base64url');
  const q = new URLSearchParams({
    client_id: 'bianbu-console',
    response_type: 'code',
    scope: 'openid profile',
    redirect_uri: `${publicUrl}/mainboard`,
    state: crypto.randomBytes(8).toString('hex'),
    code_challenge: crypto.createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const res = await t.app.inject({ method: 'GET', url: `/idp/auth?${q}`, headers, remoteAddress });
  expect(res.statusCode, res.body).toBeGreaterThanOrEqual(300);
  expect(res.statusCode).toBeLessThan(400);
  const location = String(res.headers.location);
  return {
    location,
    path: new URL(location, publicUrl).pathname,
    cookie: cookiesOf(res.headers['set-cookie']),
  };
}

describe('forwarded headers without a trusted proxy', () => {
  const PUBLIC = 'https://console.example';
  let t: TestApp;
  let encrypt: (s: string) => string;
  beforeAll(async () => {
    t = await makeTestApp({ env: { BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD, BIANBU_PUBLIC_URL: PUBLIC } });
    encrypt = await encryptorOf(t);
  });
  afterAll(() => t?.close());

  const login = (username: string, password: string, remoteAddress: string, forwardedFor?: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      remoteAddress,
      headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
      payload: { username: encrypt(username), password: encrypt(password) },
    });

  it('limits failed sign-ins per socket address whatever X-Forwarded-For says', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++)
      statuses.push((await login(`nobody-${i}`, 'guess', '192.0.2.10', rotating())).statusCode);
    expect(statuses.slice(0, ADDRESS_LIMIT)).toEqual(Array(ADDRESS_LIMIT).fill(400));
    expect(statuses.slice(ADDRESS_LIMIT)).toEqual(Array(25 - ADDRESS_LIMIT).fill(429));
    // Another socket address is another client.
    expect((await login('nobody-else', 'guess', '192.0.2.11', rotating())).statusCode).toBe(400);
  });

  it('records the socket address in the audit log, not the header', async () => {
    await login('audited-user', 'guess', '192.0.2.12', '6.6.6.6');
    const rows = await t.storage.query<{ ip: string }>(
      "select ip from audit_log where action = 'login' and username = 'audited-user'",
    );
    expect(rows.map((r) => r.ip)).toEqual(['192.0.2.12']);
  });

  it('limits registrations per socket address whatever X-Forwarded-For says', async () => {
    const { path, cookie } = await openInteraction(t, PUBLIC);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await t.app.inject({
        method: 'POST',
        url: `${path}/register`,
        remoteAddress: '192.0.2.20',
        headers: {
          cookie,
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-for': rotating(),
        },
        // A taken name: each attempt is counted and none finishes the interaction.
        payload: new URLSearchParams({
          username: 'admin',
          password: 'Passw0rd!x',
          password2: 'Passw0rd!x',
        }).toString(),
      });
      statuses.push(res.statusCode);
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(409));
    expect(statuses.slice(10)).toEqual([429, 429]);
  });

  it('keeps the provider on its configured origin whatever X-Forwarded-Host and -Proto say', async () => {
    const forged = { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http', host: 'other.example' };
    const discovery = await t.app.inject({
      method: 'GET',
      url: '/idp/.well-known/openid-configuration',
      headers: forged,
    });
    expect(discovery.statusCode).toBe(200);
    const meta = discovery.json();
    expect(meta.issuer).toBe(`${PUBLIC}/idp`);
    for (const k of ['authorization_endpoint', 'token_endpoint', 'jwks_uri', 'userinfo_endpoint'])
      expect(meta[k], k).toMatch(new RegExp(`^${PUBLIC}/idp/`));
    expect(discovery.body).not.toContain('evil.example');
    expect(discovery.body).not.toContain('other.example');

    const { location } = await openInteraction(t, PUBLIC, forged);
    expect(location).not.toContain('evil.example');

    // Signing in on that interaction sends the browser on to the provider's resume URL and then to
    // the console: neither may point at the forged host.
    const { path, cookie } = await openInteraction(t, PUBLIC, forged);
    const done = await t.app.inject({
      method: 'POST',
      url: `${path}/login`,
      headers: { ...forged, cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ username: 'admin', password: ADMIN_PASSWORD }).toString(),
    });
    expect(done.statusCode, done.body).toBeGreaterThanOrEqual(300);
    expect(String(done.headers.location)).toMatch(new RegExp(`^${PUBLIC}/idp/`));
  });
});

describe('forwarded headers in development (no public URL) without a trusted proxy', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp();
  });
  afterAll(() => t?.close());

  it('builds the provider URLs from the Host header, never from X-Forwarded-Host', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/idp/.well-known/openid-configuration',
      headers: { host: 'localhost:8080', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
    });
    expect(res.json().authorization_endpoint).toBe('http://localhost:8080/idp/auth');
    expect(res.body).not.toContain('evil.example');
  });
});

describe('forwarded headers from a trusted proxy (BIANBU_TRUSTED_PROXIES=127.0.0.1)', () => {
  let t: TestApp;
  let encrypt: (s: string) => string;
  beforeAll(async () => {
    t = await makeTestApp({
      env: { BIANBU_TRUSTED_PROXIES: '127.0.0.1', BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD },
    });
    encrypt = await encryptorOf(t);
  });
  afterAll(() => t?.close());

  const login = (username: string, remoteAddress: string, forwardedFor: string) =>
    t.app.inject({
      method: 'POST',
      url: '/api/user/login',
      remoteAddress,
      headers: { 'x-forwarded-for': forwardedFor },
      payload: { username: encrypt(username), password: encrypt('guess') },
    });

  it('takes the client address from X-Forwarded-For of the proxy', async () => {
    // Each forwarded client has its own address limit: 25 failures from 25 clients are not limited.
    for (let i = 0; i < 25; i++)
      expect((await login(`far-${i}`, '127.0.0.1', `198.51.100.${i + 1}`)).statusCode).toBe(400);
    await login('proxied-user', '127.0.0.1', '198.51.100.77');
    const rows = await t.storage.query<{ ip: string }>(
      "select ip from audit_log where action = 'login' and username = 'proxied-user'",
    );
    expect(rows.map((r) => r.ip)).toEqual(['198.51.100.77']);
  });

  it('still ignores the header from a peer that is not the proxy', async () => {
    await login('direct-user', '192.0.2.40', '198.51.100.78');
    const rows = await t.storage.query<{ ip: string }>(
      "select ip from audit_log where action = 'login' and username = 'direct-user'",
    );
    expect(rows.map((r) => r.ip)).toEqual(['192.0.2.40']);
  });

  it('lets the proxy name the public host and scheme of the provider (no public URL configured)', async () => {
    const headers = {
      host: '127.0.0.1:8080',
      'x-forwarded-host': 'console.example',
      'x-forwarded-proto': 'https',
    };
    const viaProxy = await t.app.inject({
      method: 'GET',
      url: '/idp/.well-known/openid-configuration',
      headers,
    });
    expect(viaProxy.json().authorization_endpoint).toBe('https://console.example/idp/auth');
    const direct = await t.app.inject({
      method: 'GET',
      url: '/idp/.well-known/openid-configuration',
      headers,
      remoteAddress: '192.0.2.41',
    });
    expect(direct.json().authorization_endpoint).toBe('http://127.0.0.1:8080/idp/auth');
  });
});

/** Answers every apply as the caller's, noting the client address each resolution was given. */
function recordingApplies(): Feature & { seen: string[] } {
  const seen: string[] = [];
  return {
    name: 'recording-applies',
    seen,
    setup(app) {
      app.decorate('resolveApply', async (ctx: CallContext) => {
        seen.push(`${ctx.ip}|${ctx.req.ip}`);
        return { applyId: 'ap', deviceId: 'board-p', userId: ctx.user!.id, leaseId: 'l-p' };
      });
    },
  };
}

describe.each([
  { trusted: true, proxies: '127.0.0.1' },
  { trusted: false, proxies: '192.0.2.1, 2001:db8::/32' },
])('the realtime socket with BIANBU_TRUSTED_PROXIES=$proxies (peer 127.0.0.1)', ({ trusted, proxies }) => {
  let t: TestApp;
  let port: number;
  let user: TestUser;
  const applies = recordingApplies();
  beforeAll(async () => {
    t = await makeTestApp({ env: { BIANBU_TRUSTED_PROXIES: proxies }, features: [applies, realtimeFeature] });
    port = await listenOnLoopback(t);
    user = await makeUser(t.app);
  });
  afterAll(() => t?.close());

  it(`records ${trusted ? 'the forwarded client' : 'the socket peer, never X-Forwarded-For'}`, async () => {
    applies.seen.length = 0;
    const c = await connectStomp(
      port,
      { token: user.token, applyId: 'ap' },
      { 'x-forwarded-for': '6.6.6.6, 198.51.100.9' },
    );
    expect(c.frames[0].command).toBe('CONNECTED');
    const want = trusted ? '198.51.100.9' : '127.0.0.1';
    const conns = [...t.app.realtime.connections];
    expect(conns.map((x) => x.ip)).toEqual([want]);
    expect(applies.seen).toEqual([`${want}|${want}`]);
    c.close();
  });

  it(`${trusted ? 'takes' : 'does not take'} X-Forwarded-Host as the page's own host for the Origin check`, async () => {
    const headers = {
      origin: 'https://console.example',
      'x-forwarded-host': 'console.example',
      'x-forwarded-proto': 'https',
    };
    const opened = openSocket(wsUrl(port), headers);
    if (trusted) (await opened).close();
    else await expect(opened).rejects.toThrow(/upgrade refused: 403/);
    // A forwarded host the Origin does not match is refused either way.
    await expect(
      openSocket(wsUrl(port), { origin: 'https://evil.example', 'x-forwarded-host': 'console.example' }),
    ).rejects.toThrow(/upgrade refused: 403/);
    // The request's own Host still counts when nothing is forwarded.
    (await openSocket(wsUrl(port), { origin: `http://127.0.0.1:${port}` })).close();
  });
});
