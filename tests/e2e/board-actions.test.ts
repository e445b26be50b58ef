// Board actions in the workbench, in Chromium against the real service and its local board lab: a
// power reset driven by keyboard (Ctrl+Alt+R, then the confirmation) while a login shell runs a
// background process and the serial console is open. The login shell closes with the reason, the
// serial console shows the new boot up to `login:`, the state badge goes resetting → leased without
// a reload, a new shell works, the process is gone and files written before the reset are kept.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { ApplyPage, MainboardPage } from './pages/DevicePages.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOT_DIR = 'tests/e2e/screenshots';

/** The state of the board badge in the workbench header. */
function badgeState(page: Page): Promise<string | null> {
  return page.locator('[data-testid="workbench-header"] [data-state]').getAttribute('data-state');
}

describe.skipIf(SKIP_E2E)('board actions in the workbench', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript(forceDomRenderer);
    page = await ctx.newPage();
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('power-resets the board by keyboard: the login shell closes with the reason, the serial console shows the boot, the badge goes resetting and back, and files outlive the processes', async () => {
    const console_ = new ConsolePage(page, svc.url);
    const wb = new WorkbenchPage(page);

    // Sign in with the password form, by keyboard.
    await console_.goto('/login');
    await page.locator('#login-username').fill('admin');
    await page.locator('#login-password').fill(ADMIN_PASSWORD);
    await page.locator('#login-password').press('Enter');
    await console_.waitForPath('/mainboard');

    // Apply for a board and Start it into the workbench.
    await page.getByTestId('apply-new').click();
    await console_.waitForPath('/riscvhouse');
    const apply = new ApplyPage(page);
    await apply.agree();
    await apply.chooseDuration('48h');
    await apply.name('reset-lab');
    await apply.getStarted();
    await console_.waitForPath('/mainboard');
    const main = new MainboardPage(page);
    await main.waitForRow('reset-lab');
    await main.start('reset-lab');
    await wb.ready();
    expect(await wb.boardName().textContent()).toBe('reset-lab');
    await page.waitForFunction(
      () =>
        document
          .querySelector('[data-testid="workbench-header"] [data-state]')
          ?.getAttribute('data-state') === 'leased',
    );

    // The first shell: a file on disk and a background process, both checked before the reset.
    await wb.waitForLiveTerminals(1);
    await wb.focusTerminal(0);
    const loginShell = await wb.terminals().nth(0).getAttribute('data-shell-id');
    await page.keyboard.type(
      'echo "kept-$((20+22))" > ~/before-reset.txt; sleep 1000 & echo "started-$((6*7))"',
    );
    await page.keyboard.press('Enter');
    await wb.waitForText(0, 'started-42');
    await page.keyboard.type('echo "procs=$(ps ax | grep -c "[s]leep 1000")"');
    await page.keyboard.press('Enter');
    await wb.waitForText(0, 'procs=1');

    // The serial console in a new tab (Ctrl+Alt+Shift+N): it replays the first boot up to `login:`.
    await page.keyboard.press('Control+Alt+Shift+N');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 2);
    expect(await page.getByTestId('shell-tab').nth(1).textContent()).toMatch(/Serial 1/);
    await wb.waitForLiveTerminals(1);
    const serial = await wb.terminals().nth(0).getAttribute('data-shell-id');
    expect(serial).not.toBe(loginShell);
    await wb.waitForText(0, 'login:');
    expect(await wb.terminalText(0)).not.toContain('--- power reset ---');

    // Record every state the badge shows from now on, so a brief `resetting` cannot be missed.
    await page.evaluate(() => {
      const w = window as unknown as { __states: string[] };
      w.__states = [];
      const note = () => {
        const s = document
          .querySelector('[data-testid="workbench-header"] [data-state]')
          ?.getAttribute('data-state');
        if (s && w.__states[w.__states.length - 1] !== s) w.__states.push(s);
      };
      note();
      new MutationObserver(note).observe(document.querySelector('[data-testid="workbench-header"]') as Node, {
        subtree: true,
        childList: true,
        attributes: true,
        attributeFilter: ['data-state'],
      });
    });

    // Power reset by keyboard: Ctrl+Alt+R opens the confirmation with Cancel focused; Tab, Enter.
    const urlBefore = page.url();
    await page.keyboard.press('Control+Alt+r');
    const dialog = page.getByTestId('reset-dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Reset the power of reset-lab?');
    await page.waitForFunction(() => document.activeElement?.textContent?.trim() === 'Cancel');
    await page.keyboard.press('Tab');
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'reset-confirm');
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });

    // The serial console stays open through the reset and shows the new boot, ending at `login:`.
    await wb.waitForText(0, '--- power reset ---', 30_000);
    await page.waitForFunction(
      (id) => {
        const text =
          document
            .querySelector(`[data-shell-id="${id}"] .xterm-rows`)
            ?.textContent?.replace(/\u00a0/g, ' ') ?? '';
        const after = text.slice(text.lastIndexOf('--- power reset ---'));
        return after.includes('Starting kernel') && /login:/.test(after);
      },
      serial,
      { timeout: 30_000 },
    );
    expect(await wb.terminals().nth(0).getAttribute('data-status')).toBe('live');

    // The badge went through resetting and is back to leased, without a reload.
    await page.waitForFunction(
      () =>
        document
          .querySelector('[data-testid="workbench-header"] [data-state]')
          ?.getAttribute('data-state') === 'leased',
      null,
      {
        timeout: 30_000,
      },
    );
    const states = await page.evaluate(() => (window as unknown as { __states: string[] }).__states);
    expect(states).toEqual(['leased', 'resetting', 'leased']);
    expect(await badgeState(page)).toBe('leased');
    expect(await page.locator('[data-testid="workbench-header"] [data-state]').textContent()).toMatch(
      /Leased/i,
    );
    expect(page.url()).toBe(urlBefore);

    // The login shell's tab (Ctrl+Alt+PgUp): closed, and it says the board was reset.
    await page.keyboard.press('Control+Alt+PageUp');
    await page.waitForFunction(
      (id) => !!document.querySelector(`[data-tab-id]:not(.invisible) [data-shell-id="${id}"]`),
      loginShell,
    );
    const closedPane = page.locator(`[data-shell-id="${loginShell}"]`);
    await page.waitForFunction(
      (id) => document.querySelector(`[data-shell-id="${id}"]`)?.getAttribute('data-status') === 'closed',
      loginShell,
    );
    const banner = closedPane.getByTestId('terminal-banner');
    expect(await banner.isVisible()).toBe(true);
    expect(await banner.textContent()).toBe(
      'The shell was closed: the board was reset. — press Enter to start a new shell',
    );
    await wb.waitForText(0, 'The shell was closed: the board was reset.');

    // A new shell (Ctrl+Alt+N) works: the background process is gone, the file is still there.
    await page.keyboard.press('Control+Alt+n');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 3);
    await wb.waitForLiveTerminals(1);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    const fresh = await wb.terminals().nth(0).getAttribute('data-shell-id');
    expect(fresh).not.toBe(loginShell);
    await page.keyboard.type('echo "after=$(ps ax | grep -c "[s]leep 1000") file=$(cat ~/before-reset.txt)"');
    await page.keyboard.press('Enter');
    await wb.waitForText(0, 'after=0 file=kept-42');

    await page.screenshot({ path: `${SHOT_DIR}/board-actions-after-reset.png` });
  });
});
