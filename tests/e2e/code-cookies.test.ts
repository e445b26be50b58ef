// A hostile board page in the code window, in Chromium against the real service: the board serves, on
// its code-server port, a page whose script reads `document.cookie` and writes the console's cookies
// (lang, termFont, applyInfo, theme, pane toggles, redirect, the provider's _session) for every path and
// Domain it can name, and whose answer sets the same through Set-Cookie. Opened in the code window of a
// console on 127.0.0.1 and of one on localhost (the parent name of code.localhost), it sees none of the
// console's cookies and the console's cookies are the same afterwards (issue 34, item 5: browsers share
// a host's cookies across ports, so a code window on the console's host name failed both).
import type { Browser, BrowserContext, Cookie, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin, requestBoard } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { MainboardPage } from './pages/DevicePages.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

/** What the board's page tries: the console's cookie names, on every path and Domain a page can name. */
const CONSOLE_COOKIES = [
  'lang',
  'termFont',
  'applyInfo',
  'theme',
  'termTheme',
  'showCode',
  'showVnc',
  'sidebarStatus',
  'activeTab',
  'redirect',
  '_session',
];

/** The board's app (run as the board's user on port 8080): the page, and its own Set-Cookie attempts. */
const BOARD_APP = `
const names = ${JSON.stringify(CONSOLE_COOKIES)};
const page = \`<!doctype html><title>board</title><pre id=seen></pre><pre id=after></pre><p id=done></p>
<script>
const seen = document.cookie;
const names = \${JSON.stringify(names)};
for (const n of names)
  for (const d of ['', '; domain=localhost', '; domain=.localhost', '; domain=127.0.0.1', '; domain=code.localhost'])
    for (const p of ['/', '/idp', '/workbench'])
      for (const x of ['', '; SameSite=None; Secure', '; SameSite=None; Secure; Partitioned', '; SameSite=Lax'])
        document.cookie = n + '=stolen-by-script' + d + '; path=' + p + x + '; max-age=3600';
document.getElementById('seen').textContent = seen;
document.getElementById('after').textContent = document.cookie;
document.getElementById('done').textContent = 'done';
</script>\`;
require('http').createServer((q, s) => {
  s.setHeader('content-type', 'text/html');
  s.setHeader('set-cookie', names.flatMap((n) => [
    n + '=stolen-by-header; Path=/; Max-Age=3600',
    n + '=stolen-by-header; Path=/; Domain=localhost; Max-Age=3600',
    n + '=stolen-by-header; Path=/; Domain=127.0.0.1; Max-Age=3600',
  ]));
  s.end(page);
}).listen(8080, '127.0.0.1', () => console.log('cookie-' + 'thief-up'));
`;

describe.skipIf(SKIP_E2E)('a board page in the code window and the console’s cookies', () => {
  let svc: Service;
  let browser: Browser;
  let token: string;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    svc = await startService({
      BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD,
      BIANBU_CODE_PORT: '0',
      BIANBU_CODE_SERVER_DIR: '',
    });
    browser = await launchChromium();
    token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    await requestBoard(svc.url, token, 'cookies');
  }, 120_000);

  afterAll(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await svc?.stop();
  });

  /** The console at `host`, signed in, on the workbench of the board (its own apply, its cookies set). */
  async function workbenchAt(
    host: string,
  ): Promise<{ ctx: BrowserContext; page: Page; wb: WorkbenchPage; base: string }> {
    const base = `http://${host}:${svc.port}`;
    const ctx = await browser.newContext({ viewport: { width: 1600, height: 900 } });
    contexts.push(ctx);
    await ctx.addCookies([
      { name: 'lang', value: 'en', url: base },
      { name: 'termFont', value: '15', url: base },
    ]);
    await ctx.addInitScript((t) => localStorage.setItem('token', t), token);
    await ctx.addInitScript(forceDomRenderer);
    const page = await ctx.newPage();
    await new ConsolePage(page, base).goto('/mainboard');
    await new MainboardPage(page).start('cookies');
    const wb = new WorkbenchPage(page);
    await wb.ready();
    await wb.waitForLiveTerminals(1);
    return { ctx, page, wb, base };
  }

  const pairs = (cookies: Cookie[]) => cookies.map((c) => `${c.name}=${c.value} ${c.domain}${c.path}`).sort();

  for (const host of ['127.0.0.1', 'localhost']) {
    it(`on a console at ${host}, the board’s page neither reads nor sets the console’s cookies`, async () => {
      const { ctx, page, wb, base } = await workbenchAt(host);
      if (host === '127.0.0.1') {
        const b64 = Buffer.from(BOARD_APP).toString('base64');
        await wb.run(
          0,
          `echo ${b64} | base64 -d > /tmp/thief.cjs; chmod 644 /tmp/thief.cjs; (setpriv --reuid=1000 --regid=1000 --init-groups node /tmp/thief.cjs > /tmp/thief.log 2>&1 &); sleep 1; cat /tmp/thief.log`,
          'cookie-thief-up',
        );
      }
      // The console's own cookies, as its pages see them (applyInfo written by the apply just made).
      const before = await ctx.cookies(`${base}/workbench`);
      const names = before.map((c) => c.name);
      expect(names).toEqual(expect.arrayContaining(['lang', 'termFont', 'applyInfo']));
      // The one JavaScript-readable cookie about the apply holds its ids and nothing more.
      const applyInfo = JSON.parse(decodeURIComponent(before.find((c) => c.name === 'applyInfo')!.value));
      expect(Object.keys(applyInfo).sort()).toEqual(['applyId', 'deviceId', 'serverName']);

      await page.keyboard.press('Control+Alt+KeyC');
      await expect
        .poll(() => page.getByTestId('code-pane').getAttribute('data-available'), { timeout: 20_000 })
        .toBe('yes');
      const frame = page.frameLocator('[data-testid="code-frame"]');
      await expect.poll(() => frame.locator('#done').textContent(), { timeout: 20_000 }).toBe('done');
      const inner = page.frames().find((f) => f.url().includes('/code/'))!;
      const codeHost = new URL(inner.url()).hostname;
      const seen = (await frame.locator('#seen').textContent()) ?? '';
      const after = (await frame.locator('#after').textContent()) ?? '';

      // Read: none of the console's cookies reached the board's script.
      // (The board's own cookies of those names, on its own host, may be there: their values differ.)
      for (const c of before)
        expect(seen, `${c.name} visible to the board on ${codeHost}`).not.toContain(`${c.name}=${c.value}`);
      const { applyId } = JSON.parse(decodeURIComponent(before.find((c) => c.name === 'applyInfo')!.value));
      expect(seen).not.toContain(applyId);
      // Written: what the board set lives on its own host only (in a cross-site frame Chromium keeps
      // only partitioned cookies); the console's cookies are unchanged.
      expect(after).toContain('lang=stolen-by-script');
      const now = await ctx.cookies(`${base}/workbench`);
      expect(pairs(now.filter((c) => names.includes(c.name)))).toEqual(pairs(before));
      // Nothing of the board's on any path of the console's host (the provider's /idp included).
      const everywhere = await ctx.cookies(
        ['/', '/idp', '/idp/auth', '/workbench'].map((p) => `${base}${p}`),
      );
      expect(everywhere.filter((c) => c.value.startsWith('stolen-by-')).map((c) => c.name)).toEqual([]);
      // And the console's page reads its own values (a reload reads the cookies again).
      await page.reload();
      await wb.ready();
      const read = await page.evaluate(() => document.cookie);
      expect(read).not.toContain('stolen-by-');
      expect(read).toContain('lang=en');
      // The code window ran on a host name of the apply's own, under code.localhost.
      expect(codeHost).toMatch(/^a[0-9a-f]{24}\.code\.localhost$/);
    }, 120_000);
  }
});
