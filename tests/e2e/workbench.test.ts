// The workbench in Chromium against the real service: two shells side by side that survive a page
// reload with their output, the workbench driven by keyboard alone (palette, splits, focus movement
// between panes, pane toggles), and the layout kept per user across reloads.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { MainboardPage } from './pages/DevicePages.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

async function api<T>(svc: Service, token: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${svc.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { Authorization: token, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const env = (await res.json()) as { code: number; message: string; data: T };
  if (env.code !== 20000) throw new Error(`${path}: ${env.code} ${env.message}`);
  return env.data;
}

describe.skipIf(SKIP_E2E)('workbench', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let token: string;
  let console_: ConsolePage;
  let wb: WorkbenchPage;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    // The board is leased through the API: this suite is about the workbench, not the apply page.
    await api(svc, token, '/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
      filterReq: {},
      serverName: 'bench',
    });
    ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript((t) => localStorage.setItem('token', t), token);
    await ctx.addInitScript(forceDomRenderer);
    page = await ctx.newPage();
    console_ = new ConsolePage(page, svc.url);
    wb = new WorkbenchPage(page);
    await console_.goto('/mainboard');
    await new MainboardPage(page).start('bench');
    await wb.ready();
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('opens two shells side by side, runs a command in each, and both resume with their output after a reload', async () => {
    await wb.waitForLiveTerminals(1);
    await page.getByTestId('split-shell').click();
    await wb.waitForLiveTerminals(2);
    await wb.run(0, 'echo "left-$((6*7))"', 'left-42');
    await wb.run(1, 'echo "right-$((7*8))"', 'right-56');
    const ids = await wb.terminals().evaluateAll((els) => els.map((e) => e.getAttribute('data-shell-id')));
    expect(new Set(ids).size).toBe(2);

    await page.reload();
    await wb.ready();
    await wb.waitForLiveTerminals(2);
    // The same shells (same ids), replayed from the server's scrollback.
    expect(await wb.terminals().evaluateAll((els) => els.map((e) => e.getAttribute('data-shell-id')))).toEqual(ids);
    await wb.waitForText(0, 'left-42');
    await wb.waitForText(1, 'right-56');
    // And they are still live shells, not a picture of them.
    await wb.run(1, 'echo "again-$((1+1))"', 'again-2');
  });

  it('is driven by keyboard alone: palette, new tab, split, focus movement between panes, pane toggles', async () => {
    const tabsBefore = await page.getByTestId('shell-tab').count();

    // A new shell tab from the palette.
    await console_.runFromPalette('New shell', 'workbench.newShell');
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="shell-tab"]').length === n, tabsBefore + 1);
    await wb.waitForLiveTerminals(1);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    await page.keyboard.type('echo "kbd-$((3*3))"');
    await page.keyboard.press('Enter');
    await wb.waitForText(0, 'kbd-9');

    // Split with Ctrl+Alt+\ : the new shell has the focus.
    await page.keyboard.press('Control+Alt+Backslash');
    await wb.waitForLiveTerminals(2);
    await page.waitForFunction(() => {
      const panes = [...document.querySelectorAll('[data-tab-id]:not(.invisible) [data-pane-id^="shell:"]')];
      return panes.length === 2 && panes[1].contains(document.activeElement);
    });
    await page.keyboard.type('echo "split-$((5*5))"');
    await page.keyboard.press('Enter');
    await wb.waitForText(1, 'split-25');

    // Ctrl+Alt+Left goes to the shell on the left, then to the file tree; Right comes back.
    const rightShell = await wb.focusedPane();
    await page.keyboard.press('Control+Alt+ArrowLeft');
    const leftShell = await wb.focusedPane();
    expect(leftShell).toMatch(/^shell:/);
    expect(leftShell).not.toBe(rightShell);
    await page.keyboard.press('Control+Alt+ArrowLeft');
    expect(await wb.focusedPane()).toBe('files');
    await page.keyboard.press('Control+Alt+ArrowUp');
    expect(await wb.focusedPane()).toBe('files');
    await page.keyboard.press('Control+Alt+ArrowRight');
    expect(await wb.focusedPane()).toMatch(/^shell:|^editor$/);
    // Up reaches the editor above the shells (or stays there); Down comes back to a shell.
    await page.keyboard.press('Control+Alt+ArrowUp');
    expect(await wb.focusedPane()).toBe('editor');
    await page.keyboard.press('Control+Alt+ArrowDown');
    expect(await wb.focusedPane()).toMatch(/^shell:/);
    await page.keyboard.press('Control+Alt+ArrowRight');
    await page.keyboard.press('Control+Alt+ArrowRight');
    expect(await wb.focusedPane()).toBe('load');

    // Keys typed into a shell while moving never reached it: the shell shows no stray characters.
    expect(await wb.terminalText(1)).not.toMatch(/\^\[|\[1;7/);

    // Ctrl+Alt+G hides the load graphs; the choice survives a reload.
    await page.keyboard.press('Control+Alt+g');
    await page.getByTestId('load-pane').waitFor({ state: 'detached' });
    await page.reload();
    await wb.ready();
    await wb.waitForLiveTerminals(2);
    expect(await page.getByTestId('load-pane').count()).toBe(0);
    expect(await page.getByTestId('shell-tab').count()).toBe(tabsBefore + 1);
    await console_.runFromPalette('Show or hide the load graphs', 'workbench.toggleLoad');
    await page.getByTestId('load-pane').waitFor();

    // Closing the focused shell with Ctrl+Alt+W closes it on the server too.
    await wb.focusTerminal(1);
    const closing = await wb.terminals().nth(1).getAttribute('data-shell-id');
    await page.keyboard.press('Control+Alt+w');
    await page.waitForFunction((id) => !document.querySelector(`[data-shell-id="${id}"]`), closing);
    expect(await wb.terminals().count()).toBe(1);
  });

  it('shows the board, its time left and the load graphs fed by the board', async () => {
    expect(await wb.boardName().textContent()).toBe('bench');
    expect(await page.getByTestId('workbench-time-left').textContent()).toMatch(/^1d 23h|^2d 0h/);
    await page.getByTestId('chart-cpu-mem').waitFor();
    // The board reports its load every few seconds: a CPU figure appears within a refresh or two.
    await page.waitForFunction(() => /CPU \d/.test(document.querySelector('[data-testid="chart-cpu-mem-now"]')?.textContent ?? ''), null, {
      timeout: 20_000,
    });
  });
});
