// `bianbu login` through the browser, end to end: the real binary as a subprocess against the real
// service on a socket, its printed URL followed by an HTTP client that signs in on the embedded
// provider's pages as a person would, the redirect landing on the cli's own loopback listener.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { Browser } from './helpers/browser.ts';
import { BIN, type CliEnv, runCli } from './helpers/cli-run.ts';

const ADMIN_PASSWORD = 'Adm1n-secret!';

interface Login {
  child: ChildProcessWithoutNullStreams;
  url: URL;
  stderr: () => string;
  stdout: () => string;
  exit: Promise<number | null>;
}

describe('bianbu login through the browser', () => {
  let t: TestApp;
  let base: string;
  let cfgDir: string;
  let env: CliEnv;
  // No BIANBU_API_KEY / BIANBU_URL: the saved profile is what the cli uses.
  const bianbu = (args: string[]) => runCli(env, args, { extraEnv: { BIANBU_API_KEY: '', BIANBU_URL: '' } });

  beforeAll(async () => {
    t = await makeTestApp({ env: { BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD } });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    cfgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-login-'));
    env = { url: base, key: '', configFile: path.join(cfgDir, 'cli.json') };
  });
  afterAll(async () => {
    await t?.close();
    // Unset when the set-up timed out: its error is the one to read, not a second one from here.
    if (cfgDir) fs.rmSync(cfgDir, { recursive: true, force: true });
  });

  /** Starts `bianbu login --no-browser` and answers once it has printed the URL to open. */
  async function startLogin(extra: string[] = []): Promise<Login> {
    const child = spawn(process.execPath, [BIN, 'login', '--no-browser', '--url', base, ...extra], {
      env: { ...process.env, BIANBU_API_KEY: '', BIANBU_URL: '', BIANBU_CLI_CONFIG: env.configFile },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const url = await new Promise<URL>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL printed; stderr: ${stderr}`)), 30_000);
      child.stderr.on('data', (d) => {
        stderr += d;
        const m = /^\s+(http\S+\/idp\/auth\S+)$/m.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(new URL(m[1]));
        }
      });
      child.on('close', () => reject(new Error(`bianbu exited before printing a URL; stderr: ${stderr}`)));
    });
    return { child, url, stderr: () => stderr, stdout: () => stdout, exit };
  }

  /** Signs in on the provider's pages; answers where the provider sends the browser back to. */
  async function signInAt(browser: Browser, authorize: URL, password = ADMIN_PASSWORD) {
    const callback = authorize.searchParams.get('redirect_uri') ?? '';
    const back = (u: URL) => u.href.startsWith(`${callback}?`);
    const { res } = await browser.follow(await browser.go(authorize), back);
    expect(res.status).toBe(200);
    return browser.submit(res, await res.text(), { username: 'admin', password }, back);
  }

  it('signs in on the provider page, refuses a wrong state, and keeps a token that logout revokes', async () => {
    const login = await startLogin(['--profile', 'web', '--json']);
    const { url } = login;
    expect(url.origin).toBe(base);
    expect(url.searchParams.get('client_id')).toBe('bianbu-cli');
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const redirect = new URL(url.searchParams.get('redirect_uri') ?? '');
    expect(redirect.hostname).toBe('127.0.0.1');
    expect(redirect.pathname).toBe('/callback');
    expect(Number(redirect.port)).toBeGreaterThan(0);

    const browser = new Browser();
    const { away } = await signInAt(browser, url);
    expect(away).toBeDefined();
    const back = away as URL;
    expect(back.searchParams.get('state')).toBe(url.searchParams.get('state'));
    expect(back.searchParams.get('code')).toBeTruthy();

    // The same code under another state is not ours: refused, and the sign-in goes on waiting.
    const forged = new URL(back);
    forged.searchParams.set('state', crypto.randomBytes(24).toString('base64url'));
    const refused = await fetch(forged);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('Sign-in refused');
    const noState = new URL(back);
    noState.searchParams.delete('state');
    expect((await fetch(noState)).status).toBe(400);

    const landed = await fetch(back);
    expect(landed.status).toBe(200);
    expect(await landed.text()).toContain('signed in as admin');
    expect(await login.exit).toBe(0);
    expect(login.stderr()).toContain('refused a sign-in callback whose state does not match');
    const out = JSON.parse(login.stdout());
    expect(out).toMatchObject({ profile: 'web', url: base, username: 'admin', kind: 'token' });
    expect(Date.parse(out.expiresAt)).toBeGreaterThan(Date.now());

    // The profile: owner-only file, a token (not an API key).
    expect(fs.statSync(env.configFile).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(fs.readFileSync(env.configFile, 'utf8'));
    expect(saved.current).toBe('web');
    expect(saved.profiles.web).toMatchObject({ url: base, username: 'admin', kind: 'token' });
    const token: string = saved.profiles.web.key;
    expect(token).toMatch(/^bbt_/);

    const who = await bianbu(['whoami']);
    expect(who.stderr).toBe('');
    expect(who.stdout.trim()).toBe('admin');

    const out2 = await bianbu(['logout', '--json']);
    expect(out2.code).toBe(0);
    expect(JSON.parse(out2.stdout)).toEqual({ profile: 'web', removed: true, revoked: true });
    const info = await fetch(`${base}/api/user/info`, { headers: { authorization: token } });
    expect((await info.json()).error).toBe('auth.token_illegal');
    const anon = await bianbu(['whoami']);
    expect(anon.code).toBe(3);
    expect(anon.stderr).toMatch(/cli\.not_signed_in/);
  });

  it('a code redeemed once cannot sign the cli in again, nor another redirect target', async () => {
    const login = await startLogin(['--profile', 'once']);
    const { away } = await signInAt(new Browser(), login.url);
    const back = away as URL;
    expect((await fetch(back)).status).toBe(200);
    expect(await login.exit).toBe(0);
    const redeem = (redirect_uri: string) =>
      fetch(`${base}/api/oauth2/cli-token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          code: back.searchParams.get('code'),
          code_verifier: crypto.randomBytes(32).toString('base64url'),
          redirect_uri,
        }),
      }).then((r) => r.json());
    expect((await redeem(`${back.origin}${back.pathname}`)).error).toBe('auth.oidc_exchange_failed');
    const foreign = await redeem('http://evil.example/callback');
    expect(foreign.error).toBe('request.invalid');
    expect(foreign.fields[0].path).toBe('redirect_uri');
    await bianbu(['logout', '--profile', 'once']);
  });

  it('never sends a cli sign-in anywhere but a loopback /callback', async () => {
    const config = await (await fetch(`${base}/api/oauth2/cli-login`)).json();
    expect(config.data.clientId).toBe('bianbu-cli');
    for (const target of [
      'http://evil.example/callback',
      'http://127.0.0.1:5555/other',
      'http://localhost.evil.example:5555/callback',
      `${base}/mainboard`,
    ]) {
      const u = new URL(config.data.authorizeUrl, base);
      u.searchParams.set('redirect_uri', target);
      u.searchParams.set('state', 'x'.repeat(20));
      u.searchParams.set('code_challenge', crypto.randomBytes(32).toString('base64url'));
      u.searchParams.set('code_challenge_method', 'S256');
      const res = await new Browser().go(u);
      expect(res.status, target).toBe(400);
      expect(res.headers.get('location'), target).toBeNull();
    }
  });

  it('a wrong password leaves the cli waiting; it gives up after --timeout with exit 3', async () => {
    const login = await startLogin(['--timeout', '3']);
    const { res, away } = await signInAt(new Browser(), login.url, 'wrong-password');
    expect(away).toBeUndefined();
    expect(res.status).toBe(400);
    expect(await login.exit).toBe(3);
    expect(login.stderr()).toMatch(/no sign-in within 3s \(cli\.login_timeout\)/);
  });

  it('ends with exit 3 when the person cancels on the sign-in page', async () => {
    const login = await startLogin();
    const browser = new Browser();
    const callback = login.url.searchParams.get('redirect_uri') ?? '';
    const back = (u: URL) => u.href.startsWith(`${callback}?`);
    const { res } = await browser.follow(await browser.go(login.url), back);
    const cancel = (await res.text()).match(/<a href="([^"]+\/abort)"/);
    expect(cancel).not.toBeNull();
    const { away } = await browser.follow(await browser.go(new URL((cancel as RegExpMatchArray)[1], res.url)), back);
    expect(away?.searchParams.get('error')).toBe('access_denied');
    const landed = await fetch(away as URL);
    expect(landed.status).toBe(400);
    expect(await landed.text()).toContain('Sign-in failed');
    expect(await login.exit).toBe(3);
    expect(login.stderr()).toMatch(/\(cli\.login_denied\)/);
  });

  it('Ctrl+C ends the wait with exit 130 and closes the listener', async () => {
    const login = await startLogin();
    login.child.kill('SIGINT');
    expect(await login.exit).toBe(130);
    expect(login.stderr()).toMatch(/\(cli\.cancelled\)/);
    const callback = login.url.searchParams.get('redirect_uri') ?? '';
    await expect(fetch(`${callback}?state=x&code=y`)).rejects.toThrow();
  });
});
