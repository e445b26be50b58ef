// The board's desktop in Chromium against the real service: the VNC pane opened from the palette by
// keyboard, the desktop canvas drawn (pixels checked, not just a canvas), text typed into the xterm on
// it and read back through a shell on the same board; the showVnc cookie; the code window's fallback
// while the board runs no code-server, then, with a web app started on the board's code-server port,
// that app inside the code window's iframe (from the code origin, unable to reach the console's
// storage) and in a new tab.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostDesktop } from '#server/boards/local/desktop.ts';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { MainboardPage } from './pages/DevicePages.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOTS = path.join(import.meta.dirname, 'screenshots');

async function api<T>(svc: Service, token: string, p: string, body: unknown): Promise<T> {
  const res = await fetch(`${svc.url}${p}`, {
    method: 'POST',
    headers: { Authorization: token, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const env = (await res.json()) as { code: number; message: string; data: T };
  if (env.code !== 20000) throw new Error(`${p}: ${env.code} ${env.message}`);
  return env.data;
}

/** Lit (non-background) pixels of the noVNC canvas, sampled on a grid. */
function litPixels(page: Page): Promise<number> {
  return page.evaluate(() => {
    const c = document.querySelector('[data-testid="vnc-screen"] canvas') as HTMLCanvasElement | null;
    if (!c || !c.width) return 0;
    const ctx = c.getContext('2d');
    if (!ctx) return 0;
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4 * 7) if (d[i] > 40 || d[i + 1] > 40 || d[i + 2] > 40) n++;
    return n;
  });
}

// Skipped only with the rest of the browser suite (no Chromium, E2E_REQUIRED unset); a host without
// TigerVNC, openbox and xterm fails here with the reason (`.ci/run` installs them).
describe.skipIf(SKIP_E2E)('the board’s desktop and code window', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let token: string;
  let console_: ConsolePage;
  let wb: WorkbenchPage;

  beforeAll(async () => {
    if (!hostDesktop())
      throw new Error('no desktop on this host: apt-get install tigervnc-standalone-server openbox xterm');
    fs.mkdirSync(SHOTS, { recursive: true });
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD, BIANBU_CODE_PORT: '0' });
    browser = await launchChromium();
    token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    await api(svc, token, '/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
      filterReq: {},
      serverName: 'desk',
    });
    ctx = await browser.newContext({ viewport: { width: 1600, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript((t) => localStorage.setItem('token', t), token);
    await ctx.addInitScript(forceDomRenderer);
    page = await ctx.newPage();
    console_ = new ConsolePage(page, svc.url);
    wb = new WorkbenchPage(page);
    await console_.goto('/mainboard');
    await new MainboardPage(page).start('desk');
    await wb.ready();
    await wb.waitForLiveTerminals(1);
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('opens the desktop from the palette, draws it, and types into its xterm', async () => {
    // noVNC is not part of what the workbench loaded.
    const scripts = await page.evaluate(() => performance.getEntriesByType('resource').map((r) => r.name));
    expect(scripts.some((s) => /VncPane/.test(s))).toBe(false);
    const vncFrames: string[] = [];
    page.on('websocket', (ws) => {
      if (!ws.url().includes('/vnc/')) return;
      ws.on('framereceived', (f) => vncFrames.push(`<${f.payload.length}`));
      ws.on('framesent', (f) => vncFrames.push(`>${f.payload.length}`));
    });
    await console_.runFromPalette('desktop vnc', 'desktop.toggleVnc');
    const pane = page.getByTestId('vnc-pane');
    await pane.waitFor({ timeout: 20_000 });
    await page.waitForSelector('[data-testid="vnc-pane"][data-status="connected"]', { timeout: 45_000 });
    expect((await ctx.cookies()).find((c) => c.name === 'showVnc')?.value).toBe('true');
    // The desktop draws: the xterm (white) on openbox's root window appears on the canvas.
    try {
      await expect.poll(() => litPixels(page), { timeout: 30_000, interval: 500 }).toBeGreaterThan(2000);
    } catch (e) {
      // Say why: the board's own logs of its X server and terminal, read through its shell.
      await wb.run(
        0,
        'cat /tmp/.bianbu-desktop.log /tmp/.bianbu-terminal.log | tail -n 20; ps -ef | grep -v ps; echo logs-$((1+1))',
        'logs-2',
      );
      const canvases = await page.evaluate(() =>
        [...document.querySelectorAll('[data-testid="vnc-screen"] canvas')].map((c) => {
          const k = c as HTMLCanvasElement;
          return `${k.width}x${k.height} shown=${k.getBoundingClientRect().width}`;
        }),
      );
      throw new Error(
        `${(e as Error).message}\ncanvases: ${canvases.join(', ')}; vnc frames: ${vncFrames.join(' ')}\n${await wb.terminalText(0)}`,
      );
    }
    await page.screenshot({ path: path.join(SHOTS, 'desktop-vnc-en.png') });

    // Click into the xterm (at 40,40 + a few cells on a 1280x800 desktop, scaled to the canvas) and type.
    const canvas = page.locator('[data-testid="vnc-screen"] canvas');
    const box = (await canvas.boundingBox())!;
    const sx = box.width / 1280;
    await page.mouse.click(box.x + 200 * sx, box.y + 120 * sx);
    await page.keyboard.type('echo "vnc-$((6*7))-typed" > /tmp/from-vnc.txt', { delay: 15 });
    await page.keyboard.press('Enter');
    await page.waitForTimeout(500);
    await page.screenshot({ path: path.join(SHOTS, 'desktop-vnc-typed-en.png') });
    // Read back through a shell on the same board.
    await wb.run(0, 'cat /tmp/from-vnc.txt', 'vnc-42-typed', 20_000);
  }, 150_000);

  it('keeps the pane across a reload (showVnc cookie) and hides it by keyboard', async () => {
    await page.reload();
    await wb.ready();
    await page.waitForSelector('[data-testid="vnc-pane"][data-status="connected"]', { timeout: 45_000 });
    await page.keyboard.press('Control+Alt+KeyV');
    await page.getByTestId('vnc-pane').waitFor({ state: 'detached' });
    expect((await ctx.cookies()).find((c) => c.name === 'showVnc')?.value).toBe('false');
  }, 90_000);

  it('the code window says the board runs no code-server and offers the built-in editor', async () => {
    await console_.runFromPalette('code window', 'desktop.toggleCode');
    const pane = page.getByTestId('code-pane');
    await pane.waitFor();
    await expect.poll(() => pane.getAttribute('data-available')).toBe('no');
    expect(await page.getByTestId('code-message').innerText()).toContain('no code-server');
    await page.screenshot({ path: path.join(SHOTS, 'desktop-code-en.png') });
    await page.getByTestId('code-open-editor').click();
    await page.locator('[data-pane-id="editor"]').waitFor();
    expect((await ctx.cookies()).find((c) => c.name === 'showCode')?.value).toBe('true');
  }, 60_000);

  it('with an app on the board’s code-server port, the code window shows it from the code origin, by keyboard and in a new tab', async () => {
    // A small web app standing in for code-server, started in the board as its user (uid 1000).
    const app =
      "require('http').createServer((q,s)=>{s.setHeader('content-type','text/html');" +
      "s.end('<h1 id=code-fixture>board app '+process.getuid()+' at '+q.url+'</h1>')}).listen(8080,'127.0.0.1',()=>console.log('app-'+'up'))";
    await wb.run(
      0,
      `(setpriv --reuid=1000 --regid=1000 --init-groups node -e "${app}" > /tmp/code-app.log 2>&1 &); sleep 1; cat /tmp/code-app.log`,
      'app-up',
    );
    // Close and open the code window by keyboard: it asks again and finds the app.
    await page.keyboard.press('Control+Alt+KeyC');
    await page.getByTestId('code-pane').waitFor({ state: 'detached' });
    await page.keyboard.press('Control+Alt+KeyC');
    await expect
      .poll(() => page.getByTestId('code-pane').getAttribute('data-available'), { timeout: 20_000 })
      .toBe('yes');
    const frame = page.frameLocator('[data-testid="code-frame"]');
    await expect
      .poll(() => frame.locator('#code-fixture').textContent(), { timeout: 20_000 })
      .toBe('board app 1000 at /');
    // The page runs on the code origin (another port), after the ticket left its address.
    const inner = page.frames().find((f) => f.url().includes('/code/'));
    expect(inner).toBeTruthy();
    const url = new URL(inner!.url());
    expect(url.origin).not.toBe(new URL(svc.url).origin);
    expect(url.hostname).toBe('127.0.0.1');
    expect(url.search).toBe('');
    expect(url.pathname).toMatch(/^\/code\/[^/]+\/[A-Za-z0-9_-]+\/$/);
    // The board's script cannot reach the console's window or its stored sign-in.
    const reach = await inner!.evaluate(() => {
      try {
        return String(window.parent.localStorage.getItem('token'));
      } catch {
        return 'blocked';
      }
    });
    expect(reach).toBe('blocked');
    await page.screenshot({ path: path.join(SHOTS, 'desktop-code-frame-en.png') });

    // Open in a new tab: the app again, on a session of its own.
    const [tab] = await Promise.all([ctx.waitForEvent('page'), page.getByTestId('code-open-tab').click()]);
    await tab.waitForLoadState();
    await expect
      .poll(() => tab.locator('#code-fixture').textContent(), { timeout: 20_000 })
      .toBe('board app 1000 at /');
    expect(new URL(tab.url()).origin).toBe(url.origin);
    expect(new URL(tab.url()).pathname).not.toBe(url.pathname);
    expect(await tab.evaluate(() => window.opener === null)).toBe(true);
    await tab.close();
  }, 90_000);
});
