// The single sign-on flow end to end: authorization code + PKCE through the embedded provider's real
// endpoints over a real socket, its sign-in and registration pages, then the code exchange.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from './helpers/app.ts';

const ADMIN_PASSWORD = 'Adm1n-secret!';

class Jar {
  private cookies = new Map<string, string>();
  set(name: string, value: string) {
    this.cookies.set(name, value);
  }
  take(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0$/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

const b64url = (b: Buffer) => b.toString('base64url');

interface Flow {
  jar: Jar;
  verifier: string;
  state: string;
  redirectUri: string;
}

describe('single sign-on through the embedded provider', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await makeTestApp({ env: { BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD } });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => t?.close());

  async function go(jar: Jar, url: string | URL, init: RequestInit = {}): Promise<Response> {
    const res = await fetch(new URL(url, base), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: jar.header() },
    });
    jar.take(res);
    return res;
  }

  /** Follows redirects inside the service until the provider sends the browser back to the console. */
  async function follow(
    jar: Jar,
    res: Response,
    redirectUri: string,
  ): Promise<{ res: Response; back?: URL }> {
    let current = res;
    for (let i = 0; i < 10 && current.status >= 300 && current.status < 400; i++) {
      const location = new URL(current.headers.get('location') ?? '', current.url || base);
      if (location.href.startsWith(`${redirectUri}?`)) return { res: current, back: location };
      current = await go(jar, location);
    }
    return { res: current };
  }

  async function start(
    opts: { lang?: string; register?: boolean; redirectUri?: string; pkce?: boolean } = {},
  ): Promise<Flow & { page: Response }> {
    const jar = new Jar();
    if (opts.lang) jar.set('lang', opts.lang);
    const settings = await (await fetch(`${base}/api/v1/settings/public/`)).json();
    const oidc = settings.data.oidc;
    expect(oidc.clientId).toBe('bianbu-console');
    const url = new URL(opts.register ? oidc.registerUrl : oidc.authorizeUrl, base);
    const verifier = b64url(crypto.randomBytes(32));
    const state = b64url(crypto.randomBytes(16));
    const redirectUri = opts.redirectUri ?? `${base}/mainboard`;
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('state', state);
    if (opts.pkce !== false) {
      url.searchParams.set('code_challenge', b64url(crypto.createHash('sha256').update(verifier).digest()));
      url.searchParams.set('code_challenge_method', 'S256');
    }
    const first = await go(jar, url);
    const { res } = await follow(jar, first, redirectUri);
    return { jar, verifier, state, redirectUri, page: res };
  }

  function formAction(html: string): string {
    const m = html.match(/<form method="post" action="([^"]+)"/);
    if (!m) throw new Error(`no form in page: ${html.slice(0, 200)}`);
    return m[1].replace(/&amp;/g, '&');
  }

  async function submit(flow: Flow, html: string, fields: Record<string, string>) {
    const res = await go(flow.jar, formAction(html), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    return follow(flow.jar, res, flow.redirectUri);
  }

  async function exchange(flow: Flow, back: URL, extra: Record<string, string> = {}) {
    const q = new URLSearchParams({
      code: back.searchParams.get('code') ?? '',
      code_verifier: flow.verifier,
      redirect_uri: flow.redirectUri,
      ...(back.searchParams.get('iss') ? { iss: back.searchParams.get('iss') as string } : {}),
      ...extra,
    });
    const res = await fetch(`${base}/api/oauth2/getTokenByCode?${q}`);
    return { status: res.status, body: await res.json() };
  }

  it('signs in on the provider page and exchanges the code for a working service token', async () => {
    const flow = await start();
    expect(flow.page.status).toBe(200);
    const html = await flow.page.text();
    expect(html).toContain('登录'); // default language zh
    expect(flow.page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");

    const { back } = await submit(flow, html, { username: 'admin', password: ADMIN_PASSWORD });
    expect(back).toBeDefined();
    expect(back?.origin + (back?.pathname ?? '')).toBe(flow.redirectUri);
    expect(back?.searchParams.get('state')).toBe(flow.state);

    const { status, body } = await exchange(flow, back as URL);
    expect(status).toBe(200);
    expect(body.code).toBe(20000);
    expect(body.data.access_token).toMatch(/^bbt_/);
    expect(body.data.accessToken).toBe(body.data.access_token);

    const info = await fetch(`${base}/api/user/info`, { headers: { authorization: body.data.access_token } });
    const me = (await info.json()).data;
    expect(me.username).toBe('admin');
    expect(me.perms).toContain('*');

    // An authorization code is single-use.
    const again = await exchange(flow, back as URL);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('auth.oidc_exchange_failed');
  });

  it('refuses the exchange with the wrong PKCE verifier', async () => {
    const flow = await start();
    const { back } = await submit(flow, await flow.page.text(), {
      username: 'admin',
      password: ADMIN_PASSWORD,
    });
    const { status, body } = await exchange(flow, back as URL, {
      code_verifier: b64url(crypto.randomBytes(32)),
    });
    expect(status).toBe(400);
    expect(body.error).toBe('auth.oidc_exchange_failed');
  });

  it('requires PKCE on the authorization request', async () => {
    const flow = await start({ pkce: false });
    const location = new URL(flow.page.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(flow.redirectUri);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('code')).toBeNull();
  });

  it('shows a generic error on the page for a wrong password and signs nobody in', async () => {
    const flow = await start({ lang: 'en' });
    const html = await flow.page.text();
    expect(html).toContain('Sign in');
    const { res, back } = await submit(flow, html, { username: 'admin', password: 'wrong-password' });
    expect(back).toBeUndefined();
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toContain('Incorrect username or password.');
    const unknown = await submit(flow, html, { username: 'nobody-here', password: 'wrong-password' });
    expect(unknown.res.status).toBe(400);
    expect(await unknown.res.text()).toContain('Incorrect username or password.');
  });

  it('never sends the browser to a foreign or prefix-matched redirect target', async () => {
    for (const redirectUri of [
      'http://evil.example/mainboard',
      `${base}/mainboard/extra`,
      `${base}/mainboardx`,
      `${base}/mainboard?next=/x`,
      `${base}/workbench`,
    ]) {
      const flow = await start({ redirectUri });
      expect(flow.page.status, redirectUri).toBe(400);
      expect(flow.page.headers.get('location')).toBeNull();
    }
  });

  it('refuses a code exchange naming a redirect target outside the console', async () => {
    const q = new URLSearchParams({
      code: 'x',
      code_verifier: 'a'.repeat(43),
      redirect_uri: 'http://evil.example/mainboard',
    });
    const res = await fetch(`${base}/api/oauth2/getTokenByCode?${q}`);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toBe('auth.redirect_not_allowed');
  });

  it('registers a new account on the provider page and lands in the default organisation', async () => {
    const flow = await start({ register: true, lang: 'ja' });
    const html = await flow.page.text();
    expect(html).toContain('アカウント作成');
    const mismatch = await submit(flow, html, {
      username: 'newbie',
      password: 'Passw0rd!x',
      password2: 'other-pass',
    });
    expect(mismatch.res.status).toBe(400);
    expect(await mismatch.res.text()).toContain('2 つのパスワードが一致しません。');
    const taken = await submit(flow, html, {
      username: 'ADMIN',
      password: 'Passw0rd!x',
      password2: 'Passw0rd!x',
    });
    expect(taken.res.status).toBe(409);

    const { back } = await submit(flow, html, {
      username: 'newbie',
      name: 'New Bie',
      email: 'newbie@example.com',
      password: 'Passw0rd!x',
      password2: 'Passw0rd!x',
    });
    expect(back).toBeDefined();
    const { body } = await exchange(flow, back as URL);
    const info = await fetch(`${base}/api/user/info`, {
      headers: { authorization: `Bearer ${body.data.accessToken}` },
    });
    const me = (await info.json()).data;
    expect(me).toMatchObject({ username: 'newbie', name: 'New Bie', email: 'newbie@example.com' });
    expect(me.groupResource).toMatchObject({ id: 'Default', type: 'ORG' });
    expect(me.perms).toContain('device.view_device');
    expect(me.perms).not.toContain('*');
  });

  it('keeps the provider stateless in memory: its records are rows of the database', async () => {
    const rows = await t.storage.query<{ model: string }>('select distinct model from oidc_records');
    expect(rows.map((r) => r.model)).toEqual(expect.arrayContaining(['Session', 'Grant']));
  });
});
