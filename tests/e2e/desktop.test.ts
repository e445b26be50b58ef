// The board's desktop in Chromium against the real service: the VNC pane opened from the palette by
// keyboard, the desktop canvas drawn (pixels checked, not just a canvas), text typed into the xterm on
// it and read back through a shell on the same board; the showVnc cookie; the code window's fallback
// while the board runs no code-server, then, with a web app started on the board's code-server port,
// that app inside the code window's iframe (from the apply's own code host, unable to reach the
// console's storage) and in a new tab — all on a service whose boards start no code-server. Then, on a service
// with the host's code-server install (scripts/install-code-server.sh), the code window opened by
// keyboard shows VS Code on the board's files (in a tab of its own: see the test).
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CODE_SERVER_DIR, hostCodeServer } from '#server/boards/local/code-server.ts';
import { hostDesktop } from '#server/boards/local/desktop.ts';
import { ADMIN_PASSWORD, passwordLogin, requestBoard } from './helpers/api.ts';
import { signedInContext } from './helpers/context.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { MainboardPage } from './pages/DevicePages.ts';
import { WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOTS = path.join(import.meta.dirname, 'screenshots');

/** A service with `env`, the admin signed in (English, DOM renderer) on the workbench of a board leased as `name`. */
async function boardWorkbench(name: string, env: Record<string, string>) {
  const svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD, ...env });
  const browser = await launchChromium();
  const token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
  await requestBoard(svc.url, token, name);
  const ctx = await signedInContext(browser, token, { viewport: { width: 1600, height: 900 } });
  const page = await ctx.newPage();
  const console_ = new ConsolePage(page, svc.url);
  const wb = new WorkbenchPage(page);
  await console_.goto('/mainboard');
  await new MainboardPage(page).start(name);
  await wb.ready();
  await wb.waitForLiveTerminals(1);
  return { svc, browser, ctx, page, console_, wb };
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
  let console_: ConsolePage;
  let wb: WorkbenchPage;

  beforeAll(async () => {
    if (!hostDesktop())
      throw new Error('no desktop on this host: apt-get install tigervnc-standalone-server openbox xterm');
    fs.mkdirSync(SHOTS, { recursive: true });
    // Boards here start no code-server (as on a host without the install): the fallback and a stand-in.
    ({ svc, browser, ctx, page, console_, wb } = await boardWorkbench('desk', {
      BIANBU_CODE_PORT: '0',
      BIANBU_CODE_SERVER_DIR: '',
    }));
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
    // The page runs on the apply's own code host (never the console's: cookies ignore ports), after
    // the ticket left its address.
    const inner = page.frames().find((f) => f.url().includes('/code/'));
    expect(inner).toBeTruthy();
    const url = new URL(inner!.url());
    expect(url.origin).not.toBe(new URL(svc.url).origin);
    expect(url.hostname).toMatch(/^a[0-9a-f]{24}\.code\.localhost$/);
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

/** Resident memory of the host's code-server processes (server, extension host, terminals' host, watcher). */
function codeServerRssMiB(): number {
  let kib = 0;
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(`${DEFAULT_CODE_SERVER_DIR}/`))
        continue;
      kib += Number(/^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? 0);
    } catch {}
  }
  return Math.round(kib / 1024);
}

// Skipped only with the rest of the browser suite (no Chromium, E2E_REQUIRED unset); a host without
// code-server fails here with the reason (`.ci/run` installs it).
describe.skipIf(SKIP_E2E)('VS Code (code-server) in the code window', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let console_: ConsolePage;
  let wb: WorkbenchPage;

  beforeAll(async () => {
    if (!hostCodeServer(DEFAULT_CODE_SERVER_DIR))
      throw new Error(`no code-server in ${DEFAULT_CODE_SERVER_DIR}: run scripts/install-code-server.sh`);
    fs.mkdirSync(SHOTS, { recursive: true });
    ({ svc, browser, ctx, page, console_, wb } = await boardWorkbench('vscode', { BIANBU_CODE_PORT: '0' }));
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('opens by keyboard on VS Code, whose explorer lists a file made in the board’s shell', async () => {
    // A file with a name of its own, made by the board's root in the user's home (which VS Code opens).
    const name = `from-shell-${Date.now().toString(36)}.txt`;
    await wb.run(
      0,
      `echo hi > /home/user/${name} && chown 1000:1000 /home/user/${name} && echo made-$((2+3))`,
      'made-5',
    );
    // What the proxy could not serve (code-server's own 404s for files it does not ship aside).
    const failed: string[] = [];
    ctx.on('response', (r) => {
      if (r.url().includes('/code/') && r.status() >= 500)
        failed.push(`${r.status()} ${r.headers()['x-code-reason']} ${r.url()}`);
    });
    // VS Code keeps its state in the browser's storage. The code window is on a site of its own, so
    // inside the console's frame that storage is third-party: browsers that partition it (Chrome,
    // Firefox) give VS Code its own, but this harness turns partitioning off (Playwright disables
    // ThirdPartyStoragePartitioning) and so blocks it, as browsers that block third-party site data do.
    // There VS Code runs in a tab of its own, on its own site — what "Open in a new tab" is for.
    const openInTab = async () => {
      const [tab] = await Promise.all([ctx.waitForEvent('page'), page.getByTestId('code-open-tab').click()]);
      return tab;
    };
    const begun = Date.now();
    await page.keyboard.press('Control+Alt+KeyC');
    await expect
      .poll(() => page.getByTestId('code-pane').getAttribute('data-available'), { timeout: 20_000 })
      .toBe('yes');
    // Until the board's page has loaded, the pane says VS Code is being opened (and started).
    expect(await page.getByTestId('code-starting').innerText()).toMatch(/Opening VS Code/);
    const tab = await openInTab();
    // The workbench loads (code-server starts on this first use), opens /home/user and lists the file.
    const row = tab.locator('.explorer-folders-view .monaco-list-row', { hasText: name });
    try {
      await row.waitFor({ timeout: 60_000 });
    } catch (e) {
      await tab.screenshot({ path: path.join(SHOTS, 'desktop-vscode-failed-en.png') });
      await wb.run(
        0,
        'tail -n 20 /home/user/.local/share/code-server/bianbu.log; echo log-$((1+1))',
        'log-2',
      );
      throw new Error(`${(e as Error).message}\n${await wb.terminalText(0)}`);
    }
    console.log(`code window: VS Code listed the board's file ${Date.now() - begun} ms after Ctrl+Alt+C`);
    // It is VS Code's workbench, on the apply's own code host, and the explorer's folder is the
    // user's home (named "user").
    expect(new URL(tab.url()).hostname).toMatch(/^a[0-9a-f]{24}\.code\.localhost$/);
    expect(await tab.locator('.monaco-workbench').count()).toBe(1);
    expect(await tab.locator('.explorer-viewlet .pane-header').first().innerText()).toMatch(/^USER/i);
    await tab.screenshot({ path: path.join(SHOTS, 'desktop-vscode-en.png') });
    console.log(`code-server in the board, workbench open: ${codeServerRssMiB()} MiB resident`);
    await tab.close();

    // Closed and opened again by keyboard: the running code-server, a fresh session and workbench.
    await page.bringToFront();
    await wb.run(0, 'echo back-$((3+1))', 'back-4');
    await page.keyboard.press('Control+Alt+KeyC');
    await page.getByTestId('code-pane').waitFor({ state: 'detached' });
    const again = Date.now();
    await page.keyboard.press('Control+Alt+KeyC');
    await expect
      .poll(() => page.getByTestId('code-pane').getAttribute('data-available'), { timeout: 20_000 })
      .toBe('yes');
    const second = await openInTab();
    await second
      .locator('.explorer-folders-view .monaco-list-row', { hasText: name })
      .waitFor({ timeout: 60_000 });
    console.log(`code window: VS Code listed the file again ${Date.now() - again} ms after reopening`);
    await second.close();
    const proxyLog = svc
      .output()
      .split('\n')
      .filter((l) => /code/i.test(l) && /warn|error/i.test(l));
    expect(failed, proxyLog.slice(-10).join('\n')).toEqual([]);
  }, 120_000);
});
