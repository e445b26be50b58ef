// The /code/ proxy on the real service to a real HTTP + WebSocket application running inside a local
// board on the code-server port (helpers/code-board-app.cjs, started as the board's user): a host name
// of its own per apply (never the console's), tickets and the authorisation matrix, HTTP with bodies both ways over kept-alive relays, a WebSocket echo, the
// cut when the apply ends, and a hostile board (cookies for /, host-wide headers, redirects elsewhere,
// an endless or silent answer).
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { issueCredential, verifyCredential } from '#server/auth/tokens.ts';
import type { BoardDriver, PtyHandle } from '#server/boards/driver.ts';
import { codeLabel } from '#server/desktop/code-hosts.ts';
import { CodeProxy } from '#server/desktop/code-proxy.ts';
import { driverLookup } from '#server/shells/shells.routes.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { CODE_LIMITS, VncClose } from '#shared/desktop.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { runInBoard } from './helpers/in-board.ts';
import { loopbackLookup } from './helpers/loopback-names.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const APP_SOURCE = fs.readFileSync(path.join(import.meta.dirname, 'helpers', 'code-board-app.cjs'), 'utf8');

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One request to the code listener (no cookie jar, no redirects followed: the test is the browser). */
function request(
  url: string,
  opts: { method?: string; cookie?: string; body?: Buffer; headers?: Record<string, string> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: opts.method ?? 'GET',
        headers: { ...(opts.cookie ? { cookie: opts.cookie } : {}), ...(opts.headers ?? {}) },
        agent: false,
        lookup: loopbackLookup,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** A browser's code session: the path prefix (with the key) and the cookie the ticket was exchanged for. */
interface CodeSession {
  origin: string;
  prefix: string;
  cookie: string;
  setCookie: string;
}

describe('the /code/ proxy to an application inside a local board', () => {
  let t: TestApp;
  let port: number;
  let codePort: number;
  let consoleOrigin: string;
  let codeOrigin: string;
  let u: TestUser;
  let other: TestUser;
  let applyId: string;
  let deviceId: string;
  let otherApply: string;
  let shell: PtyHandle;
  let session: CodeSession;
  let otherDevice: string;
  let otherShell: PtyHandle;

  /** A call to the console's API over its real port, from the console's Origin. */
  const api = async (who: TestUser, url: string, body: object, apply?: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${url}`, {
      method: 'POST',
      headers: {
        ...who.headers,
        'content-type': 'application/json',
        origin: consoleOrigin,
        ...(apply ? { applyaccess: apply } : {}),
      },
      body: JSON.stringify(body),
    });
    return (await r.json()) as { code: number; data: Record<string, string>; key?: string; message: string };
  };

  const lease = async (who: TestUser) => {
    const requestDate = new Date(Date.now() + 48 * HOUR_MS).toISOString();
    const l = await api(who, '/api/device/request-device', {
      requestDate,
      filterReq: {},
      serverName: 'code',
    });
    expect(l.code).toBe(20000);
    const a = await api(who, '/api/device/apply-device', { deviceId: l.data.deviceId });
    expect(a.code).toBe(20000);
    return { deviceId: l.data.deviceId, applyId: a.data.applyId };
  };

  const ticket = async (who: TestUser, apply: string) => {
    const r = await api(who, '/api/device/code-ticket', { applyId: apply }, apply);
    expect(r.code).toBe(20000);
    return r.data.url;
  };

  /** Takes a ticket as the iframe does: 303 to the session's path, with the cookie. */
  const exchange = async (url: string): Promise<CodeSession> => {
    const r = await request(url);
    expect(r.status).toBe(303);
    const setCookie = String(r.headers['set-cookie']?.[0]);
    const cookie = setCookie.split(';')[0];
    const location = String(r.headers.location);
    return { origin: new URL(url).origin, prefix: location.replace(/\/$/, ''), cookie, setCookie };
  };

  const openSession = async (who: TestUser, apply: string) => exchange(await ticket(who, apply));

  /** Starts the fixture application inside a board as the board's user (uid 1000) on port 8080. */
  const startApp = async (driver: BoardDriver, sh: PtyHandle) => {
    await driver.files.write('/tmp/code-app.cjs', APP_SOURCE);
    await runInBoard(
      sh,
      'chmod 644 /tmp/code-app.cjs; (setpriv --reuid=1000 --regid=1000 --init-groups node /tmp/code-app.cjs 8080 >/tmp/code-app.log 2>&1 &)',
    );
    const deadline = Date.now() + 20_000;
    for (;;) {
      const out = await runInBoard(sh, 'cat /tmp/code-app.log');
      if (out.includes('code-app listening')) return;
      if (Date.now() > deadline) throw new Error(`the fixture did not start: ${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  const wsOpen = (
    s: CodeSession,
    p: string,
    opts: { origin?: string | null; cookie?: string | null; protocols?: string[] } = {},
  ) => {
    const ws = new WebSocket(`${s.origin.replace('http', 'ws')}${s.prefix}${p}`, opts.protocols ?? [], {
      headers: opts.cookie === null ? {} : { cookie: opts.cookie ?? s.cookie },
      lookup: loopbackLookup,
      ...(opts.origin === null ? {} : { origin: opts.origin ?? s.origin }),
    });
    const messages: string[] = [];
    ws.on('message', (d) => messages.push(d.toString()));
    const opened = new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) =>
        reject(new Error(`HTTP ${res.statusCode} ${res.headers['x-code-reason']}`)),
      );
      ws.once('error', reject);
    });
    opened.catch(() => {});
    const ended = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    let read = 0;
    const next = async (timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (messages.length <= read) {
        if (Date.now() > deadline) throw new Error(`no message after ${JSON.stringify(messages)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return messages[read++];
    };
    return { ws, messages, opened, ended, next };
  };

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('local boards need the tests to run as root');
    // The stand-in app, not code-server (code-server.test.ts runs the real one): boards start none.
    t = await makeTestApp({ env: { BIANBU_CODE_PORT: '0', HOST: '127.0.0.1', BIANBU_CODE_SERVER_DIR: '' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    codePort = t.app.code!.port;
    consoleOrigin = `http://127.0.0.1:${port}`;
    u = await makeUser(t.app);
    other = await makeUser(t.app);
    ({ deviceId, applyId } = await lease(u));
    // A console on a loopback name: each apply's code window on a subdomain of code.localhost.
    codeOrigin = `http://${codeLabel(applyId)}.code.localhost:${codePort}`;
    ({ applyId: otherApply, deviceId: otherDevice } = await lease(other));
    const driver = await driverLookup(t.app)(deviceId);
    shell = await driver.openShell({ cols: 200, rows: 50 });
    await startApp(driver, shell);
    const otherDriver = await driverLookup(t.app)(otherDevice);
    otherShell = await otherDriver.openShell({ cols: 200, rows: 50 });
    await startApp(otherDriver, otherShell);
  }, 180_000);

  afterAll(async () => {
    shell?.close();
    otherShell?.close();
    await t?.close();
  });

  it('says the board has a code-server once the application answers on its port', async () => {
    const r = await api(u, '/api/device/desktop-status', { applyId }, applyId);
    expect(r.data.code).toEqual({ available: true });
  });

  it('gives a one-time ticket URL on the apply’s own code host, exchanged for a cookie scoped to the session’s path', async () => {
    const url = await ticket(u, applyId);
    expect(url).toMatch(new RegExp(`^${codeOrigin}/code/${applyId}/\\?ticket=[A-Za-z0-9_-]{40,}$`));
    session = await exchange(url);
    expect(session.prefix).toMatch(new RegExp(`^/code/${applyId}/[A-Za-z0-9_-]{20,}$`));
    // Host-only, and third-party: the console's iframe is on another site (127.0.0.1).
    expect(session.setCookie).toBe(
      `${session.cookie}; Path=${session.prefix}/; HttpOnly; SameSite=None; Secure; Partitioned`,
    );
    // The ticket is spent.
    const again = await request(url);
    expect(again.status).toBe(401);
    expect(again.headers['x-code-reason']).toBe('code.ticket_invalid');
    // A ticket for one apply does not open another's path.
    const wrongPath = (await ticket(u, applyId)).replace(`/code/${applyId}/`, `/code/${otherApply}/`);
    expect((await request(wrongPath)).headers['x-code-reason']).toBe('code.ticket_invalid');
  });

  it('shows the board’s page through the proxy with our CSP, and the board sees neither our cookie nor the client’s forwarding claims', async () => {
    const page = await request(`${session.origin}${session.prefix}/`, { cookie: session.cookie });
    expect(page.status).toBe(200);
    expect(page.body.toString()).toContain('<h1 id="code-fixture">code fixture 1000</h1>');
    expect(page.body.toString()).toContain(`<p id="prefix">${session.prefix}</p>`);
    expect(page.headers['content-security-policy']).toBe(
      `frame-ancestors 'self' ${consoleOrigin}; base-uri 'self'; form-action 'self'`,
    );
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    const echo = await request(`${session.origin}${session.prefix}/echo?q=1`, {
      cookie: `${session.cookie}; theirs=kept`,
      headers: {
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-host': 'evil.example',
        connection: 'x-drop',
        'x-drop': '1',
      },
    });
    const seen = JSON.parse(echo.body.toString());
    expect(seen.url).toBe('/echo?q=1');
    expect(seen.headers.cookie).toBe('theirs=kept');
    expect(seen.headers['x-forwarded-for']).toBeUndefined();
    expect(seen.headers['x-forwarded-host']).toBe(new URL(codeOrigin).host);
    expect(seen.headers['x-drop']).toBeUndefined();
    expect(seen.uid).toBe(1000);
  });

  it('never answers on the console’s host name, nor the console on a code host', async () => {
    // The code listener on the console's name (another port: browsers share its cookies) serves nothing.
    const onConsoleHost = `http://127.0.0.1:${codePort}`;
    const page = await request(`${onConsoleHost}${session.prefix}/`, { cookie: session.cookie });
    expect([page.status, page.headers['x-code-reason']]).toEqual([421, 'code.wrong_host']);
    const url = new URL(await ticket(u, applyId));
    const viaConsoleHost = await request(`${onConsoleHost}${url.pathname}${url.search}`);
    expect([viaConsoleHost.status, viaConsoleHost.headers['x-code-reason']]).toEqual([
      421,
      'code.wrong_host',
    ]);
    await expect(
      wsOpen({ ...session, origin: onConsoleHost }, '/ws', { origin: codeOrigin }).opened,
    ).rejects.toThrow('HTTP 421 code.wrong_host');
    // Nor on another name (a board's page cannot lead the browser there with the session's cookie).
    const elsewhere = await request(`http://localhost:${codePort}${session.prefix}/`, {
      cookie: session.cookie,
    });
    expect(elsewhere.status).toBe(421);
    // The console's listener refuses the code host names, so no console cookie is ever set there.
    const consoleThere = await request(`http://${new URL(codeOrigin).hostname}:${port}/`);
    expect([consoleThere.status, consoleThere.headers['x-code-reason']]).toEqual([421, 'code.wrong_host']);
  });

  it('offers no code window to a console on a non-loopback name without BIANBU_CODE_HOST', async () => {
    const call = async (path: string) => {
      const r = await request(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        body: Buffer.from(JSON.stringify({ applyId })),
        headers: {
          ...u.headers,
          host: `cloud.example.com:${port}`,
          'content-type': 'application/json',
          applyaccess: applyId,
        },
      });
      return JSON.parse(r.body.toString()) as { code: number; error?: string; data: { code?: unknown } };
    };
    expect((await call('/api/device/desktop-status')).data.code).toEqual({
      available: false,
      reason: 'code.no_own_host',
    });
    const r = await call('/api/device/code-ticket');
    expect([r.code, r.error]).toEqual([50300, 'code.no_own_host']);
  });

  it('refuses no ticket, no cookie, a wrong cookie, and another user’s cookie on a different apply', async () => {
    const bare = await request(`${codeOrigin}/code/${applyId}/`);
    expect([bare.status, bare.headers['x-code-reason']]).toEqual([401, 'code.session_missing']);
    const noCookie = await request(`${session.origin}${session.prefix}/`);
    expect([noCookie.status, noCookie.headers['x-code-reason']]).toEqual([401, 'code.session_missing']);
    const forged = await request(`${session.origin}${session.prefix}/`, { cookie: 'bianbu_code=forged' });
    expect(forged.status).toBe(401);
    // The other user's own session works on their board, on a host name of its own …
    const theirs = await openSession(other, otherApply);
    expect(theirs.origin).not.toBe(codeOrigin);
    const mine = await request(`${theirs.origin}${theirs.prefix}/`, { cookie: theirs.cookie });
    expect(mine.status).toBe(200);
    // … but neither their key nor their cookie opens this user's apply, on either host.
    const key = theirs.prefix.split('/').pop();
    for (const [o, p, c] of [
      [codeOrigin, `/code/${applyId}/${key}/`, theirs.cookie],
      [codeOrigin, `${session.prefix}/`, theirs.cookie],
      [codeOrigin, `${theirs.prefix}/`, theirs.cookie],
      [theirs.origin, `${session.prefix}/`, session.cookie],
      [theirs.origin, `${theirs.prefix}/`, session.cookie],
    ]) {
      const r = await request(`${o}${p}`, { cookie: c });
      expect(r.status, `${o}${p}`).toBe(401);
    }
    // Nor may they ask a ticket for it.
    const r = await api(other, '/api/device/code-ticket', { applyId }, applyId);
    expect(r.code).toBe(40400);
  });

  it('sends a POST body to the board and its answer back, over kept-alive connections', async () => {
    const body = crypto.randomBytes(3 * 1024 * 1024 + 17);
    const sha = crypto.createHash('sha256').update(body).digest('hex');
    const r = await request(`${session.origin}${session.prefix}/echo`, {
      method: 'POST',
      cookie: session.cookie,
      body,
      headers: { origin: codeOrigin, 'content-type': 'application/octet-stream' },
    });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body.toString())).toMatchObject({
      method: 'POST',
      bodyBytes: body.length,
      sha256: sha,
    });
    const before = t.app.code!.stats().opened;
    for (let i = 0; i < 10; i++)
      expect(
        (await request(`${session.origin}${session.prefix}/echo`, { cookie: session.cookie })).status,
      ).toBe(200);
    expect(t.app.code!.stats().opened - before).toBeLessThanOrEqual(1);
    // A POST from another origin is refused before it reaches the board.
    const csrf = await request(`${session.origin}${session.prefix}/echo`, {
      method: 'POST',
      cookie: session.cookie,
      body: Buffer.from('x'),
      headers: { origin: consoleOrigin },
    });
    expect([csrf.status, csrf.headers['x-code-reason']]).toEqual([403, 'code.origin']);
  });

  it('relays a WebSocket both ways with the board’s subprotocol, and refuses a foreign Origin or no cookie', async () => {
    const c = wsOpen(session, '/ws', { protocols: ['vscode', 'other'] });
    await c.opened;
    expect(c.ws.protocol).toBe('vscode');
    // The board saw the code origin and no cookie of ours.
    expect(await c.next()).toBe(`hello ${codeOrigin} `);
    c.ws.send('ping one');
    expect(await c.next()).toBe('ping one');
    const big = 'x'.repeat(200_000);
    c.ws.send(big);
    expect(await c.next()).toBe(big);
    c.ws.send('close-me');
    expect(await c.ended).toEqual({ code: 4000, reason: 'board says bye' });

    await expect(wsOpen(session, '/ws', { origin: consoleOrigin }).opened).rejects.toThrow(
      'HTTP 403 code.origin',
    );
    await expect(wsOpen(session, '/ws', { origin: null }).opened).rejects.toThrow('HTTP 403 code.origin');
    await expect(wsOpen(session, '/ws', { cookie: null }).opened).rejects.toThrow(
      'HTTP 401 code.session_missing',
    );
  });

  it('keeps a board’s cookies under its path and drops headers that act on the whole host', async () => {
    const r = await request(`${session.origin}${session.prefix}/cookie`, { cookie: session.cookie });
    expect(r.status).toBe(200);
    expect(r.headers['set-cookie']).toEqual([
      `a=1; Path=${session.prefix}/; HttpOnly`,
      `b=2; Path=${session.prefix}/x; SameSite=Lax`,
      `d=4; Path=${session.prefix}/`,
    ]);
    // A service worker may claim the board's path, not the origin's root.
    expect(r.headers['service-worker-allowed']).toBe(`${session.prefix}/`);
    for (const h of [
      'strict-transport-security',
      'clear-site-data',
      'access-control-allow-origin',
      'access-control-allow-credentials',
    ])
      expect(r.headers[h], h).toBeUndefined();
    // The board's own CSP stays, beside ours (a browser enforces both).
    expect(r.headers['content-security-policy']).toBe(
      `script-src 'none', frame-ancestors 'self' ${consoleOrigin}; base-uri 'self'; form-action 'self'`,
    );
  });

  it('keeps a board’s redirects inside its path and refuses those that lead elsewhere', async () => {
    const go = (to: string) =>
      request(`${session.origin}${session.prefix}/redirect?to=${encodeURIComponent(to)}`, {
        cookie: session.cookie,
      });
    expect((await go('/inside?a=1')).headers.location).toBe(`${session.prefix}/inside?a=1`);
    expect((await go('http://127.0.0.1:8080/y')).headers.location).toBe(`${session.prefix}/y`);
    expect((await go('./sibling')).headers.location).toBe(`${session.prefix}/sibling`);
    for (const to of [
      'https://evil.example/',
      '//evil.example/x',
      `${consoleOrigin}/`,
      `../../../code/${otherApply}/`,
      `${codeOrigin}/code/${otherApply}/`,
      'javascript:alert(1)',
    ]) {
      const r = await go(to);
      expect([r.status, r.headers['x-code-reason']], to).toEqual([502, 'code.redirect_refused']);
    }
    // A link on the board's page to another path of the code origin reaches nothing.
    const link = await request(`${codeOrigin}/code/other/`, { cookie: session.cookie });
    expect(link.status).toBe(401);
  });

  it('bounds an endless answer to a client that does not read, and frees the board’s side when the client leaves', async () => {
    const before = JSON.parse(
      (await request(`${session.origin}${session.prefix}/stats`, { cookie: session.cookie })).body.toString(),
    );
    const req = http.get(`${session.origin}${session.prefix}/huge`, {
      headers: { cookie: session.cookie },
      agent: false,
      lookup: loopbackLookup,
    });
    const res = await new Promise<http.IncomingMessage>((r) => req.once('response', r));
    expect(res.statusCode).toBe(200);
    res.pause();
    await new Promise((r) => setTimeout(r, 3000));
    const mid = JSON.parse(
      (await request(`${session.origin}${session.prefix}/stats`, { cookie: session.cookie })).body.toString(),
    );
    const written = mid.hugeBytes - before.hugeBytes;
    // Socket and pipe buffers on the way (kernel, the relay, the proxy's streams), nothing more.
    expect(written).toBeLessThan(16 * 1024 * 1024);
    expect(process.memoryUsage().rss).toBeLessThan(2 * 1024 ** 3);
    req.destroy();
    const deadline = Date.now() + 5000;
    while (t.app.code!.stats().requests > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(t.app.code!.stats().requests).toBe(0);
    const after = JSON.parse(
      (await request(`${session.origin}${session.prefix}/stats`, { cookie: session.cookie })).body.toString(),
    );
    await new Promise((r) => setTimeout(r, 500));
    const later = JSON.parse(
      (await request(`${session.origin}${session.prefix}/stats`, { cookie: session.cookie })).body.toString(),
    );
    expect(later.hugeBytes).toBe(after.hugeBytes);
  }, 30_000);

  describe('with short limits (a second listener on the same service)', () => {
    let proxy: CodeProxy;
    let origin: string;
    /** What the codeTicket call does, against this listener. */
    const proxyTicket = async (who: TestUser, apply: string) => {
      const cred = await verifyCredential(t.app.storage.db, who.token);
      return proxy.ticket({
        app: t.app,
        req: { headers: {}, protocol: 'http', host: `127.0.0.1:${port}`, raw: { headers: {} } } as never,
        reply: null as never,
        user: {
          id: who.id,
          username: who.username,
          displayName: who.username,
          orgId: null,
          orgType: null,
          perms: [],
          credentialId: cred.id,
          credentialKind: 'access',
        },
        apply: { applyId: apply, deviceId, userId: who.id, leaseId: '' },
        ip: '127.0.0.1',
      }).url;
    };

    beforeAll(async () => {
      proxy = new CodeProxy(t.app, {
        bus: t.app.bus,
        driver: driverLookup(t.app),
        port: 0,
        host: '127.0.0.1',
        limits: { ticketTtlMs: 300, headersTimeoutMs: 1000, idleTimeoutMs: 1500 },
      });
      await proxy.start();
      origin = `http://${codeLabel(applyId)}.code.localhost:${proxy.port}`;
    });
    afterAll(async () => {
      await proxy?.stop();
    });

    it('refuses an expired ticket', async () => {
      const url = await proxyTicket(u, applyId);
      expect(url.startsWith(`${origin}/code/${applyId}/?ticket=`)).toBe(true);
      await new Promise((r) => setTimeout(r, 400));
      const r = await request(url);
      expect([r.status, r.headers['x-code-reason']]).toEqual([401, 'code.ticket_invalid']);
    });

    it('answers 504 when the board sends no head in time, cuts a body that stops moving, keeps one that moves slowly', async () => {
      const s = await exchange(await proxyTicket(u, applyId));
      const started = Date.now();
      const slow = await request(`${origin}${s.prefix}/slow`, { cookie: s.cookie });
      expect([slow.status, slow.headers['x-code-reason']]).toEqual([504, 'code.timeout']);
      expect(Date.now() - started).toBeLessThan(5000);
      const stalled = await new Promise<string>((resolve) => {
        const req = http.get(
          `${origin}${s.prefix}/stall`,
          { headers: { cookie: s.cookie }, agent: false, lookup: loopbackLookup },
          (res) => {
            let text = '';
            res.on('data', (d: Buffer) => {
              text += d.toString();
            });
            res.on('error', () => resolve(`aborted after "${text}"`));
            res.on('end', () => resolve(`ended after "${text}"`));
          },
        );
        req.on('error', () => resolve('request failed'));
      });
      expect(stalled).toBe('aborted after "begun"');
      // One byte a second keeps a body alive past the idle limit.
      const drip = await new Promise<number>((resolve, reject) => {
        const req = http.get(
          `${origin}${s.prefix}/drip`,
          { headers: { cookie: s.cookie }, agent: false, lookup: loopbackLookup },
          (res) => {
            let n = 0;
            res.on('data', (d: Buffer) => {
              n += d.length;
              if (n >= 3) {
                req.destroy();
                resolve(n);
              }
            });
          },
        );
        req.on('error', reject);
      });
      expect(drip).toBeGreaterThanOrEqual(3);
      expect(proxy.stats().sessions).toBe(1);
    }, 20_000);
  });

  it('cuts the WebSocket with the reason and refuses HTTP when the apply ends', async () => {
    const second = await api(u, '/api/device/apply-device', { deviceId });
    expect(second.code).toBe(20000);
    const apply2 = second.data.applyId;
    const s = await openSession(u, apply2);
    const c = wsOpen(s, '/ws');
    await c.opened;
    await c.next();
    const drip = http.get(`${s.origin}${s.prefix}/drip`, {
      headers: { cookie: s.cookie },
      agent: false,
      lookup: loopbackLookup,
    });
    let flowing: () => void = () => {};
    const dripFlowing = new Promise<void>((r) => {
      flowing = r;
    });
    const dripEnded = new Promise<string>((resolve) => {
      drip.on('response', (res) => {
        res.on('data', () => flowing());
        res.on('aborted', () => resolve('aborted'));
        res.on('error', () => resolve('aborted'));
        res.on('end', () => resolve('end'));
      });
      drip.on('error', () => resolve('aborted'));
    });
    // The apply ends once the body is under way (its head and a first byte arrived): an end before
    // that is answered 410, whole, which is another case. A fixed wait raced it on a loaded machine.
    await dripFlowing;
    const un = await api(u, '/api/device/unapply-device', { applyId: apply2 }, apply2);
    expect(un.code).toBe(20000);
    expect(await c.ended).toEqual({ code: VncClose.ended, reason: 'apply.ended' });
    expect(await dripEnded).toBe('aborted');
    const after = await request(`${s.origin}${s.prefix}/`, { cookie: s.cookie });
    expect(after.status).toBe(401);
    const r = await api(u, '/api/device/code-ticket', { applyId: apply2 }, apply2);
    expect(r.code).toBe(40400);
    // A board holds one open apply per user (the second one closed the first): the next tests use a fresh one.
    const third = await api(u, '/api/device/apply-device', { deviceId });
    expect(third.code).toBe(20000);
    applyId = third.data.applyId;
    codeOrigin = `http://${codeLabel(applyId)}.code.localhost:${codePort}`;
    session = await openSession(u, applyId);
    expect(session.origin).toBe(codeOrigin);
    expect((await request(`${session.origin}${session.prefix}/`, { cookie: session.cookie })).status).toBe(
      200,
    );
  }, 30_000);

  it('cuts the WebSocket when the sign-in ends, and refuses its session after', async () => {
    // A second sign-in of the same user: its end leaves the first one's session alone.
    const token = await issueCredential(t.app.storage.db, u.id, 'access', { ttlMs: 3_600_000 });
    const second: TestUser = { ...u, token, headers: { authorization: token } };
    const s = await openSession(second, applyId);
    const c = wsOpen(s, '/ws');
    await c.opened;
    await c.next();
    const out = await api(second, '/api/user/logout', {});
    expect(out.code).toBe(20000);
    expect(await c.ended).toEqual({ code: VncClose.auth, reason: 'session.ended' });
    expect((await request(`${s.origin}${s.prefix}/`, { cookie: s.cookie })).status).toBe(401);
    expect((await request(`${session.origin}${session.prefix}/`, { cookie: session.cookie })).status).toBe(
      200,
    );
  }, 30_000);

  it('holds at most socketsPerApply WebSockets on one apply', async () => {
    const open = [];
    for (let i = 0; i < CODE_LIMITS.socketsPerApply; i++) {
      const c = wsOpen(session, '/ws');
      await c.opened;
      open.push(c);
    }
    await expect(wsOpen(session, '/ws').opened).rejects.toThrow('HTTP 429 code.too_many');
    for (const c of open) c.ws.close();
    await Promise.all(open.map((c) => c.ended));
  }, 60_000);
});
