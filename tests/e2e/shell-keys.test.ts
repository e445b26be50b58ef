// Shell pane keys in Chromium against the real service and a real board shell: terminal find with a
// match count and case / regex options; closing a shell that runs `sleep` asks (Escape keeps it,
// Enter closes it) while an idle one closes at once; "Reopen closed shell" brings a shell of the same
// kind back in the same place with the same name. After each step the focus is checked.
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKIP_E2E } from './helpers/chromium.ts';
import { openWorkbench, type WorkbenchSession } from './helpers/workbench-session.ts';
import type { WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOTS = path.join(import.meta.dirname, 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

describe.skipIf(SKIP_E2E)('shell pane keys', () => {
  let session: WorkbenchSession;
  let page: Page;
  let wb: WorkbenchPage;

  beforeAll(async () => {
    session = await openWorkbench('shellkeys', { tokenEveryLoad: false });
    ({ page, wb } = session);
  });

  afterAll(() => session?.close());

  /** The focus is in the xterm of the visible tab's terminal `index`. */
  const terminalFocused = (index = 0) =>
    page.evaluate((i) => {
      const panes = document.querySelectorAll(
        '[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-testid="terminal-pane"]',
      );
      const a = document.activeElement;
      return !!a?.classList.contains('xterm-helper-textarea') && !!panes[i]?.contains(a);
    }, index);
  const activeTestId = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? null);
  const tabNames = () => page.getByTestId('shell-tab').allInnerTexts();
  const count = () => page.getByTestId('terminal-search-count').innerText();
  /** Waits until the count reads `want` (a string, or a pattern); fails saying what it read. */
  const waitCount = async (want: string | RegExp) => {
    const deadline = Date.now() + 10_000;
    let last = '';
    for (;;) {
      last = (await page.getByTestId('terminal-search-count').textContent()) ?? '';
      if (typeof want === 'string' ? last === want : want.test(last)) return last;
      if (Date.now() > deadline)
        throw new Error(`search count reads ${JSON.stringify(last)}, wanted ${want}`);
      await page.waitForTimeout(50);
    }
  };

  it('finds in the scrollback with a match count, and honours case and regular expressions', async () => {
    await wb.run(
      0,
      'for w in Apple apple APPLE pineapple; do echo "fruit:$w"; done; echo done-$((3*5))',
      'done-15',
    );
    await page.keyboard.press('Control+Alt+KeyF');
    const input = page.getByTestId('terminal-search-input');
    await input.waitFor();
    await page.waitForFunction(
      () => document.activeElement?.getAttribute('data-testid') === 'terminal-search-input',
    );

    // "fruit:" is typed on the command line once and printed four times.
    await page.keyboard.type('fruit:');
    await waitCount(/^\d of 5$/);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('apple');
    // apple, Apple, APPLE, pineapple, printed and typed: 4 + 4 typed on the command line.
    await waitCount(/of 8$/);
    const first = await count();
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (f) => document.querySelector('[data-testid="terminal-search-count"]')?.textContent !== f,
      first,
    );
    const second = await count();
    await page.keyboard.press('Shift+Enter');
    await waitCount(first);
    expect(second).not.toBe(first);

    // Match Case by Alt+C: "apple" in lower case only (the loop's word, the printed one, pineapple's).
    await page.keyboard.press('Alt+KeyC');
    expect(await page.getByTestId('terminal-search-caseSensitive').getAttribute('aria-pressed')).toBe('true');
    await waitCount(/of 4$/);
    // Whole Word by Alt+W: pineapple no longer counts.
    await page.keyboard.press('Alt+KeyW');
    await waitCount(/of 2$/);
    await page.keyboard.press('Alt+KeyW');
    await page.keyboard.press('Alt+KeyC');

    // Regex by Alt+R: fruit:[A-Z]+$ matches the printed APPLE only (case on).
    await page.keyboard.press('Alt+KeyR');
    await page.keyboard.press('Alt+KeyC');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('fruit:[A-Z]+$');
    await waitCount('1 of 1');
    await page.screenshot({ path: path.join(SHOTS, 'terminal-search-count-en.png') });
    // An invalid expression is said, nothing is thrown.
    await page.keyboard.press('Control+A');
    await page.keyboard.type('fruit:(');
    await waitCount('Invalid regular expression');
    expect(await input.getAttribute('aria-invalid')).toBe('true');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('no-such-text-anywhere');
    await waitCount('No results');
    expect(await activeTestId()).toBe('terminal-search-input');

    await page.keyboard.press('Escape');
    await input.waitFor({ state: 'detached' });
    expect(await terminalFocused()).toBe(true);
  });

  it('closes an idle shell at once, and reopens it in the same place with the same name', async () => {
    await page.keyboard.press('Control+Alt+KeyN');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 2);
    await wb.waitForLiveTerminals(1);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    // Name the first tab so its return can be told by its name and place.
    await page.getByTestId('shell-tab').first().click();
    await wb.waitForLiveTerminals(1);
    await page.keyboard.press('Control+k');
    await page.locator('[cmdk-input]').waitFor({ state: 'visible' });
    // Typed straight on, as a user who knows the command does: Enter runs the top row even when it
    // comes before the list has moved its selection.
    await page.keyboard.type('Rename shell tab');
    await page.keyboard.press('Enter');
    await page.keyboard.type('builds');
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[data-testid="shell-tab"]')].some((t) =>
        t.textContent?.includes('builds'),
      ),
    );
    expect(await tabNames()).toEqual(['builds', 'Shell 2']);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));

    await page.keyboard.press('Control+Alt+KeyW');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 1);
    expect(await page.getByTestId('close-shell-dialog').count()).toBe(0);
    expect(await tabNames()).toEqual(['Shell 1']);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    expect(await terminalFocused()).toBe(true);

    await page.keyboard.press('Control+Alt+Shift+KeyT');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 2);
    expect(await tabNames()).toEqual(['builds', 'Shell 2']);
    expect(await page.getByTestId('shell-tab').first().getAttribute('aria-selected')).toBe('true');
    await wb.waitForLiveTerminals(1);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    expect(await terminalFocused()).toBe(true);
    await wb.run(0, 'echo reopened-$((7*6))', 'reopened-42');
  });

  it('asks before closing a shell running sleep: Escape keeps it, Enter closes it', async () => {
    await wb.focusTerminal(0);
    await page.keyboard.type('sleep 100');
    await page.keyboard.press('Enter');
    // Give the shell a moment to start the program.
    await page.waitForTimeout(500);
    const tabsBefore = (await tabNames()).length;

    await page.keyboard.press('Control+Alt+KeyW');
    const dialog = page.getByTestId('close-shell-dialog');
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain('“sleep” is still running');
    expect(await activeTestId()).toBe('close-shell-confirm');
    // The focus stays inside the dialog.
    await page.keyboard.press('Tab');
    expect(
      await page.evaluate(() => !!document.activeElement?.closest('[data-testid="close-shell-dialog"]')),
    ).toBe(true);
    await page.keyboard.press('Shift+Tab');
    await page.screenshot({ path: path.join(SHOTS, 'close-shell-confirm-en.png') });

    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect((await tabNames()).length).toBe(tabsBefore);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    expect(await terminalFocused()).toBe(true);

    await page.keyboard.press('Control+Alt+KeyW');
    await dialog.waitFor();
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="shell-tab"]').length === n,
      tabsBefore - 1,
    );
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    expect(await terminalFocused()).toBe(true);

    // It comes back from the palette too, as a new shell (the sleep is gone with the old one).
    await page.keyboard.press('Control+k');
    await page.locator('[cmdk-input]').waitFor({ state: 'visible' });
    await page.keyboard.type('Reopen closed shell');
    const item = page.locator('[cmdk-item][data-command="workbench.reopenClosed"]');
    await item.waitFor();
    expect(await item.locator('kbd').allTextContents()).toEqual(['Ctrl', 'Alt', 'Shift', 'T', '↵']);
    // The top result, the one Enter runs.
    expect(await page.locator('[cmdk-item][aria-selected="true"]').getAttribute('data-command')).toBe(
      'workbench.reopenClosed',
    );
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="shell-tab"]').length === n,
      tabsBefore,
    );
    expect(await tabNames()).toEqual(['builds', 'Shell 2']);
    await wb.waitForLiveTerminals(1);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    expect(await terminalFocused()).toBe(true);
    await wb.run(0, 'echo fresh-$((9*9))', 'fresh-81');
  });
});
