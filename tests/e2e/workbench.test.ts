// The workbench in Chromium against the real service: two shells side by side that survive a page
// reload with their output, the workbench driven by keyboard alone (palette, splits, focus movement
// between panes, pane toggles), and the layout kept per user across reloads.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKIP_E2E } from './helpers/chromium.ts';
import type { Service } from './helpers/service.ts';
import { openWorkbench, type WorkbenchSession } from './helpers/workbench-session.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import type { WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOTS = path.join(import.meta.dirname, 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

describe.skipIf(SKIP_E2E)('workbench', () => {
  let session: WorkbenchSession;
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let console_: ConsolePage;
  let wb: WorkbenchPage;

  beforeAll(async () => {
    session = await openWorkbench('bench', { waitForShell: false });
    ({ svc, browser, ctx, page, console: console_, wb } = session);
  });

  afterAll(() => session?.close());

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
    expect(
      await wb.terminals().evaluateAll((els) => els.map((e) => e.getAttribute('data-shell-id'))),
    ).toEqual(ids);
    await wb.waitForText(0, 'left-42');
    await wb.waitForText(1, 'right-56');
    // And they are still live shells, not a picture of them.
    await wb.run(1, 'echo "again-$((1+1))"', 'again-2');
  });

  it('is driven by keyboard alone: palette, new tab, split, focus movement between panes, pane toggles', async () => {
    const tabsBefore = await page.getByTestId('shell-tab').count();

    // A new shell tab from the palette.
    await console_.runFromPalette('New shell', 'workbench.newShell');
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="shell-tab"]').length === n,
      tabsBefore + 1,
    );
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
    // Right twice reaches the rightmost shell and stays there: the load graphs take no input, so a
    // move passes over them (issue 38: keys typed there were lost).
    await page.keyboard.press('Control+Alt+ArrowRight');
    await page.keyboard.press('Control+Alt+ArrowRight');
    expect(await wb.focusedPane()).toBe(rightShell);

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

  it('ranks the palette so Enter runs the command typed, and gives focus back where it was', async () => {
    await wb.waitForLiveTerminals(1);
    await wb.focusTerminal(0);
    const shellPane = await wb.focusedPane();
    expect(shellPane).toMatch(/^shell:/);

    // The searches that used to run a navigation command (issue 13): the first, selected row is the
    // command typed, and it shows the Enter hint.
    const selected = () => page.locator('[cmdk-item][data-selected="true"]').getAttribute('data-command');
    await page.keyboard.press('Control+k');
    const input = page.locator('[cmdk-input]');
    await input.waitFor({ state: 'visible' });
    for (const [query, expected] of [
      ['rename', /^device\.rename\./],
      ['renew', /^(device|workbench)\.renew/],
      ['sign out', /^account\.logout$/],
      ['log out', /^account\.logout$/],
      ['split', /^workbench\.split$/],
      ['upload', /^files\.upload$/],
      ['reset', /^workbench\.reset$/],
      ['go to folder', /^files\.goto$/],
      ['bench', /^device\.start\./],
    ] as const) {
      await input.fill(query);
      await page.waitForFunction(
        (q) => (document.querySelector('[cmdk-input]') as HTMLInputElement | null)?.value === q,
        query,
      );
      await page.waitForFunction(() => !!document.querySelector('[cmdk-item][data-selected="true"]'));
      expect(await selected(), query).toMatch(expected);
      expect(await page.locator('[cmdk-item]').first().getAttribute('data-selected'), query).toBe('true');
      expect(await page.locator('[cmdk-item][data-selected="true"] [data-enter-hint]').isVisible()).toBe(
        true,
      );
    }

    // Esc gives the focus back to the terminal it came from.
    await page.keyboard.press('Escape');
    await input.waitFor({ state: 'detached' });
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    expect(await wb.focusedPane()).toBe(shellPane);

    // So does a command that does not move the focus itself.
    await console_.runFromPalette('Toggle the terminal theme', 'workbench.termTheme');
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    expect(await wb.focusedPane()).toBe(shellPane);
    await console_.runFromPalette('Toggle the terminal theme', 'workbench.termTheme');

    // The command run last comes first on an empty query.
    await page.keyboard.press('Control+k');
    await input.waitFor({ state: 'visible' });
    expect(await selected()).toBe('workbench.termTheme');
    await page.keyboard.press('Escape');
    await input.waitFor({ state: 'detached' });

    // Ctrl+Alt+Left lands on the file tree itself, never on a button of its title bar.
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    for (let i = 0; i < 3 && (await wb.focusedPane()) !== 'files'; i++)
      await page.keyboard.press('Control+Alt+ArrowLeft');
    expect(await wb.focusedPane()).toBe('files');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('role'))).toBe('tree');
    // Up to the editor: its pane or editor, not its Hide button.
    await page.keyboard.press('Control+Alt+ArrowRight');
    await page.keyboard.press('Control+Alt+ArrowUp');
    expect(await page.evaluate(() => document.activeElement?.tagName)).not.toBe('BUTTON');

    // Ctrl+` goes back to the last terminal from anywhere.
    await page.keyboard.press('Control+Backquote');
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    expect(await wb.focusedPane()).toBe(shellPane);

    // Ctrl+Alt+Z maximises the focused pane and keeps the keyboard in its terminal; again restores it.
    await page.keyboard.press('Control+Alt+z');
    await page.waitForFunction(
      (id) => !!document.querySelector(`[data-pane-id="${id}"][data-maximized]`),
      shellPane,
    );
    expect(await wb.focusedPane()).toBe(shellPane);
    expect(
      await page.evaluate(() => document.activeElement?.classList.contains('xterm-helper-textarea')),
    ).toBe(true);
    await page.keyboard.press('Control+Alt+z');
    await page.waitForFunction(() => !document.querySelector('[data-maximized]'));
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));

    // An ended shell says which key replaces it; Enter opens a new live shell in its place, focused.
    const before = await page.evaluate(
      () => document.activeElement?.closest('[data-shell-id]')?.getAttribute('data-shell-id') ?? null,
    );
    await page.keyboard.type('exit');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (id) => document.querySelector(`[data-shell-id="${id}"]`)?.getAttribute('data-status') === 'closed',
      before,
    );
    await page.getByTestId('terminal-restart-hint').waitFor();
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (id) => {
        const el = document.activeElement?.closest('[data-shell-id]');
        return !!el && el.getAttribute('data-shell-id') !== id && el.getAttribute('data-status') === 'live';
      },
      before,
      { timeout: 20_000 },
    );
    expect(await wb.focusedPane()).toBe(shellPane);
  });

  it('shows every key in a help sheet on ?, except where ? is typed text, and gives the focus back', async () => {
    // In a terminal, ? is text for the shell.
    await wb.run(0, 'echo "why$((1+1))?"', 'why2?');
    expect(await page.getByTestId('key-help').count()).toBe(0);
    const terminal = await page.evaluate(() =>
      document.activeElement?.closest('[data-shell-id]')?.getAttribute('data-shell-id'),
    );
    // Outside text: the sheet, with the palette's key and the workbench's keys as the palette shows them.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('?');
    const sheet = page.getByTestId('key-help');
    await sheet.waitFor();
    expect(await sheet.locator('tr[data-command="palette"]').textContent()).toContain('K');
    const reset = sheet.locator('tr[data-command="workbench.reset"]');
    expect(await reset.locator('kbd').allTextContents()).toEqual(['Ctrl', 'Alt', 'R']);
    expect(await sheet.locator('tr[data-command="workbench.lastTerminal"] kbd').allTextContents()).toEqual([
      'Ctrl',
      '`',
    ]);
    await page.screenshot({ path: path.join(SHOTS, 'key-help-en.png') });
    await page.keyboard.press('Escape');
    await sheet.waitFor({ state: 'detached' });
    // From the palette, opened in a terminal: closing the sheet puts the focus back in that terminal.
    await wb.focusTerminal(0);
    await console_.runFromPalette('keyboard shortcuts', 'help.keys');
    await sheet.waitFor();
    await page.keyboard.press('Escape');
    await sheet.waitFor({ state: 'detached' });
    await page.waitForFunction(
      (id) => document.activeElement?.closest('[data-shell-id]')?.getAttribute('data-shell-id') === id,
      terminal,
    );
  });

  it('shows the board, its time left and the load graphs fed by the board', async () => {
    expect(await wb.boardName().textContent()).toBe('bench');
    expect(await page.getByTestId('workbench-time-left').textContent()).toMatch(/^1d 23h|^2d 0h/);
    await page.getByTestId('chart-cpu-mem').waitFor();
    // The board reports its load every few seconds: a CPU figure appears within a refresh or two.
    await page.waitForFunction(
      () => /CPU \d/.test(document.querySelector('[data-testid="chart-cpu-mem-now"]')?.textContent ?? ''),
      null,
      {
        timeout: 20_000,
      },
    );
  });

  it('sends a signed-in visit of /login to /mainboard, and puts the focus on the password after a wrong one', async () => {
    await console_.goto('/login');
    await console_.waitForPath('/mainboard');

    const anon = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    try {
      await anon.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
      const p = await anon.newPage();
      await new ConsolePage(p, svc.url).goto('/login');
      await p.locator('#login-username').fill('admin');
      await p.locator('#login-password').fill('not-the-password');
      await p.locator('#login-password').press('Enter');
      await p
        .locator(
          '[data-testid="password-form"] [role="alert"], [data-testid="password-form"] .text-red-600, [data-testid="password-form"] [data-tone="danger"]',
        )
        .first()
        .waitFor({ timeout: 15_000 })
        .catch(() => {});
      await p.waitForFunction(() => document.activeElement?.id === 'login-password', null, {
        timeout: 15_000,
      });
      expect(await p.evaluate(() => (document.activeElement as HTMLInputElement).selectionEnd)).toBe(
        'not-the-password'.length,
      );
    } finally {
      await anon.close();
    }
  });
  it('renews from the palette, which asks which board (the one in front first) and until when', async () => {
    await console_.goto('/workbench');
    await wb.ready();
    const before = await page.getByTestId('workbench-time-left').textContent();
    await console_.runFromPaletteAsking('renew a board', 'device.renewAsk');
    expect(await page.locator('[cmdk-input]').getAttribute('placeholder')).toBe('Which board?');
    const board = page.locator('[cmdk-item][data-selected="true"]');
    expect(await board.textContent()).toContain('bench');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('[cmdk-input]').getAttribute('placeholder')).toBe('Renew until…');
    // The first choice extends the current end by 48 hours.
    expect(await page.locator('[cmdk-item][data-selected="true"]').textContent()).toContain(
      'Extend by 48 hours',
    );
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await expect
      .poll(() => page.getByTestId('workbench-time-left').textContent(), { timeout: 10_000 })
      .toMatch(/^3d 2[23]h|^4d 0h/);
    expect(before).toMatch(/^1d 2[23]h|^2d 0h/);
  });
  it('sizes the terminal text by keyboard, for every terminal, kept across a reload', async () => {
    await wb.focusTerminal(0);
    const fontOf = () =>
      page.evaluate(
        () => getComputedStyle(document.querySelector('[data-shell-id] .xterm-rows') as Element).fontSize,
      );
    expect(await fontOf()).toBe('13px');
    await page.keyboard.press('Control+Alt+Equal');
    await page.keyboard.press('Control+Alt+Equal');
    await expect.poll(fontOf).toBe('15px');
    expect((await ctx.cookies()).find((c) => c.name === 'termFont')?.value).toBe('15');
    // The shell still takes input at the new size.
    await wb.run(0, 'echo "font-$((3*5))"', 'font-15');
    await page.reload();
    await wb.ready();
    await wb.waitForLiveTerminals(1);
    await expect.poll(fontOf).toBe('15px');
    await wb.focusTerminal(0);
    await page.keyboard.press('Control+Alt+Minus');
    await expect.poll(fontOf).toBe('14px');
    await page.keyboard.press('Control+Alt+Digit0');
    await expect.poll(fontOf).toBe('13px');
  });
  it('blinks the focused cursor without drawing every frame, and shows it while typing', async () => {
    // An endless CSS animation (xterm's own blink in its DOM renderer) makes Chromium draw every frame
    // and hold a key's echo back until the next one (src/web/terminal/cursor-blink.ts).
    await wb.focusTerminal(0);
    const pane = wb.terminals().nth(0);
    const renderer = await pane.getAttribute('data-renderer');
    expect(renderer).toBe('dom'); // headless Chromium: software WebGL, the DOM renderer (renderer.ts)
    await page.keyboard.type('echo blink');
    expect(
      await page.evaluate(() => document.getAnimations().filter((a) => a.playState === 'running').length),
    ).toBe(0);
    const off = () => pane.locator('.xterm').evaluate((el) => el.classList.contains('bianbu-cursor-off'));
    // Shown while typing; the hidden phase comes a period after the last key, then the shown one.
    expect(await off()).toBe(false);
    await expect.poll(off, { timeout: 3000, interval: 50 }).toBe(true);
    await expect.poll(off, { timeout: 3000, interval: 50 }).toBe(false);
    await expect.poll(off, { timeout: 3000, interval: 50 }).toBe(true);
    const hidden = await pane.locator('.xterm-cursor').evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(hidden).toBe('rgba(0, 0, 0, 0)');
    // A key changes nothing on the page itself; its echo moves the cursor, which shows it.
    await page.keyboard.press('Backspace');
    await expect.poll(off, { timeout: 1000, interval: 10 }).toBe(false);
    const shown = await pane.locator('.xterm-cursor').evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(shown).not.toBe('rgba(0, 0, 0, 0)');
    // The focus elsewhere: no blink, the cursor shown (as an outline).
    await page.getByTestId('shell-tab').first().focus();
    await page.waitForTimeout(1500);
    expect(await off()).toBe(false);
    await wb.focusTerminal(0);
    await page.keyboard.press('Control+U');
  });
  it('scrolls output without redrawing every row for an empty selection, and still selects and clears', async () => {
    // xterm 6 redraws the selection layer and every row at each scroll, selected or not
    // (src/web/terminal/selection-redraw.ts): counted here as the layer's emptyings.
    await wb.waitForLiveTerminals(1);
    await page.evaluate(() => {
      const w = window as unknown as { __selectionRedraws: number };
      w.__selectionRedraws = 0;
      const replace = Element.prototype.replaceChildren;
      Element.prototype.replaceChildren = function (this: Element, ...nodes: (Node | string)[]) {
        if (this.classList.contains('xterm-selection')) w.__selectionRedraws++;
        return replace.apply(this, nodes);
      };
    });
    const redraws = () =>
      page.evaluate(() => (window as unknown as { __selectionRedraws: number }).__selectionRedraws);
    await wb.run(
      0,
      'for i in $(seq 1 40); do seq 1 200; sleep 0.02; done; echo "scrol""led-$((2*21))"',
      'scrolled-42',
    );
    expect(await redraws()).toBeLessThanOrEqual(1);
    // A selection still shows, and goes again.
    const pane = wb.terminals().nth(0);
    const row = await pane
      .locator('.xterm-rows > div', { hasText: /^scrolled-42/ })
      .last()
      .boundingBox();
    expect(row).not.toBeNull();
    await page.mouse.dblclick((row?.x ?? 0) + 12, (row?.y ?? 0) + (row?.height ?? 0) / 2);
    await expect
      .poll(() => pane.locator('.xterm-selection').evaluate((el) => el.childElementCount))
      .toBeGreaterThan(0);
    await wb.focusTerminal(0);
    await page.keyboard.type('echo cleared');
    await page.keyboard.press('Enter');
    await expect.poll(() => pane.locator('.xterm-selection').evaluate((el) => el.childElementCount)).toBe(0);
  });

  it('renames the shell tab from the palette, kept across a reload, and gives back its automatic name', async () => {
    const activeTab = page.locator('[data-testid="shell-tab"][aria-selected="true"]');
    const auto = await activeTab.textContent();
    await wb.focusTerminal(0);
    await console_.runFromPaletteAsking('rename this shell tab', 'workbench.renameTab');
    await page.keyboard.type('build logs');
    await page.locator('[cmdk-item][data-selected="true"]').waitFor();
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await expect.poll(() => activeTab.textContent()).toBe('build logs');
    await page.reload();
    await wb.ready();
    await expect.poll(() => activeTab.textContent()).toBe('build logs');
    await console_.runFromPaletteAsking('rename this shell tab', 'workbench.renameTab');
    await page.locator('[cmdk-item][data-selected="true"][data-option=""]').waitFor();
    await page.keyboard.press('Enter');
    await expect.poll(() => activeTab.textContent()).toBe(auto);
  });
});
