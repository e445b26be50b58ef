// An external OpenID provider is configuration, not code: service B is pointed (OIDC_ISSUER,
// OIDC_CLIENT_ID, OIDC_REDIRECT_URI) at the provider embedded in service A, reached over the network.
// B keeps its own provider off and links the external subject to an account of its own.
import crypto from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from './helpers/app.ts';

const PASSWORD = 'Adm1n-secret!';

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

describe('single sign-on through an external provider', () => {
  let provider: TestApp;
  let service: TestApp;
  let providerUrl: string;

  beforeAll(async () => {
    const port = await freePort();
    providerUrl = `http://127.0.0.1:${port}`;
    provider = await makeTestApp({
      env: { BIANBU_ADMIN_PASSWORD: PASSWORD, BIANBU_PUBLIC_URL: providerUrl },
    });
    await provider.app.listen({ port, host: '127.0.0.1' });
    service = await makeTestApp({
      env: {
        OIDC_ISSUER: `${providerUrl}/idp`,
        OIDC_CLIENT_ID: 'bianbu-console',
        OIDC_REDIRECT_URI: `${providerUrl}/mainboard`,
        BIANBU_ADMIN_PASSWORD: 'Other-admin-pass',
      },
    });
  });
  afterAll(async () => {
    await service?.close();
    await provider?.close();
  });

  it('signs in at the external provider and answers a token of this service for a linked account', async () => {
    const settings = (await service.app.inject({ method: 'GET', url: '/api/v1/settings/public/' })).json()
      .data;
    const authorize = new URL(settings.oidc.authorizeUrl);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${providerUrl}/idp/auth`);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${providerUrl}/mainboard`);
    expect(
      (await service.app.inject({ method: 'GET', url: '/idp/.well-known/openid-configuration' })).statusCode,
    ).toBe(404);

    const verifier = crypto.randomBytes(32).toString('base64url');
    authorize.searchParams.set(
      'code_challenge',
      crypto.createHash('sha256').update(verifier).digest('base64url'),
    );
    authorize.searchParams.set('code_challenge_method', 'S256');
    const cookies = new Map<string, string>();
    const go = async (url: string, init: RequestInit = {}) => {
      const res = await fetch(url, {
        ...init,
        redirect: 'manual',
        headers: {
          ...(init.headers as object),
          cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        },
      });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const i = pair.indexOf('=');
        cookies.set(pair.slice(0, i), pair.slice(i + 1));
      }
      return res;
    };
    let res = await go(authorize.href);
    while (res.status >= 300 && res.status < 400)
      res = await go(new URL(res.headers.get('location') ?? '', providerUrl).href);
    const html = await res.text();
    const action = (html.match(/<form method="post" action="([^"]+)"/) as RegExpMatchArray)[1];
    res = await go(new URL(action, providerUrl).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: 'admin', password: PASSWORD }).toString(),
    });
    let back: URL | undefined;
    for (let i = 0; i < 10 && !back; i++) {
      const location = new URL(res.headers.get('location') ?? '', providerUrl);
      if (location.pathname === '/mainboard') back = location;
      else res = await go(location.href);
    }
    const q = new URLSearchParams({
      code: back?.searchParams.get('code') ?? '',
      code_verifier: verifier,
      iss: back?.searchParams.get('iss') ?? '',
    });
    const exchanged = await service.app.inject({ method: 'GET', url: `/api/oauth2/getTokenByCode?${q}` });
    expect(exchanged.json().code, exchanged.body).toBe(20000);
    const me = (
      await service.app.inject({
        method: 'GET',
        url: '/api/user/info',
        headers: { authorization: exchanged.json().data.access_token },
      })
    ).json().data;
    // B already has a local `admin`: the external one is never merged into it by name.
    expect(me.username).toMatch(/^admin_[0-9a-f]{6}$/);
    expect(me.perms).not.toContain('*');
    expect(me.groupResource.id).toBe('Default');
    const linked = await service.storage.query<{ oidc_issuer: string }>(
      'select oidc_issuer from users where id = $1',
      [me.id],
    );
    expect(linked[0].oidc_issuer).toBe(`${providerUrl}/idp`);
  });

  it('refuses a redirect_uri other than the configured one', async () => {
    const q = new URLSearchParams({ code: 'x', redirect_uri: 'http://127.0.0.1:1/mainboard' });
    const res = await service.app.inject({ method: 'GET', url: `/api/oauth2/getTokenByCode?${q}` });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('auth.redirect_not_allowed');
  });
});
