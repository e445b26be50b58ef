// Files in Chromium against the real service: browse the board's tree, open a file written in a
// shell, edit and save it and see the change with `cat` in the shell, upload with a progress bar and
// check the bytes on the board, download and compare; files a shell creates appear in the tree alone.
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SKIP_E2E } from './helpers/chromium.ts';
import type { Service } from './helpers/service.ts';
import { openWorkbench, type WorkbenchSession } from './helpers/workbench-session.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { FilePanes } from './pages/FilePanes.ts';
import type { WorkbenchPage } from './pages/WorkbenchPage.ts';

describe.skipIf(SKIP_E2E)('files in the workbench', () => {
  let session: WorkbenchSession;
  let svc: Service;
  let page: Page;
  let wb: WorkbenchPage;
  let files: FilePanes;

  beforeAll(async () => {
    session = await openWorkbench('files', { acceptDownloads: true });
    ({ svc, page, wb } = session);
    files = new FilePanes(page);
  });

  afterAll(() => session?.close());

  it('opens a file written in a shell, saves an edit with Ctrl+S, and the shell sees it', async () => {
    await wb.run(
      0,
      'mkdir -p /root/e2e && printf "from-the-shell\\n" > /root/e2e/notes.txt && echo WROTE-$((2+3))',
      'WROTE-5',
    );
    await files.goto('/root');
    await files.row('/root/e2e').click();
    await files.tree().press('ArrowRight');
    await files.row('/root/e2e/notes.txt').waitFor();
    await files.open('/root/e2e/notes.txt');
    expect(await files.editorText('/root/e2e/notes.txt')).toContain('from-the-shell');

    await files.replaceAndSave('/root/e2e/notes.txt', 'edited in the browser');
    await wb.run(0, 'clear; cat /root/e2e/notes.txt; echo; echo CAT-$((4*4))', 'CAT-16');
    expect(await wb.terminalText(0)).toContain('edited in the browser');
  });

  it('goes to a folder from the palette, completing the path with Tab like a shell', async () => {
    await wb.run(0, 'mkdir -p /root/deep/alpha/omega /root/deep/beta; echo MK-$((6*7))', 'MK-42');
    const console_ = new ConsolePage(page, svc.url);
    await console_.runFromPaletteAsking('go to folder', 'files.goto');
    const input = page.locator('[cmdk-input]');
    const selected = page.locator('[cmdk-item][data-selected="true"]');
    await page.keyboard.type('/root/de');
    await expect.poll(() => selected.getAttribute('data-option')).toBe('/root/deep/');
    await page.keyboard.press('Tab');
    expect(await input.inputValue()).toBe('/root/deep/');
    // The folders of /root/deep are offered; typing narrows them, Tab takes the one chosen.
    await expect
      .poll(() =>
        page
          .locator('[cmdk-item][data-option]:not([data-option=""])')
          .evaluateAll((els) => els.map((e) => e.getAttribute('data-option'))),
      )
      .toEqual(['/root/deep/alpha/', '/root/deep/beta/']);
    await page.keyboard.type('al');
    await expect.poll(() => selected.getAttribute('data-option')).toBe('/root/deep/alpha/');
    await page.keyboard.press('Tab');
    await expect.poll(() => selected.getAttribute('data-option')).toBe('/root/deep/alpha/omega/');
    await page.keyboard.press('Enter');
    await input.waitFor({ state: 'detached' });
    await page.waitForFunction(
      () =>
        document.querySelector('[data-testid="file-tree-root"]')?.textContent === '/root/deep/alpha/omega',
    );
    // A folder that is not there is said so, and the tree stays where it was.
    await console_.runFromPaletteAsking('go to folder', 'files.goto');
    await page.keyboard.type('/root/no-such-folder');
    await page.keyboard.press('Enter');
    await input.waitFor({ state: 'detached' });
    await page.getByTestId('notice').filter({ hasText: 'Cannot open /root/no-such-folder' }).waitFor();
    expect(await page.getByTestId('file-tree-root').textContent()).toBe('/root/deep/alpha/omega');
    await files.goto('/root');
  });

  it('asks before overwriting a file that changed on the board since it was opened', async () => {
    await wb.run(0, 'echo "changed by a shell" > /root/e2e/notes.txt; echo CHG-$((3*3))', 'CHG-9');
    const content = files.editorHost('/root/e2e/notes.txt').locator('.cm-content');
    await content.click();
    await page.keyboard.press('End');
    await page.keyboard.type(' again');
    await page.keyboard.press('Control+s');
    const dialog = page.getByTestId('editor-conflict-dialog');
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain('/root/e2e/notes.txt');
    await page.getByTestId('editor-overwrite').click();
    await dialog.waitFor({ state: 'detached' });
    await wb.run(0, 'clear; cat /root/e2e/notes.txt; echo; echo OVR-$((5*5))', 'OVR-25');
    expect(await wb.terminalText(0)).toContain('edited in the browser again');
  });

  it('uploads several files with a progress bar each, and downloads one back byte for byte', async () => {
    const big = crypto.randomBytes(24 * 1024 * 1024);
    const small = Buffer.from('small upload\n');
    await files.row('/root/e2e').click();
    await files.upload([
      { name: 'big.bin', mimeType: 'application/octet-stream', buffer: big },
      { name: 'small.txt', mimeType: 'text/plain', buffer: small },
    ]);
    await page.waitForFunction(
      () => {
        const items = [...document.querySelectorAll('[data-testid="transfer-item"][data-kind="upload"]')];
        return items.length === 2 && items.every((i) => i.getAttribute('data-status') === 'done');
      },
      undefined,
      { timeout: 60_000 },
    );
    const bars = await page
      .locator('[data-testid="transfer-item"][data-kind="upload"] [role="progressbar"]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('aria-valuenow')));
    expect(bars).toEqual(['100', '100']);
    const sum = crypto.createHash('sha256').update(big).digest('hex');
    await wb.run(
      0,
      'clear; sha256sum /root/e2e/big.bin; cat /root/e2e/small.txt; echo SUM-$((6*6))',
      'SUM-36',
    );
    const text = await wb.terminalText(0);
    expect(text).toContain(sum);
    expect(text).toContain('small upload');

    await files.row('/root/e2e/big.bin').waitFor();
    const download = await files.download('/root/e2e/big.bin');
    expect(download.suggestedFilename()).toBe('big.bin');
    const saved = await download.path();
    expect(crypto.createHash('sha256').update(fs.readFileSync(saved)).digest('hex')).toBe(sum);
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[data-testid="transfer-item"][data-kind="download"]')].some(
        (i) => i.getAttribute('data-status') === 'done',
      ),
    );
  });

  it('shows files a shell creates or removes in the tree without a refresh, and stops listing while the tab is hidden', async () => {
    await files.row('/root/e2e').waitFor();
    expect(await files.row('/root/from-shell.txt').count()).toBe(0);
    await wb.run(0, 'touch /root/from-shell.txt; echo TOUCHED-$((8*8))', 'TOUCHED-64');
    await files.row('/root/from-shell.txt').waitFor({ timeout: 15_000 });
    await wb.run(0, 'rm /root/from-shell.txt; echo RM-$((9*9))', 'RM-81');
    await files.row('/root/from-shell.txt').waitFor({ state: 'detached', timeout: 15_000 });

    // A hidden tab costs the board nothing; coming back lists at once.
    const setVisibility = (state: 'hidden' | 'visible') =>
      page.evaluate((s) => {
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => s });
        document.dispatchEvent(new Event('visibilitychange'));
      }, state);
    let listings = 0;
    const count = (req: { url(): string }) => {
      if (req.url().endsWith('/api/device/file-browser')) listings++;
    };
    await setVisibility('hidden');
    page.on('request', count);
    try {
      await wb.run(0, 'touch /root/while-hidden.txt; echo HID-$((7*8))', 'HID-56');
      await page.waitForTimeout(6500);
      expect(listings).toBe(0);
      expect(await files.row('/root/while-hidden.txt').count()).toBe(0);
      await setVisibility('visible');
      await files.row('/root/while-hidden.txt').waitFor({ timeout: 2000 });
      expect(listings).toBeGreaterThan(0);
    } finally {
      page.off('request', count);
    }
  });

  it('asks twice before deleting a home folder, naming it, and a cancel leaves it alone', async () => {
    await files.goto('/');
    await files.row('/root').click();
    await files.tree().press('Delete');
    const dialog = page.getByTestId('file-delete-dialog');
    await dialog.waitFor();
    expect(await dialog.innerText()).toContain('/root');
    await page.getByTestId('file-delete-confirm').click();
    await page.getByText('Delete a system or home folder?').waitFor();
    expect(await dialog.innerText()).toContain('/root');
    await dialog.getByRole('button', { name: 'Cancel' }).first().click();
    await dialog.waitFor({ state: 'detached' });
    await wb.run(0, 'clear; test -f /root/e2e/small.txt && echo STILL-$((7*7))', 'STILL-49');
  });
});
