// Broadcast input in Chromium against the real service and real board shells (issue 15): two shells
// side by side join the broadcast — one by its key, one from the palette — and are marked in amber
// with a "Broadcasting to 2" band; a command typed once runs in both, and not in a third shell outside
// the set. Stopping from the palette turns it off for both: what is typed then reaches one shell only.
// Closing a member takes it out of the set. Light theme, so the screenshot shows the marking there.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin, requestBoard } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { signedInContext } from './helpers/context.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { MainboardPage } from './pages/DevicePages.ts';
import { WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOTS = path.join(import.meta.dirname, 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

describe.skipIf(SKIP_E2E)('broadcast input', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let console_: ConsolePage;
  let wb: WorkbenchPage;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    const token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    // Two boards: the workbench's own, and a second one whose shell joins it for the last test.
    for (const serverName of ['bcast', 'second-board']) await requestBoard(svc.url, token, serverName);
    ctx = await signedInContext(browser, token, {
      cookies: { lang: 'en', theme: 'light', termTheme: 'light' },
      tokenEveryLoad: false,
    });
    page = await ctx.newPage();
    console_ = new ConsolePage(page, svc.url);
    wb = new WorkbenchPage(page);
    await console_.goto('/mainboard');
    await new MainboardPage(page).start('bcast');
    await wb.ready();
    await wb.waitForLiveTerminals(1);
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  const pane = (id: string) => page.locator(`[data-testid="terminal-pane"][data-shell-id="${id}"]`);
  /** Whether a shell's pane is marked as broadcasting (its amber frame and band). */
  const marked = (id: string) =>
    page.evaluate((sid) => {
      const p = document.querySelector(`[data-testid="terminal-pane"][data-shell-id="${sid}"]`);
      return {
        frame: p?.parentElement?.getAttribute('data-broadcast') ?? null,
        band: p?.querySelector('[data-testid="broadcast-count"]')?.textContent ?? null,
      };
    }, id);
  const waitMarked = (id: string, band: string | null) =>
    page.waitForFunction(
      ({ sid, want }) => {
        const p = document.querySelector(`[data-testid="terminal-pane"][data-shell-id="${sid}"]`);
        const got = p?.querySelector('[data-testid="broadcast-count"]')?.textContent ?? null;
        const frame = p?.parentElement?.getAttribute('data-broadcast');
        return got === want && frame === (want === null ? 'off' : 'on');
      },
      { sid: id, want: band },
      { timeout: 10_000 },
    );
  const textOf = async (id: string) =>
    ((await pane(id).locator('.xterm-rows').textContent()) ?? '').replace(/\u00a0/g, ' ');
  const waitText = (id: string, marker: string, timeout = 20_000) =>
    page.waitForFunction(
      ({ sid, m }) =>
        document
          .querySelector(`[data-testid="terminal-pane"][data-shell-id="${sid}"] .xterm-rows`)
          ?.textContent?.replace(/\u00a0/g, ' ')
          .includes(m) ?? false,
      { sid: id, m: marker },
      { timeout },
    );
  /** Clicks into a shell's terminal and waits until its xterm has the keys. */
  const focusShell = async (id: string) => {
    await pane(id).locator('.xterm-screen').click();
    await page.waitForFunction(
      (sid) =>
        !!document.activeElement?.classList.contains('xterm-helper-textarea') &&
        !!document.querySelector(`[data-shell-id="${sid}"]`)?.contains(document.activeElement),
      id,
    );
  };
  /** Keyboard only: Ctrl+K, wait for the palette's input to have the focus, type, Enter on `id`. */
  const palette = async (search: string, id: string) => {
    await console_.waitForApp();
    await page.keyboard.press('Control+k');
    await page.waitForFunction(() => document.activeElement?.hasAttribute('cmdk-input') ?? false);
    await page.keyboard.type(search);
    await page.locator(`[cmdk-item][data-selected="true"][data-command="${id}"]`).waitFor({ timeout: 5_000 });
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
  };
  const tabMarks = () =>
    page
      .locator('[role="tablist"] > [data-broadcast]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-broadcast')));

  let a = '';
  let b = '';
  let c = '';

  it('types once into two marked shells, and not into a shell outside the set', async () => {
    // Shells A | B side by side in the first tab, C alone in a second tab.
    await page.keyboard.press('Control+Alt+Backslash');
    await wb.waitForLiveTerminals(2);
    [a, b] = (await wb
      .terminals()
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-shell-id')))) as string[];
    await page.keyboard.press('Control+Alt+KeyN');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 2);
    await wb.waitForLiveTerminals(1);
    c = (await wb.terminals().first().getAttribute('data-shell-id')) as string;
    expect(new Set([a, b, c]).size).toBe(3);
    await page.keyboard.press('Control+Alt+PageUp');
    await page.waitForFunction(
      (sid) =>
        !document.querySelector(`[data-shell-id="${sid}"]`)?.closest('[data-tab-id]')?.matches('.invisible'),
      a,
    );
    await wb.waitForLiveTerminals(2);

    // Nothing is marked before broadcast is turned on.
    expect(await marked(a)).toEqual({ frame: 'off', band: null });
    expect(await tabMarks()).toEqual(['off', 'off']);

    // A joins by its key (Ctrl+Alt+I), B from the palette.
    await focusShell(a);
    await page.keyboard.press('Control+Alt+KeyI');
    await waitMarked(a, 'Broadcasting to 1 shell');
    await focusShell(b);
    await palette('Broadcast input: on or off', 'workbench.broadcast');
    await waitMarked(b, 'Broadcasting to 2 shells');
    await waitMarked(a, 'Broadcasting to 2 shells');
    expect(await marked(c)).toEqual({ frame: 'off', band: null });
    // The first tab carries the band and a pressed toggle saying how many; the second does not.
    expect(await tabMarks()).toEqual(['on', 'off']);
    const toggle = page.getByTestId('tab-broadcast').first();
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    expect(await toggle.textContent()).toBe('2');
    expect(await page.getByTestId('shell-tab').first().textContent()).toContain('Broadcasting to 2 shells');

    // The palette gave the focus back to B; what is typed there runs in A and B alike.
    await page.waitForFunction(
      (sid) => !!document.querySelector(`[data-shell-id="${sid}"]`)?.contains(document.activeElement),
      b,
    );
    await page.keyboard.type('echo bc-$((6*7))');
    await page.keyboard.press('Enter');
    await waitText(a, 'bc-42');
    await waitText(b, 'bc-42');
    await page.screenshot({ path: path.join(SHOTS, 'broadcast-on-light-en.png') });

    // C, outside the set, got none of it: a command run in C afterwards comes first in its output.
    await palette('Next shell tab', 'workbench.nextTab');
    await focusShell(c);
    await page.keyboard.type('echo c-only-$((2+2))');
    await page.keyboard.press('Enter');
    await waitText(c, 'c-only-4');
    expect(await textOf(c)).not.toContain('bc-');
    // And C's typing did not reach A or B (C is not a member).
    await palette('Previous shell tab', 'workbench.prevTab');
    await wb.waitForLiveTerminals(2);
    expect(await textOf(a)).not.toContain('c-only');
    expect(await textOf(b)).not.toContain('c-only');
  });

  it('stops for every shell at once from the palette, then types into one shell only', async () => {
    await focusShell(a);
    await palette('Stop broadcasting', 'workbench.stopBroadcast');
    await waitMarked(a, null);
    await waitMarked(b, null);
    expect(await tabMarks()).toEqual(['off', 'off']);
    await page.getByText('Broadcast input is off').first().waitFor();

    await focusShell(b);
    await page.keyboard.type('echo solo-$((5*5))');
    await page.keyboard.press('Enter');
    await waitText(b, 'solo-25');
    // A shell takes its input in order: had A been sent "solo", it would show before this marker.
    await focusShell(a);
    await page.keyboard.type('echo after-$((3*3))');
    await page.keyboard.press('Enter');
    await waitText(a, 'after-9');
    expect(await textOf(a)).not.toContain('solo-');
    expect(await textOf(b)).not.toContain('after-');
  });

  it('broadcasts to every open shell, and a closed shell leaves the set', async () => {
    await focusShell(a);
    await palette('Broadcast input to every open shell', 'workbench.broadcastAll');
    await waitMarked(a, 'Broadcasting to 3 shells');
    await waitMarked(b, 'Broadcasting to 3 shells');
    expect(await tabMarks()).toEqual(['on', 'on']);

    // C closes (Ctrl+Alt+W in its tab): A and B now broadcast to two.
    await page.keyboard.press('Control+Alt+PageDown');
    await focusShell(c);
    await page.keyboard.press('Control+Alt+KeyW');
    await page.waitForFunction((sid) => !document.querySelector(`[data-shell-id="${sid}"]`), c);
    await wb.waitForLiveTerminals(2);
    await waitMarked(a, 'Broadcasting to 2 shells');
    await waitMarked(b, 'Broadcasting to 2 shells');

    // The band's own button stops it everywhere.
    await pane(a).getByTestId('broadcast-stop-all').click();
    await waitMarked(a, null);
    await waitMarked(b, null);
  });

  it('opens a shell of another held board in a tab, and broadcasts to both boards', async () => {
    // Keyboard only: the palette asks which board; the shell opens in a new tab named after it.
    await focusShell(a);
    await console_.waitForApp();
    await page.keyboard.press('Control+k');
    await page.waitForFunction(() => document.activeElement?.hasAttribute('cmdk-input') ?? false);
    await page.keyboard.type('Open a shell on another board');
    await page
      .locator('[cmdk-item][data-selected="true"][data-command="workbench.shellOnBoard"]')
      .waitFor({ timeout: 5_000 });
    await page.keyboard.press('Enter');
    // Only boards other than the workbench's are offered.
    await page.locator('[cmdk-item]', { hasText: 'second-board' }).waitFor({ timeout: 5_000 });
    expect(await page.locator('[cmdk-item]', { hasText: /^bcast/ }).count()).toBe(0);
    await page.keyboard.type('second');
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    const tab = page.getByTestId('shell-tab').filter({ hasText: 'second-board · Shell 1' });
    await tab.waitFor({ timeout: 10_000 });
    await wb.waitForLiveTerminals(1);
    const d = (await wb.terminals().first().getAttribute('data-shell-id')) as string;
    expect([a, b]).not.toContain(d);

    // Every open shell joins: two of this board, one of the other.
    await focusShell(d);
    await palette('Broadcast input to every open shell', 'workbench.broadcastAll');
    await waitMarked(d, 'Broadcasting to 3 shells');
    await page.waitForFunction(
      (sid) => !!document.querySelector(`[data-shell-id="${sid}"]`)?.contains(document.activeElement),
      d,
    );
    await page.keyboard.type('echo on-$(hostname)-$((8*8))');
    await page.keyboard.press('Enter');
    await waitText(d, '-64');
    const hostOf = async (id: string) => /on-(\S+)-64/.exec(await textOf(id))?.[1] ?? null;
    const there = await hostOf(d);
    await page.keyboard.press('Control+Alt+PageUp');
    await wb.waitForLiveTerminals(2);
    await waitText(a, '-64');
    await waitText(b, '-64');
    const here = await hostOf(a);
    // The same keys ran on both boards: two different hosts answered.
    expect(here).toBeTruthy();
    expect(there).toBeTruthy();
    expect(there).not.toBe(here);
    expect(await hostOf(b)).toBe(here);
    await page.screenshot({ path: path.join(SHOTS, 'broadcast-two-boards-light-en.png') });
    await pane(a).getByTestId('broadcast-stop-all').click();
    await waitMarked(a, null);
  });
});
