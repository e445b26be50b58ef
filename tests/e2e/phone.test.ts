// The console on a phone (390×844, touch only) against the real service: sign in, apply for a board and
// start it, then the workbench as one pane at a time under tabs, the palette from the top bar's touch
// button, a shell driven by the soft keyboard and the on-screen key row (Ctrl then C interrupts a
// sleep, ↑ recalls history), the file tree in its own tab, and the board's name readable on
// /mainboard. Every press is a tap; a listener counts pointer events of a mouse, and there must be none.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { ApplyPage, MainboardPage } from './pages/DevicePages.ts';
import { FilePanes } from './pages/FilePanes.ts';
import { LoginPage } from './pages/LoginPage.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOTS = path.join(import.meta.dirname, 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

const PHONE = { width: 390, height: 844 };
/** Long enough that a one-line row would have to cut it. */
const BOARD = 'riscv-phone-lab-board-07';

/** Counts pointer events that came from a mouse, across page loads: a touch-only journey has none. */
function countMousePointers(): void {
  const count = () => Number(sessionStorage.getItem('e2e.mousePointers') ?? '0');
  for (const type of ['pointerdown', 'pointerup']) {
    window.addEventListener(
      type,
      (e) => {
        if ((e as PointerEvent).pointerType === 'mouse')
          sessionStorage.setItem('e2e.mousePointers', String(count() + 1));
      },
      true,
    );
  }
}

describe.skipIf(SKIP_E2E)('the console on a phone, by touch', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: PHONE, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript(forceDomRenderer);
    await ctx.addInitScript(countMousePointers);
    page = await ctx.newPage();
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('signs in, starts a board and works in it: one pane with tabs, the palette, the key row, the files, the board list', async () => {
    const touch = { touch: true };
    const console_ = new ConsolePage(page, svc.url);
    const wb = new WorkbenchPage(page);

    // Sign in and apply for a board, all by tap and soft keyboard.
    const login = new LoginPage(page, svc.url, touch);
    await login.open();
    await login.signInWithPassword('admin', ADMIN_PASSWORD);
    await console_.waitForPath('/mainboard');
    await page.getByTestId('apply-new').tap();
    await console_.waitForPath('/riscvhouse');
    const apply = new ApplyPage(page, touch);
    await apply.agree();
    await apply.chooseDuration('7d');
    await apply.name(BOARD);
    await apply.getStarted();
    await console_.waitForPath('/mainboard');
    const main = new MainboardPage(page, touch);
    await main.waitForRow(BOARD);
    await main.start(BOARD);
    await wb.ready();

    // One pane at a time, under tabs: the shells in front, the others a tap away.
    expect(await wb.layout()).toBe('phone');
    for (const pane of ['shells', 'files', 'editor', 'load']) await wb.phoneTab(pane).waitFor();
    expect(await wb.visiblePhonePanes()).toEqual(['shells']);
    await wb.waitForLiveTerminals(1);
    // The terminal uses the phone's width, not a sliver of it.
    const term = await wb.terminals().first().boundingBox();
    expect(term?.width).toBeGreaterThan(PHONE.width - 20);

    // The palette from the top bar: a finger-sized button, a command run by tap.
    const button = page.getByTestId('palette-button-touch');
    const box = await button.boundingBox();
    expect(box?.width).toBeGreaterThanOrEqual(44);
    expect(box?.height).toBeGreaterThanOrEqual(44);
    expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(PHONE.width);
    const tabsBefore = await page.getByTestId('shell-tab').count();
    await console_.openPaletteByTouch('New shell');
    await page.locator('[cmdk-item][data-command="workbench.newShell"]').waitFor();
    await page.screenshot({ path: path.join(SHOTS, 'phone-palette.png') });
    await console_.tapPaletteCommand('workbench.newShell');
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="shell-tab"]').length === n,
      tabsBefore + 1,
    );
    await wb.waitForLiveTerminals(1);

    // The shell by soft keyboard.
    await wb.runByTouch(0, 'echo "phone-$((6*7))"', 'phone-42');

    // Ctrl on the key row, then "c" from the soft keyboard, interrupts a running sleep.
    await wb.runByTouch(0, 'sleep 100; echo "slept-$((1+1))"', 'sleep 100');
    const ctrl = wb.rowKey('ctrl');
    await ctrl.tap();
    expect(await ctrl.getAttribute('aria-pressed')).toBe('true');
    // The key row never takes the focus from the terminal (the soft keyboard stays up).
    expect(
      await page.evaluate(() => document.activeElement?.classList.contains('xterm-helper-textarea')),
    ).toBe(true);
    await page.keyboard.insertText('c');
    await wb.waitForText(0, '^C', 5_000);
    expect(await ctrl.getAttribute('aria-pressed')).toBe('false');
    // The prompt is back: a command runs at once, and the interrupted one never printed its marker.
    await wb.runByTouch(0, 'echo "after-$((2+3))"', 'after-5', 5_000);
    expect(await wb.terminalText(0)).not.toContain('slept-2');

    // ↑ on the key row recalls the last command; Enter runs it again.
    const count = async (s: string) => (await wb.terminalText(0)).split(s).length - 1;
    const before = await count('after-5');
    await wb.rowKey('up').tap();
    await page.waitForFunction(
      () => {
        const rows = document.querySelector(
          '[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-testid="terminal-pane"] .xterm-rows',
        );
        const lines = (rows?.textContent ?? '').replace(/\u00a0/g, ' ');
        return lines.trimEnd().endsWith('echo "after-$((2+3))"');
      },
      undefined,
      { timeout: 5_000 },
    );
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      async (n) => {
        const rows = document.querySelector(
          '[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-testid="terminal-pane"] .xterm-rows',
        );
        return (rows?.textContent ?? '').split('after-5').length - 1 > n;
      },
      before,
      { timeout: 5_000 },
    );
    await page.screenshot({ path: path.join(SHOTS, 'phone-workbench.png') });

    // The file tree in its own tab, the whole width of the phone.
    await wb.showPhonePane('files');
    expect(await wb.visiblePhonePanes()).toEqual(['files']);
    const tree = new FilePanes(page).tree();
    await tree.locator('[role="treeitem"]').first().waitFor();
    expect((await tree.boundingBox())?.width).toBeGreaterThan(PHONE.width - 20);
    await page.screenshot({ path: path.join(SHOTS, 'phone-files.png') });

    // Back on the shells, the terminal is fitted to the pane again and still live.
    await wb.showPhonePane('shells');
    await wb.waitForLiveTerminals(1);
    await wb.runByTouch(0, 'echo "c$((1+1))ls=$(tput cols)"', 'c2ls=');
    const cols = Number(/c2ls=(\d+)/.exec(await wb.terminalText(0))?.[1]);
    expect(cols).toBeGreaterThan(30);

    // The board's actions sit in a finger-sized menu of the header: Renew opens its dialog.
    await page.getByTestId('wb-actions').tap();
    await page.getByTestId('wb-renew').tap();
    const renew = page.getByTestId('renew-dialog');
    await renew.waitFor();
    await renew.getByRole('button', { name: 'Cancel' }).tap();
    await renew.waitFor({ state: 'detached' });

    // The board list: the whole name readable at 390 px, the top bar inside the screen.
    await page.locator('[data-testid="workbench-header"] a[href="/mainboard"]').tap();
    await console_.waitForPath('/mainboard');
    const name = main.row(BOARD).getByTestId('board-name');
    await name.waitFor();
    expect(await name.textContent()).toBe(BOARD);
    await page.screenshot({ path: path.join(SHOTS, 'phone-mainboard.png'), fullPage: true });
    const fits = await name.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { clipped: el.scrollWidth > el.clientWidth + 1, left: r.left, right: r.right };
    });
    expect(fits.clipped).toBe(false);
    expect(fits.left).toBeGreaterThanOrEqual(0);
    expect(fits.right).toBeLessThanOrEqual(PHONE.width);
    // (A page wider than the phone widens a mobile layout viewport: compare with the phone, not the window.)
    const barOverflow = await page
      .locator('header')
      .first()
      .evaluate(
        (h, width) =>
          [...h.querySelectorAll('button, a')]
            .map((e) => e.getBoundingClientRect())
            .filter((r) => r.width > 0)
            .some((r) => r.right > width || r.left < 0),
        PHONE.width,
      );
    expect(barOverflow).toBe(false);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);

    expect(await page.evaluate(() => sessionStorage.getItem('e2e.mousePointers') ?? '0')).toBe('0');
  });
});
