// The keymap in Chromium against the real service: the Ctrl+Shift preset chosen in Settings › Keys,
// the help sheet and the palette showing its chords, those chords opening a shell, splitting, moving
// the focus, resizing and swapping panes; a rebound action refused on a reserved or taken chord, kept
// on a good one across a reload and in a fresh browser that signs in.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, callApi } from './helpers/api.ts';
import { SKIP_E2E } from './helpers/chromium.ts';
import type { Service } from './helpers/service.ts';
import { openWorkbench, type WorkbenchSession } from './helpers/workbench-session.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { LoginPage } from './pages/LoginPage.ts';
import type { WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOTS = path.join(import.meta.dirname, 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

/** Page object of Settings › Keys. */
class KeymapSettings {
  constructor(
    readonly page: Page,
    readonly console_: ConsolePage,
  ) {}

  async open(): Promise<void> {
    await this.console_.goto('/cloudsetting');
    await this.page.locator('[role="tab"][data-tab="keys"]').click();
    await this.page.getByTestId('keymap').waitFor();
  }

  preset(p: string) {
    return this.page.getByTestId(`keymap-preset-${p}`);
  }

  async choosePreset(p: string): Promise<void> {
    await this.preset(p).click();
    await this.page.waitForFunction(
      (id) =>
        document.querySelector(`[data-testid="keymap-preset-${id}"]`)?.getAttribute('aria-pressed') ===
        'true',
      p,
    );
    await this.saved();
  }

  async saved(): Promise<void> {
    await this.page.getByTestId('keymap-status').filter({ hasText: 'Keys saved' }).waitFor();
  }

  keys(action: string): Promise<string[]> {
    return this.page.locator(`tr[data-action="${action}"] [data-testid="keymap-keys"] kbd`).allTextContents();
  }

  /** Clicks Change on the action's row, then presses `chord` (Playwright's key names). */
  async rebind(action: string, chord: string): Promise<void> {
    await this.page.getByTestId(`keymap-rebind-${action}`).click();
    await this.page
      .locator(`tr[data-action="${action}"] [data-testid="keymap-keys"]`)
      .filter({ hasText: 'Press the new keys' })
      .waitFor();
    await this.page.keyboard.press(chord);
  }

  problem(action: string) {
    return this.page.locator(`tr[data-action="${action}"] [data-testid="keymap-problem"]`);
  }
}

describe.skipIf(SKIP_E2E)('keymap', () => {
  let session: WorkbenchSession;
  let svc: Service;
  let browser: Browser;
  let page: Page;
  let token: string;
  let console_: ConsolePage;
  let wb: WorkbenchPage;
  let settings: KeymapSettings;

  beforeAll(async () => {
    session = await openWorkbench('keys', { tokenEveryLoad: false });
    ({ svc, browser, page, token, console: console_, wb } = session);
    settings = new KeymapSettings(page, console_);
  });

  afterAll(() => session?.close());

  const tabCount = () => page.getByTestId('shell-tab').count();
  const paneBox = (id: string) =>
    page.evaluate((pid) => {
      const r = document.querySelector(`[data-pane-id="${pid}"]`)?.getBoundingClientRect();
      return r ? { width: r.width, height: r.height } : null;
    }, id);

  it('switches to the Ctrl+Shift preset, and the help sheet and the palette show its chords', async () => {
    await settings.open();
    expect(await settings.preset('default').getAttribute('aria-pressed')).toBe('true');
    expect(await settings.keys('newShell')).toEqual(['Ctrl', 'Alt', 'N']);
    await settings.choosePreset('shift');
    expect(await settings.keys('newShell')).toEqual(['Ctrl', 'Shift', '`']);
    expect(await settings.keys('focusLeft')).toEqual(['Ctrl', 'Shift', '←']);
    expect((await callApi<{ preset: string }>(svc.url, token, '/api/user/keymap')).preset).toBe('shift');

    await console_.goto('/workbench');
    await wb.ready();
    await wb.waitForLiveTerminals(1);
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('?');
    const sheet = page.getByTestId('key-help');
    await sheet.waitFor();
    const row = (id: string) => sheet.locator(`tr[data-command="workbench.${id}"] kbd`).allTextContents();
    expect(await row('newShell')).toEqual(['Ctrl', 'Shift', '`']);
    expect(await row('split')).toEqual(['Ctrl', 'Shift', '5']);
    expect(await row('focusLeft')).toEqual(['Ctrl', 'Shift', '←']);
    expect(await row('paneWider')).toEqual(['Alt', 'Shift', '→']);
    // No Ctrl+Alt chord is left on any workbench row.
    const all = await sheet
      .locator('tr[data-command^="workbench."]')
      .evaluateAll((rows) =>
        rows.map((r) => [...r.querySelectorAll('kbd')].map((k) => k.textContent).join('+')),
      );
    expect(all.length).toBeGreaterThan(20);
    for (const keys of all) expect(keys).not.toMatch(/Ctrl\+Alt/);
    await page.screenshot({ path: path.join(SHOTS, 'keymap-help-shift-en.png') });
    await page.keyboard.press('Escape');
    await sheet.waitFor({ state: 'detached' });

    await page.keyboard.press('Control+k');
    await page.locator('[cmdk-input]').waitFor({ state: 'visible' });
    await page.keyboard.type('New shell');
    const item = page.locator('[cmdk-item][data-command="workbench.newShell"]');
    await item.waitFor();
    expect(await item.locator('kbd').allTextContents()).toEqual(['Ctrl', 'Shift', '`', '↵']);
    await page.keyboard.press('Escape');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
  });

  it('opens a shell, splits, moves the focus, resizes and swaps panes with the new chords', async () => {
    await wb.focusTerminal(0);
    const before = await tabCount();
    // The old chord does nothing now.
    await page.keyboard.press('Control+Alt+KeyN');
    await page.waitForTimeout(400);
    expect(await tabCount()).toBe(before);
    await page.keyboard.press('Control+Shift+Backquote');
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="shell-tab"]').length === n,
      before + 1,
    );
    // The desktop's keys are the keymap's too: Ctrl+Shift+U shows and hides the code window, and
    // the default preset's Ctrl+Alt+C no longer does.
    await page.keyboard.press('Control+Alt+KeyC');
    await page.waitForTimeout(400);
    expect(await page.getByTestId('code-pane').count()).toBe(0);
    await page.keyboard.press('Control+Shift+KeyU');
    await page.getByTestId('code-pane').waitFor();
    await page.keyboard.press('Control+Shift+KeyU');
    await page.getByTestId('code-pane').waitFor({ state: 'detached' });
    await wb.waitForLiveTerminals(1);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    await page.keyboard.type('echo "shift-$((4*4))"');
    await page.keyboard.press('Enter');
    await wb.waitForText(0, 'shift-16');

    // Ctrl+Shift+5 splits (VS Code's key); Ctrl+Shift+Left goes to the shell on the left.
    await page.keyboard.press('Control+Shift+Digit5');
    await wb.waitForLiveTerminals(2);
    const right = await wb.focusedPane();
    expect(right).toMatch(/^shell:/);
    await page.keyboard.press('Control+Shift+ArrowLeft');
    const left = await wb.focusedPane();
    expect(left).toMatch(/^shell:/);
    expect(left).not.toBe(right);
    await page.keyboard.press('Control+Shift+ArrowLeft');
    expect(await wb.focusedPane()).toBe('files');
    await page.keyboard.press('Control+Shift+ArrowRight');
    expect(await wb.focusedPane()).toMatch(/^shell:/);

    // Resize: the focused shell gets wider by steps, then shorter, and the sizes are kept.
    await wb.focusTerminal(0);
    const pane = (await wb.focusedPane()) as string;
    const start = (await paneBox(pane)) as { width: number; height: number };
    await page.keyboard.press('Alt+Shift+ArrowRight');
    await page.keyboard.press('Alt+Shift+ArrowRight');
    await page.waitForFunction(
      ({ id, w }) =>
        (document.querySelector(`[data-pane-id="${id}"]`)?.getBoundingClientRect().width ?? 0) > w + 20,
      { id: pane, w: start.width },
    );
    await page.keyboard.press('Alt+Shift+ArrowUp');
    await page.waitForFunction(
      ({ id, h }) =>
        (document.querySelector(`[data-pane-id="${id}"]`)?.getBoundingClientRect().height ?? 1e9) < h - 10,
      { id: pane, h: start.height },
    );
    expect(await wb.focusedPane()).toBe(pane);
    const grown = (await paneBox(pane)) as { width: number; height: number };
    await page.keyboard.press('Alt+Shift+ArrowLeft');
    await page.waitForFunction(
      ({ id, w }) =>
        (document.querySelector(`[data-pane-id="${id}"]`)?.getBoundingClientRect().width ?? 1e9) < w - 10,
      { id: pane, w: grown.width },
    );

    // Swap: the left shell moves right of its neighbour and keeps the focus.
    const order = () =>
      wb
        .terminals()
        .evaluateAll((els) => els.map((e) => e.closest('[data-pane-id]')?.getAttribute('data-pane-id')));
    const was = await order();
    expect(was[0]).toBe(pane);
    await page.keyboard.press('Control+Shift+Period');
    await page.waitForFunction((id) => {
      const panes = [
        ...document.querySelectorAll(
          '[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-pane-id^="shell:"]',
        ),
      ];
      return panes[1]?.getAttribute('data-pane-id') === id;
    }, pane);
    expect(await order()).toEqual([was[1], was[0]]);
    await page.waitForFunction(
      (id) => document.activeElement?.closest('[data-pane-id]')?.getAttribute('data-pane-id') === id,
      pane,
    );
    await wb.waitForLiveTerminals(2);
  });

  it('refuses a reserved or taken chord with the reason, keeps a good one across a reload and in a fresh browser', async () => {
    await settings.open();
    // Ctrl+T never reaches a page in a browser with tabs: refused, nothing saved.
    await settings.rebind('search', 'Control+KeyT');
    await settings.problem('search').waitFor();
    expect(await settings.problem('search').textContent()).toMatch(/browser keeps it/);
    expect(await settings.keys('search')).toEqual(['Ctrl', 'Shift', 'F']);
    // A chord another action has: refused, naming that action.
    await settings.rebind('close', 'Control+Shift+KeyF');
    expect(await settings.problem('close').textContent()).toMatch(
      /already the key of “Search the scrollback”/,
    );
    await page.screenshot({ path: path.join(SHOTS, 'keymap-settings-en.png'), fullPage: true });
    // A free chord is taken, marked as changed and saved.
    await settings.rebind('newShell', 'Control+Shift+KeyY');
    await settings.saved();
    expect(await settings.keys('newShell')).toEqual(['Ctrl', 'Shift', 'Y']);
    expect(await page.locator('tr[data-action="newShell"]').textContent()).toContain('changed');
    const stored = await callApi<{ preset: string; overrides: Record<string, string[]> }>(
      svc.url,
      token,
      '/api/user/keymap',
    );
    expect(stored).toMatchObject({ preset: 'shift', overrides: { newShell: ['Ctrl+Shift+KeyY'] } });

    await page.reload();
    await page.getByTestId('keymap').waitFor();
    expect(await settings.keys('newShell')).toEqual(['Ctrl', 'Shift', 'Y']);

    // The new chord works in the workbench.
    await console_.goto('/workbench');
    await wb.ready();
    await wb.waitForLiveTerminals(1);
    await wb.focusTerminal(0);
    const before = await tabCount();
    await page.keyboard.press('Control+Shift+KeyY');
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="shell-tab"]').length === n,
      before + 1,
    );

    // A fresh browser (nothing cached) that signs in gets the same keymap from the service.
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      await fresh.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
      const p2 = await fresh.newPage();
      const login = new LoginPage(p2, svc.url);
      await login.open('/login');
      await login.signInWithPassword('admin', ADMIN_PASSWORD);
      await p2.waitForURL((u) => u.pathname === '/mainboard', { timeout: 20_000 });
      const s2 = new KeymapSettings(p2, new ConsolePage(p2, svc.url));
      await s2.open();
      await p2.waitForFunction(
        () =>
          document.querySelector('[data-testid="keymap-preset-shift"]')?.getAttribute('aria-pressed') ===
          'true',
      );
      expect(await s2.keys('newShell')).toEqual(['Ctrl', 'Shift', 'Y']);
      expect(await s2.keys('split')).toEqual(['Ctrl', 'Shift', '5']);
      // Reset puts the preset's key back, for this user everywhere.
      await p2.getByTestId('keymap-reset-newShell').click();
      await s2.saved();
      expect(await s2.keys('newShell')).toEqual(['Ctrl', 'Shift', '`']);
      expect((await callApi<{ overrides: object }>(svc.url, token, '/api/user/keymap')).overrides).toEqual(
        {},
      );
    } finally {
      await fresh.close();
    }
  });
});
