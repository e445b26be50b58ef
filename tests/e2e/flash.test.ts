// Flashing in Chromium against the real service and its local board lab, by keyboard only.
// One board: from the workbench, the palette's "Flash <board>…" → the developer image → the confirmation
// (Cancel focused, Tab, Enter); the flash pane shows the percent moving through the steps and the result
// success; the login shell closes with the flash as its reason, the serial console shows the board boot
// the new image, and a new shell sees a file that exists only in that image; one toast says so, and no
// progress notification became a toast. Two boards: "Flash several boards…" from the palette, two rows
// with two independent jobs, each ending in its own success, and each board's history lists its flash.
import { createHash } from 'node:crypto';
import type { Browser, BrowserContext, Page, WebSocket } from 'playwright-core';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { FlashJob, FlashWizard, MultiFlashTable } from './pages/FlashPages.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOT_DIR = 'tests/e2e/screenshots';
const IMAGE = 'bianbu-developer';

interface Lease {
  deviceId: string;
  serverName: string;
}

async function lease(svc: Service, token: string, serverName: string): Promise<Lease> {
  const res = await fetch(`${svc.url}/api/device/request-device`, {
    method: 'POST',
    headers: { Authorization: token, 'content-type': 'application/json' },
    body: JSON.stringify({
      requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
      filterReq: {},
      serverName,
    }),
  });
  const body = (await res.json()) as { code: number; message: string; data: Lease };
  if (body.code !== 20000) throw new Error(`request-device: ${body.code} ${body.message}`);
  return body.data;
}

/** A small root file system archive: what an uploaded board image is. */
async function tinyImage(): Promise<Buffer> {
  const pack = tar.pack();
  pack.entry({ name: 'etc/', type: 'directory' });
  pack.entry({ name: 'etc/passwd' }, 'root:x:0:0:root:/root:/bin/sh\n');
  pack.entry({ name: 'etc/bianbu-image' }, 'e2e-private\n');
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Every toast shown from now on (window.__notices). */
async function recordNotices(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __notices: string[] };
    w.__notices = [];
    const seen = new WeakSet<Element>();
    const note = () => {
      for (const n of document.querySelectorAll('[data-testid="notice"]')) {
        if (seen.has(n)) continue;
        seen.add(n);
        w.__notices.push(n.textContent ?? '');
      }
    };
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true });
  });
}

describe.skipIf(SKIP_E2E)('flashing boards', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let token: string;
  let one: Lease;
  let twoA: Lease;
  let twoB: Lease;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    // Setting up what the tests are not about: three held boards.
    one = await lease(svc, token, 'flash-one');
    twoA = await lease(svc, token, 'flash-two-a');
    twoB = await lease(svc, token, 'flash-two-b');
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript((t) => localStorage.setItem('token', t), token);
    await ctx.addInitScript(forceDomRenderer);
    page = await ctx.newPage();
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('selects a command that arrives while its name is being typed: Enter runs it, not what was first', async () => {
    // CI once typed "flash a board" before /mainboard's idle callbacks had fetched the features'
    // commands: the row first before they came stayed selected. Here the page's idle callbacks wait
    // until the test lets them run.
    const held = await ctx.newPage();
    await held.addInitScript(() => {
      const original = window.requestIdleCallback.bind(window);
      const waiting: IdleRequestCallback[] = [];
      const w = window as unknown as { releaseIdle: () => void };
      w.releaseIdle = () => {
        window.requestIdleCallback = original;
        for (const cb of waiting.splice(0)) cb({ didTimeout: true, timeRemaining: () => 0 });
      };
      window.requestIdleCallback = (cb) => waiting.push(cb);
    });
    const console_ = new ConsolePage(held, svc.url);
    await console_.goto('/mainboard');
    await console_.waitForApp();
    await held.keyboard.press('Control+k');
    await held.locator('[cmdk-input]').waitFor({ state: 'visible' });
    await held.keyboard.type('flash a board');
    const selected = held.locator('[cmdk-item][data-selected="true"]');
    await selected.waitFor();
    expect(await selected.getAttribute('data-command')).not.toBe('flash.ask');
    await held.evaluate(() => (window as unknown as { releaseIdle: () => void }).releaseIdle());
    await held
      .locator('[cmdk-item][data-selected="true"][data-command="flash.ask"]')
      .waitFor({ timeout: 15_000 });
    await held.keyboard.press('Enter');
    await held.getByTestId('palette-asking').waitFor();
    expect(await held.locator('[cmdk-input]').getAttribute('placeholder')).toBe('Which board?');
    await held.close();
  });

  it('lists the built-in images in the catalogue, reached from the palette', async () => {
    const console_ = new ConsolePage(page, svc.url);
    await console_.goto('/mainboard');
    await console_.runFromPalette('Image catalogue', 'flash.catalogue');
    await console_.waitForPath('/flash-images');
    await page.getByTestId('image-table').waitFor();
    const tags = await page
      .getByTestId('image-row')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-tag')));
    expect(tags).toEqual(expect.arrayContaining(['bianbu-minimal', IMAGE]));
    const row = page.locator(`[data-testid="image-row"][data-tag="${IMAGE}"]`);
    expect(await row.textContent()).toContain('Bianbu 2.0 developer');
    expect(await row.getByTestId('image-sha').textContent()).toMatch(/^[0-9a-f]{12}…$/);
    expect(await page.getByTestId('image-quota').textContent()).toMatch(/Your private images: .* of 2 GB/);
    await page.screenshot({ path: `${SHOT_DIR}/flash-e2e-catalogue-en.png` });
  });

  it('uploads a private image with its sha256, shows it in the catalogue and the quota, and retires it', async () => {
    const console_ = new ConsolePage(page, svc.url);
    await console_.goto('/flash-images');
    await page.getByTestId('image-table').waitFor();
    const file = await tinyImage();
    const sha = createHash('sha256').update(file).digest('hex');
    await page.getByTestId('image-upload-open').click();
    const dialog = page.getByTestId('image-upload-dialog');
    await dialog.waitFor();
    // The tag field has the focus; the fields are typed, the file chosen, Enter submits.
    await page.keyboard.type('e2e-private');
    await page.keyboard.press('Tab');
    await page.keyboard.type('E2E private image');
    await dialog.getByLabel('sha256 (optional)').fill(sha);
    await page
      .getByTestId('image-file')
      .setInputFiles({ name: 'e2e.tar', mimeType: 'application/x-tar', buffer: file });
    // The administrator holds device.add_image: "public" is offered, private stays the default.
    expect(await dialog.getByLabel('Public (everyone)').isChecked()).toBe(false);
    expect(await dialog.getByLabel('Private (only you)').isChecked()).toBe(true);
    await dialog.getByLabel('Name').press('Enter');
    await dialog.waitFor({ state: 'detached', timeout: 30_000 });
    const row = page.locator('[data-testid="image-row"][data-tag="e2e-private"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('private');
    expect(await row.getByTestId('image-sha').getAttribute('title')).toBe(sha);
    expect(await page.getByTestId('image-quota').textContent()).not.toMatch(/: 0 B of/);

    await row.getByTestId('image-retire').click();
    await page.getByTestId('image-retire-dialog').waitFor();
    await page.getByTestId('image-retire-confirm').click();
    await page.getByTestId('image-retire-dialog').waitFor({ state: 'detached' });
    await page.waitForFunction(() => {
      const r = document.querySelector('[data-testid="image-row"][data-tag="e2e-private"]');
      return !r || /retired/.test(r.textContent ?? '');
    });
  });

  it('flashes a held board from the palette by keyboard: the percent moves, the result is success, the serial console boots the new image and its file is there', {
    timeout: 240_000,
  }, async () => {
    const console_ = new ConsolePage(page, svc.url);
    const wb = new WorkbenchPage(page);
    const wizard = new FlashWizard(page);
    const job = new FlashJob(page);

    // The realtime channel's frames, watched for the board's flashing state (see the flash's answer).
    let stateCame = () => {};
    const flashingState = new Promise<void>((r) => {
      stateCame = r;
    });
    const onSocket = (ws: WebSocket) =>
      ws.on('framereceived', (f) => {
        if (String(f.payload).includes('"flashing"')) stateCame();
      });
    page.on('websocket', onSocket);

    // Into the workbench of flash-one, by keyboard on /mainboard: ↓ to its row, Enter.
    await console_.goto('/mainboard');
    await console_.waitForApp();
    await page.getByTestId('lease-row').first().waitFor();
    for (let i = 0; i < 5; i++) {
      if (
        (await page.locator('[data-testid="lease-row"][aria-selected="true"]').getAttribute('data-name')) ===
        'flash-one'
      )
        break;
      await page.keyboard.press('ArrowDown');
    }
    await page.keyboard.press('Enter');
    await console_.waitForPath('/workbench');
    await wb.ready();
    await wb.waitForLiveTerminals(1);
    const loginShell = await wb.terminals().nth(0).getAttribute('data-shell-id');
    await wb.run(
      0,
      'test -e /opt/bianbu-developer/README && echo "has-readme" || echo "no-readme-$((40+2))"',
      'no-readme-42',
    );

    // The serial console in a second tab stays open through the flash.
    await page.keyboard.press('Control+Alt+Shift+N');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 2);
    await wb.waitForLiveTerminals(1);
    const serial = await wb.terminals().nth(0).getAttribute('data-shell-id');
    await wb.waitForText(0, 'login:');

    await recordNotices(page);

    // Palette → "Flash flash-one…" → the developer image → confirm.
    await console_.runFromPalette('Flash flash-one', `flash.one.${one.deviceId}`);
    await wizard.chooseImage(IMAGE);
    // Every percent the view shows from the confirmation on (the built-in image flashes in seconds).
    await job.record();
    // The service publishes the board's new state (flashing) as the job starts. Its answer naming the
    // job is held here until that state has come over the realtime channel (5 s at most), as it once
    // came first in CI under load: still no "is now Flashing" toast (checked at the end).
    await page.route('**/api/device/post-flash', async (route) => {
      const answer = await route.fetch();
      await Promise.race([flashingState, new Promise((r) => setTimeout(r, 5000))]);
      await route.fulfill({ response: answer });
    });
    const confirmText = await wizard.confirmByKeyboard();
    expect(confirmText).toContain('flash-one');
    expect(confirmText).toContain('Bianbu 2.0 developer');
    expect(confirmText).toMatch(/Every file on flash-one is replaced/);

    // The flash pane of the workbench shows the job; the percent moves until the result.
    await page
      .locator('[data-pane-id="flash"] [data-testid="flash-view"][data-job-id]')
      .waitFor({ timeout: 15_000 });
    await page.unroute('**/api/device/post-flash');
    page.off('websocket', onSocket);
    // Nothing animates without end while the flash runs: the step's spinner and the board's pulsing
    // state step from timers, so typing in a shell meanwhile is not held a frame (components/pulse.ts).
    await page
      .locator('[data-pane-id="flash"] [data-step-status="active"] svg')
      .first()
      .waitFor({ timeout: 15_000 });
    expect(
      await page.evaluate(
        () => document.getAnimations().filter((a) => a.effect?.getTiming().iterations === Infinity).length,
      ),
    ).toBe(0);
    const end = await job.waitForEnd();
    const seen = await job.recorded();
    expect(
      end,
      `job ended ${end}: ${await job
        .result()
        .textContent()
        .catch(() => '')}`,
    ).toBe('SUCCESS');
    expect(seen.percents.at(-1)).toBe(100);
    expect(new Set(seen.percents).size, `percents seen: ${seen.percents.join(',')}`).toBeGreaterThanOrEqual(
      3,
    );
    expect(seen.percents.some((p) => p > 0 && p < 100)).toBe(true);
    expect([...seen.percents].sort((a, b) => a - b)).toEqual(seen.percents);
    expect(await job.result().getAttribute('data-result')).toBe('success');
    expect(await job.result().textContent()).toBe(
      'flash-one now runs Bianbu 2.0 developer: written, verified and booted.',
    );
    const steps = await page
      .locator('[data-pane-id="flash"] [data-step-status]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-step-status')));
    expect(steps).toEqual(['done', 'done', 'done', 'done']);
    expect(await page.getByTestId('flash-log').textContent()).not.toBe('');
    // The log shown is the log stored, line for line: the lines of events that the view's first read
    // had overtaken are not shown twice (src/web/flash/format.ts, appendLog).
    const stored = (await (
      await fetch(`${svc.url}/api/device/fetch-flash-job?deviceId=${one.deviceId}`, {
        headers: { Authorization: token },
      })
    ).json()) as { data: { log: string[] } };
    expect((await page.getByTestId('flash-log').textContent())?.split('\n')).toEqual(stored.data.log);
    await page.screenshot({ path: `${SHOT_DIR}/flash-e2e-pane-en.png` });
    // The same pane in Chinese (the language switched by palette), then back.
    await console_.runFromPalette('简体中文', 'lang.zh');
    await page.waitForFunction(() => document.documentElement.lang === 'zh');
    await page.screenshot({ path: `${SHOT_DIR}/flash-e2e-pane-zh.png` });
    await console_.runFromPalette('English', 'lang.en');
    await page.waitForFunction(() => document.documentElement.lang === 'en');

    // The serial console (still open, still live) shows the board booting the new image.
    await page.waitForFunction(
      (id) => {
        const text =
          document
            .querySelector(`[data-shell-id="${id}"] .xterm-rows`)
            ?.textContent?.replace(/\u00a0/g, ' ') ?? '';
        const at = text.lastIndexOf('--- boot after');
        return at >= 0 && /Starting kernel/.test(text.slice(at)) && /login:/.test(text.slice(at));
      },
      serial,
      { timeout: 60_000 },
    );
    const serialText = await wb.terminalText(0);
    expect(serialText.slice(serialText.lastIndexOf('--- boot after'))).toMatch(/Developer|developer/);

    // The login shell closed, saying why.
    await page.keyboard.press('Control+Alt+PageUp');
    await page.waitForFunction(
      (id) => document.querySelector(`[data-shell-id="${id}"]`)?.getAttribute('data-status') === 'closed',
      loginShell,
      {
        timeout: 30_000,
      },
    );
    expect(
      await page.locator(`[data-shell-id="${loginShell}"]`).getByTestId('terminal-banner').textContent(),
    ).toBe('The shell was closed: the board is being flashed. — press Enter to start a new shell');

    // A new shell sees the new image: its tag and a file that only it has.
    await page.keyboard.press('Control+Alt+n');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 3);
    await wb.waitForLiveTerminals(1);
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'));
    await page.keyboard.type('echo "tag=$(cat /etc/bianbu-image)"; head -n 1 /opt/bianbu-developer/README');
    await page.keyboard.press('Enter');
    await wb.waitForText(0, 'tag=bianbu-developer');
    await wb.waitForText(0, 'Bianbu 2.0 developer image.');
    await page.screenshot({ path: `${SHOT_DIR}/flash-e2e-after-en.png` });

    // One toast for the end; progress notifications and the board's state changes were not toasts.
    const toasts = await page.evaluate(() => (window as unknown as { __notices: string[] }).__notices);
    expect(toasts.filter((t) => /was flashed with Bianbu 2.0 developer/.test(t))).toHaveLength(1);
    expect(toasts.filter((t) => /%|is now Flashing|is now Leased/.test(t))).toEqual([]);
  });

  it('flashes two boards at once from the palette: two rows, two jobs, two independent results', {
    timeout: 240_000,
  }, async () => {
    const console_ = new ConsolePage(page, svc.url);
    const wizard = new FlashWizard(page);
    const table = new MultiFlashTable(page);

    await console_.goto('/mainboard');
    await page.getByTestId('lease-row').first().waitFor();
    await console_.runFromPalette('Flash several boards', 'flash.many');
    await wizard.chooseBoards(['flash-two-a', 'flash-two-b']);
    await wizard.chooseImage(IMAGE);
    const confirmText = await wizard.confirmByKeyboard();
    expect(confirmText).toContain('flash-two-a, flash-two-b');
    expect(confirmText).toContain('Flash Bianbu 2.0 developer onto 2 boards?');

    await page.getByTestId('flash-multi-dialog').waitFor();
    expect(await page.getByTestId('flash-multi-dialog').textContent()).toContain(
      'Flashing 2 boards with Bianbu 2.0 developer',
    );
    expect(await table.rows().count()).toBe(2);
    const jobIds = await table.rows().evaluateAll((rows) => rows.map((r) => r.getAttribute('data-job-id')));
    expect(new Set(jobIds).size).toBe(2);
    expect(jobIds.every(Boolean)).toBe(true);
    await page.screenshot({ path: `${SHOT_DIR}/flash-e2e-multi-running-en.png` });

    await table.waitForAllFinal(2);
    for (const name of ['flash-two-a', 'flash-two-b']) {
      const row = table.row(name);
      expect(
        await row.getAttribute('data-state'),
        `${name}: ${await row.getByTestId('multi-result').textContent()}`,
      ).toBe('SUCCESS');
      expect(await row.getAttribute('data-percent')).toBe('100');
      expect(await row.getByTestId('multi-result').textContent()).toBe('Flashed, verified and booted');
    }
    expect(await page.getByTestId('multi-summary').textContent()).toBe(
      '2 succeeded · 0 failed · 0 refused · 0 running',
    );
    await page.screenshot({ path: `${SHOT_DIR}/flash-e2e-multi-done-en.png` });
    await page.keyboard.press('Escape');
    await page.getByTestId('flash-multi-dialog').waitFor({ state: 'detached' });

    // Each board's history lists its own flash (palette → "Flash history of …").
    for (const b of [twoA, twoB]) {
      await console_.runFromPalette(`Flash history of ${b.serverName}`, `flash.history.${b.deviceId}`);
      await page.getByTestId('flash-history').waitFor();
      const rows = page.getByTestId('flash-history-row');
      expect(await rows.count()).toBe(1);
      expect(await rows.first().getAttribute('data-state')).toBe('SUCCESS');
      expect(await rows.first().textContent()).toContain(IMAGE);
      await page.keyboard.press('Escape');
      await page.getByTestId('flash-history-dialog').waitFor({ state: 'detached' });
    }
  });

  it('flashes from the palette asking: which board, which image that fits, a confirmation naming both; Backspace goes back', {
    timeout: 240_000,
  }, async () => {
    const console_ = new ConsolePage(page, svc.url);
    const job = new FlashJob(page);
    const asked = () => page.locator('[cmdk-input]').getAttribute('placeholder');
    const selected = page.locator('[cmdk-item][data-selected="true"]');
    const historyOf = async (deviceId: string) => {
      const res = await fetch(`${svc.url}/api/device/flash-history?deviceId=${deviceId}`, {
        headers: { Authorization: token },
      });
      return ((await res.json()) as { data: { items: unknown[] } }).data.items.length;
    };
    const flashesBefore = await historyOf(twoB.deviceId);
    await console_.goto('/mainboard');
    await console_.runFromPaletteAsking('flash a board', 'flash.ask');
    expect(await asked()).toBe('Which board?');
    const boards = await page.locator('[cmdk-item][data-option]').allTextContents();
    for (const name of ['flash-one', 'flash-two-a', 'flash-two-b'])
      expect(boards.some((b) => b.includes(name))).toBe(true);
    await page.keyboard.type('two-b');
    await expect.poll(() => selected.textContent()).toContain('flash-two-b');
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('Which image? (those that fit the board)');
    await page.locator(`[cmdk-item][data-option="${IMAGE}"]`).waitFor();
    await page.keyboard.type(IMAGE);
    await expect.poll(() => selected.getAttribute('data-option')).toBe(IMAGE);
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('Enter flashes; Backspace goes back, Esc cancels');
    expect(await selected.textContent()).toContain('Flash Bianbu 2.0 developer onto flash-two-b?');
    // Backspace in the empty field: back to the image, which is asked again.
    await page.keyboard.press('Backspace');
    await expect.poll(asked).toBe('Which image? (those that fit the board)');
    await page.locator(`[cmdk-item][data-option="${IMAGE}"]`).waitFor();
    await page.keyboard.type(IMAGE);
    await expect.poll(() => selected.getAttribute('data-option')).toBe(IMAGE);
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('Enter flashes; Backspace goes back, Esc cancels');
    await page.screenshot({ path: `${SHOT_DIR}/flash-e2e-palette-confirm-en.png` });
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    // The job shows (a dialog off the workbench) and ends in success on that board.
    await page.locator('[data-testid="flash-view"][data-job-id]').waitFor({ timeout: 15_000 });
    expect(await job.waitForEnd()).toBe('SUCCESS');
    await page.keyboard.press('Escape');
    await console_.runFromPalette(`Flash history of flash-two-b`, `flash.history.${twoB.deviceId}`);
    await page.getByTestId('flash-history').waitFor();
    expect(await page.getByTestId('flash-history-row').count()).toBe(flashesBefore + 1);
    expect(await historyOf(twoB.deviceId)).toBe(flashesBefore + 1);
    await page.keyboard.press('Escape');
  });
});
