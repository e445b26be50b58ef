// The whole day of a board by keyboard alone, as issues 13 and 38 ask, in Chromium against the real service:
// sign in on the provider's page → apply for a board → start it → two shells side by side, a command in
// each → open a file by Ctrl+P, edit and save it → a file by the tree's type-ahead → pane moves →
// download a file → share the board in place → reload → power reset → restart the shell the reset
// ended → renew 7d → unlock, asserting where the focus is after each step. Every
// step goes through the palette or a documented key; focus moves only by Tab, the palette and the
// workbench keys. The page counts every pointer event (mouse, touch, pen) from the first load: none.
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

/** Counts pointer-born events in every page of the context (window.__pointer). */
function countPointerEvents(): void {
  const w = window as unknown as { __pointer: number; __pointerKinds: string[] };
  w.__pointer = 0;
  w.__pointerKinds = [];
  for (const kind of ['pointerdown', 'mousedown', 'touchstart', 'wheel', 'contextmenu']) {
    window.addEventListener(
      kind,
      () => {
        w.__pointer++;
        w.__pointerKinds.push(kind);
      },
      { capture: true },
    );
  }
}

const pointerEvents = (page: Page) =>
  page.evaluate(() => (window as unknown as { __pointerKinds: string[] }).__pointerKinds);

/** Tab (at most `limit` times) until `target` has the focus, as a keyboard user walks a form. */
async function tabTo(page: Page, target: Locator, limit = 40): Promise<number> {
  for (let i = 0; i < limit; i++) {
    if (await target.evaluate((el) => el === document.activeElement).catch(() => false)) return i;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab did not reach ${target}`);
}

async function leasesOf(
  svc: Service,
  token: string,
): Promise<{ serverName: string; endsAt: string; deviceId: string }[]> {
  const res = await fetch(`${svc.url}/api/device/fetch-request-device`, {
    headers: { Authorization: token },
  });
  const body = (await res.json()) as {
    code: number;
    data: { items: { serverName: string; endsAt: string; deviceId: string }[] };
  };
  expect(body.code).toBe(20000);
  return body.data.items;
}

async function api(
  svc: Service,
  token: string,
  path: string,
  body?: unknown,
): Promise<{ code: number; data: any }> {
  const res = await fetch(`${svc.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { Authorization: token, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as { code: number; data: any };
}

describe.skipIf(SKIP_E2E)('a board from sign-in to unlock, keyboard only', () => {
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
    await ctx.addInitScript(countPointerEvents);
    page = await ctx.newPage();
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('signs in, applies, starts, splits, edits a file, resets, restarts the shell, renews and unlocks with no pointer event', {
    timeout: 240_000,
  }, async () => {
    const console_ = new ConsolePage(page, svc.url);
    const wb = new WorkbenchPage(page);
    const focused = () =>
      page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        return el?.closest('[data-pane-id]')?.getAttribute('data-pane-id') ?? el?.tagName ?? null;
      });
    const terminalFocused = () =>
      page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));

    // Sign in on the provider's page: Tab to the fields, type, Enter.
    await console_.goto('/mainboard');
    await page.waitForURL((u) => u.pathname.startsWith('/idp/'), { timeout: 30_000 });
    await page.getByTestId('idp-signin').waitFor();
    await tabTo(page, page.locator('#username'));
    await page.keyboard.type('admin');
    await tabTo(page, page.locator('#password'));
    await page.keyboard.type(ADMIN_PASSWORD);
    await page.keyboard.press('Enter');
    await console_.waitForPath('/mainboard', 30_000);
    await page.getByText('You hold no boards yet').waitFor();
    const token = (await page.evaluate(() => localStorage.getItem('token'))) ?? '';
    expect(token).toMatch(/^bbt_/);

    // Apply: the palette's "Apply for a new board", then the form by Tab, Space and typing.
    await console_.runFromPalette('apply for a new board', 'device.applyNew');
    await console_.waitForPath('/riscvhouse');
    // The page opens on its first field (it took 13 to 15 Tabs, issue 38).
    await expect
      .poll(() => page.getByTestId('agree').evaluate((el) => el === document.activeElement))
      .toBe(true);
    expect(await tabTo(page, page.getByTestId('agree'))).toBe(0);
    await page.keyboard.press('Space');
    expect(await page.getByTestId('agree').isChecked()).toBe(true);
    await tabTo(page, page.getByTestId('board-name-input'));
    await page.keyboard.type('kbd-lab');
    await tabTo(page, page.getByTestId('get-started'));
    await page.keyboard.press('Enter');
    await console_.waitForPath('/mainboard');
    await page.locator('[data-testid="lease-row"][data-name="kbd-lab"][aria-selected="true"]').waitFor();
    const [lease] = await leasesOf(svc, token);
    expect(lease.serverName).toBe('kbd-lab');

    // Start: Enter on the selected board opens the workbench; the login shell takes the keys.
    await page.keyboard.press('Enter');
    await console_.waitForPath('/workbench');
    await wb.ready();
    await wb.waitForLiveTerminals(1);
    await terminalFocused();
    await page.keyboard.type('echo "left-$((6*7))"');
    await page.keyboard.press('Enter');
    await wb.waitForText(0, 'left-42');

    // Two shells side by side: Ctrl+Alt+\ splits, the new shell has the focus.
    await page.keyboard.press('Control+Alt+Backslash');
    await wb.waitForLiveTerminals(2);
    await terminalFocused();
    await page.keyboard.type('echo "hello from the keyboard" > /root/kbd.txt; echo "right-$((7*8))"');
    await page.keyboard.press('Enter');
    await wb.waitForText(1, 'right-56');

    // Open a file by Ctrl+P (as VS Code) and edit it without touching the tree: the palette asks for
    // the file, part of its name finds it on the board, Enter opens it and the editor has the focus.
    await page.keyboard.press('Control+p');
    await page.getByTestId('palette-asking').waitFor();
    await page.keyboard.type('kbd.t');
    await page
      .locator('[cmdk-item][data-selected="true"][data-option="/root/kbd.txt"]')
      .waitFor({ timeout: 20_000 });
    await page.screenshot({ path: 'tests/e2e/screenshots/keyboard-journey-open-file.png' });
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    const editor = page.locator('.cm-content');
    await expect.poll(() => editor.textContent(), { timeout: 15_000 }).toContain('hello from the keyboard');
    await expect.poll(focused).toBe('editor');
    await page.keyboard.press('Control+End');
    await page.keyboard.type(', saved by Ctrl+S');
    await page.keyboard.press('Control+s');
    await expect
      .poll(() =>
        page.locator('[data-testid="editor-tab"][data-path="/root/kbd.txt"]').getAttribute('data-dirty'),
      )
      .toBe('false');
    // Ctrl+` goes back to the last terminal, which reads the saved file.
    await page.keyboard.press('Control+Backquote');
    await terminalFocused();
    await expect.poll(focused).toMatch(/^shell:/);
    await expect
      .poll(
        async () => {
          await page.keyboard.type('clear; cat /root/kbd.txt; echo; echo "cat-$((9*9))"');
          await page.keyboard.press('Enter');
          await wb.waitForText(1, 'cat-81').catch(() => wb.waitForText(0, 'cat-81'));
          return (await wb.terminalText(1)) + (await wb.terminalText(0));
        },
        { timeout: 20_000 },
      )
      .toMatch(/hello from the keyboard\s*, saved by Ctrl\+S/);

    // The tree: "Go to folder…" /root (the tree takes the focus), a word typed quickly selects
    // notes.txt (not the first name starting with n, then o…), Enter opens it with the editor focused.
    await page.keyboard.type('echo "notes here" > /root/notes.txt; touch /root/n1 /root/no2');
    await page.keyboard.press('Enter');
    await console_.runFromPaletteAsking('go to folder', 'files.goto');
    await page.keyboard.type('/root');
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await expect.poll(focused).toBe('files');
    await page.locator('[role="treeitem"][data-path="/root/notes.txt"]').waitFor({ timeout: 15_000 });
    const selectedPath = () =>
      page.evaluate(
        () =>
          document.querySelector('[role="treeitem"][aria-selected="true"]')?.getAttribute('data-path') ??
          null,
      );
    await page.keyboard.type('notes');
    expect(await selectedPath()).toBe('/root/notes.txt');
    await page.keyboard.press('Enter');
    await expect.poll(() => editor.textContent(), { timeout: 15_000 }).toContain('notes here');
    await expect.poll(focused).toBe('editor');

    // Pane moves follow the work: from the tree, → goes back to the editor it came from (not the
    // shells below it); → from the rightmost shell passes over the load graphs.
    await page.keyboard.press('Control+Alt+ArrowLeft');
    await expect.poll(focused).toBe('files');
    await page.keyboard.press('Control+Alt+ArrowRight');
    await expect.poll(focused).toBe('editor');
    await page.keyboard.press('Control+Backquote');
    await terminalFocused();
    await page.keyboard.press('Control+Alt+ArrowRight');
    await page.keyboard.press('Control+Alt+ArrowRight');
    await expect.poll(focused).toMatch(/^shell:/);

    // Download a file from the palette, typed with its verb: the browser receives it, and the focus
    // goes back to the shell it was in.
    const downloaded = page.waitForEvent('download', { timeout: 20_000 });
    await console_.runFromPaletteAsking('download /root/kbd.txt', 'files.downloadAsk');
    await page
      .locator('[cmdk-item][data-selected="true"][data-option="/root/kbd.txt"]')
      .waitFor({ timeout: 20_000 });
    await page.keyboard.press('Enter');
    expect((await downloaded).suggestedFilename()).toBe('kbd.txt');
    await expect.poll(focused).toMatch(/^shell:/);

    // Share the board with a group in place (`share robotics`): the workbench stays, the group holds it.
    expect((await api(svc, token, '/api/device/share/add-share-group', { groupName: 'robotics' })).code).toBe(
      20000,
    );
    await console_.runFromPaletteAsking('share robotics', 'share.board');
    await page
      .locator('[cmdk-item][data-selected="true"][data-option="robotics"]')
      .waitFor({ timeout: 10_000 });
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await expect
      .poll(
        async () =>
          (await api(svc, token, '/api/device/share/fetch-share-info')).data.groups
            .find((g: { groupName: string }) => g.groupName === 'robotics')
            ?.devices.map((d: { deviceId: string }) => d.deviceId) ?? [],
        { timeout: 10_000 },
      )
      .toContain(lease.deviceId);
    expect(new URL(page.url()).pathname).toBe('/workbench');
    await expect.poll(focused).toMatch(/^shell:/);

    // A reload keeps the open files and the tree's folder.
    await page.reload();
    await wb.ready();
    await page.locator('[data-testid="editor-tab"][data-path="/root/kbd.txt"]').waitFor({ timeout: 20_000 });
    await page.locator('[data-testid="editor-tab"][data-path="/root/notes.txt"]').waitFor();
    await page.locator('[role="treeitem"][data-path="/root/notes.txt"]').waitFor({ timeout: 20_000 });
    await wb.waitForLiveTerminals(2, 60_000);
    await page.keyboard.press('Control+Backquote');
    await terminalFocused();

    // Power reset: Ctrl+Alt+R, the confirmation opens on Cancel; Tab, Enter. The shells end.
    await page.keyboard.press('Control+Alt+r');
    const reset = page.getByTestId('reset-dialog');
    await reset.waitFor();
    await page.waitForFunction(() => document.activeElement?.textContent?.trim() === 'Cancel');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await reset.waitFor({ state: 'detached' });
    await page.getByTestId('terminal-banner').first().waitFor({ timeout: 30_000 });

    // At once, while the board still resets, the shell the reset ended restarts with the key its
    // banner names (Ctrl+Alt+Enter): it opens by itself once the board is back, and works.
    await page.keyboard.press('Control+Backquote');
    await page.keyboard.press('Control+Alt+Enter');
    await wb.waitForLiveTerminals(1, 60_000);
    await page.screenshot({ path: 'tests/e2e/screenshots/keyboard-journey-after-reset.png' });
    await terminalFocused();
    await page.keyboard.type('echo "after-reset-$((5*9))"');
    await page.keyboard.press('Enter');
    await expect
      .poll(async () => (await wb.terminalText(0)) + (await wb.terminalText(1)), { timeout: 20_000 })
      .toContain('after-reset-45');

    // Renew in one go, `renew 7d`: this board, its end 7 days later; the focus back in the shell.
    const endsBefore = Date.parse((await leasesOf(svc, token))[0].endsAt);
    await page.keyboard.press('Control+k');
    await page.keyboard.type('renew 7d');
    await page
      .locator('[cmdk-item][data-selected="true"][data-command="device.renewAsk"][data-quick="7d"]')
      .waitFor();
    await page.screenshot({ path: 'tests/e2e/screenshots/keyboard-journey-renew-7d.png' });
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await expect
      .poll(async () => (Date.parse((await leasesOf(svc, token))[0].endsAt) - endsBefore) / 3_600_000, {
        timeout: 10_000,
      })
      .toBeGreaterThan(7 * 24 - 0.1);
    await expect.poll(focused).toMatch(/^shell:/);

    // Inside "Renew a board…", typing picks a choice by its label: "7 days" chooses 7 days.
    await console_.runFromPaletteAsking('renew a board', 'device.renewAsk');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('[cmdk-input]').getAttribute('placeholder')).toBe('Renew until…');
    await page.keyboard.type('48 hours');
    await expect
      .poll(() => page.locator('[cmdk-item][data-selected="true"]').textContent())
      .toContain('48 hours');
    await page.keyboard.press('Escape');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });

    // Unlock from the palette: the confirmation opens on Cancel; Tab, Enter; the board is released.
    await console_.runFromPalette(
      'unlock kbd-lab',
      `device.unlock.${(await leasesOf(svc, token))[0].deviceId}`,
    );
    const unlock = page.getByTestId('unlock-dialog');
    await unlock.waitFor();
    await page.waitForFunction(() => document.activeElement?.textContent?.trim() === 'Cancel');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await unlock.waitFor({ state: 'detached' });
    await expect.poll(async () => (await leasesOf(svc, token)).length, { timeout: 15_000 }).toBe(0);
    // After the unlock the focus is on the page's first action, never on Sign out (Enter there
    // signed the user out).
    await expect
      .poll(() =>
        page.evaluate(() => {
          const el = document.activeElement as HTMLElement | null;
          return (
            !!el && el !== document.body && !!el.closest('main') && el.dataset.testid !== 'logout-button'
          );
        }),
      )
      .toBe(true);
    // Sign out from the palette asks first; Enter keeps the user signed in.
    await console_.runFromPaletteAsking('sign out', 'account.logout');
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    expect(await page.evaluate(() => localStorage.getItem('token'))).toMatch(/^bbt_/);

    expect(await pointerEvents(page)).toEqual([]);
  });
});
