// Sequences in Chromium against the real service and its local board lab, by keyboard: record one
// from the palette (a command step, a wait, a renewal done as usual), save it under a name; replay it
// from the palette on every held board and watch each board's steps end with the command's output;
// replay it from the CLI (the real binary, with the user's API key) and see that run in the console.
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { ROOT, type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';

const SHOT_DIR = 'tests/e2e/screenshots';

async function api<T>(
  svc: Service,
  token: string,
  method: 'GET' | 'POST',
  url: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${svc.url}${url}`, {
    method,
    headers: { Authorization: token, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const env = (await res.json()) as { code: number; message: string; data: T };
  if (env.code !== 20000) throw new Error(`${url}: ${env.code} ${env.message}`);
  return env.data;
}

describe.skipIf(SKIP_E2E)('sequences', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let token: string;
  let console_: ConsolePage;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    for (const serverName of ['seq-a', 'seq-b']) {
      await api(svc, token, 'POST', '/api/device/request-device', {
        requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
        filterReq: {},
        serverName,
      });
    }
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript((t) => localStorage.setItem('token', t), token);
    page = await ctx.newPage();
    console_ = new ConsolePage(page, svc.url);
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  const asked = () => page.locator('[cmdk-input]').getAttribute('placeholder');
  const count = () => page.getByTestId('recording-count').textContent();

  it('records from the palette: a command step, a wait and a renewal done as usual, saved under a name', async () => {
    await console_.goto('/mainboard');
    await console_.runFromPalette('Start recording a sequence', 'sequences.record');
    const badge = page.getByTestId('recording-badge');
    await badge.waitFor();
    expect(await count()).toBe('0 steps');
    // The red dot pulses from a timer, not an endless animation: the page does not draw every frame
    // while the user types the steps (src/web/components/pulse.ts).
    expect(
      await page.evaluate(() => document.getAnimations().filter((x) => x.playState === 'running').length),
    ).toBe(0);
    const dim = () => page.evaluate(() => document.documentElement.getAttribute('data-pulse') === '1');
    await expect.poll(dim, { timeout: 3000, interval: 50 }).toBe(true);
    await expect.poll(dim, { timeout: 3000, interval: 50 }).toBe(false);

    await console_.runFromPaletteAsking('add a command step', 'sequences.addExec');
    expect(await asked()).toBe("Which command? (runs in each board's shell)");
    await page.keyboard.type('echo rec-$((5*5)) on $(hostname)');
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await expect.poll(count).toBe('1 step');

    await console_.runFromPaletteAsking('add a wait', 'sequences.addWait');
    await page.keyboard.type('soon');
    await page.keyboard.press('Enter');
    // A bad answer is refused with the reason; the palette keeps asking.
    await page.getByText('A whole number of seconds from 1 to 3600').waitFor();
    await page.keyboard.press('Control+a');
    await page.keyboard.type('1');
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await expect.poll(count).toBe('2 steps');

    // Renewing as usual is recorded too.
    await console_.runFromPaletteAsking('renew a board', 'device.renewAsk');
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('Renew until…');
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    await expect.poll(count).toBe('3 steps');
    await page.screenshot({ path: `${SHOT_DIR}/sequences-recording-en.png` });

    // A reload keeps the recording (this tab's session storage).
    await page.reload();
    await badge.waitFor();
    expect(await count()).toBe('3 steps');

    await console_.runFromPaletteAsking('Stop recording and save', 'sequences.save');
    await page.keyboard.type('smoke e2e');
    await page.keyboard.press('Enter');
    await page.getByText('Saved the sequence smoke e2e').waitFor();
    await badge.waitFor({ state: 'detached' });

    const list = await api<{ items: { name: string; source: string; steps: { kind: string }[] }[] }>(
      svc,
      token,
      'GET',
      '/api/sequence/list',
    );
    const saved = list.items.find((s) => s.name === 'smoke e2e');
    expect(saved?.steps.map((s) => s.kind)).toEqual(['exec', 'wait', 'renew']);
    expect(saved?.source).toContain('exec: echo rec-$((5*5)) on $(hostname)');
  });

  it('replays it from the palette on every held board, each board’s steps ending with the output', async () => {
    await console_.goto('/mainboard');
    await console_.runFromPaletteAsking('Run a sequence', 'sequences.run');
    expect(await asked()).toBe('Which sequence?');
    await page.keyboard.type('smoke e2e');
    await expect
      .poll(() => page.locator('[cmdk-item][data-selected="true"]').textContent())
      .toContain('smoke e2e');
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('On which boards? (a name, or a pattern such as ci-*)');
    await page.keyboard.type('Every board');
    await expect
      .poll(() => page.locator('[cmdk-item][data-selected="true"]').textContent())
      .toContain('Every board you hold');
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('Enter runs it; Backspace goes back, Esc cancels');
    expect(await page.locator('[cmdk-item][data-selected="true"]').textContent()).toContain(
      '3 steps on Every board you hold',
    );
    await page.keyboard.press('Enter');

    const dialog = page.getByTestId('sequence-run');
    await dialog.waitFor();
    await page
      .locator('[data-testid="sequence-run-state"][data-state="success"]')
      .waitFor({ timeout: 60_000 });
    const boards = page.getByTestId('sequence-run-board');
    expect(await boards.evaluateAll((els) => els.map((e) => e.getAttribute('data-board')).sort())).toEqual([
      'seq-a',
      'seq-b',
    ]);
    // Keyboard: the Close button has the focus; Shift+Tab back to the first board's row opens it.
    await page.locator('[data-board="seq-a"] button[aria-expanded]').focus();
    await page.keyboard.press('Enter');
    const output = page.locator('[data-board="seq-a"] [data-testid="sequence-step-output"]');
    await output.waitFor();
    expect(await output.textContent()).toMatch(/rec-25 on \S+/);
    expect(
      await page
        .locator('[data-board="seq-a"] [data-testid="sequence-run-step"]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-state'))),
    ).toEqual(['success', 'success', 'success']);
    await page.screenshot({ path: `${SHOT_DIR}/sequences-run-en.png` });
    await page.getByTestId('sequence-run-close').press('Enter');
    await dialog.waitFor({ state: 'detached' });
  });

  it('replays it from the CLI, and the console lists that run', async () => {
    const { apiKey } = await api<{ apiKey: string }>(svc, token, 'GET', '/api/apikey/get-key');
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [path.join(ROOT, 'bin/bianbu.mjs'), 'seq', 'run', 'smoke e2e', 'seq-b', '--wait', '--json'],
        {
          env: {
            ...process.env,
            BIANBU_URL: svc.url,
            BIANBU_API_KEY: apiKey,
            BIANBU_CLI_CONFIG: path.join(ROOT, 'tmp-e2e-seq-cli.json'),
          },
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(out.code, out.stderr).toBe(0);
    const run = JSON.parse(out.stdout) as {
      runId: string;
      boards: { serverName: string; steps: { output: string }[] }[];
    };
    expect(run.boards.map((b) => b.serverName)).toEqual(['seq-b']);
    expect(run.boards[0].steps[0].output).toContain('rec-25');

    await console_.goto('/mainboard');
    await console_.runFromPalette('Sequences', 'sequences.open');
    const dialog = page.getByTestId('sequences-dialog');
    await dialog.waitFor();
    await dialog.locator('[data-sequence="smoke e2e"]').waitFor();
    // Two runs of it now, the CLI's first.
    await expect.poll(() => dialog.getByText('smoke e2e', { exact: true }).count()).toBeGreaterThanOrEqual(3);
    await page.screenshot({ path: `${SHOT_DIR}/sequences-list-en.png` });
  });

  it('asks for the parameters of a sequence that has some, checks them, and runs with them', async () => {
    await api(svc, token, 'POST', '/api/sequence/save', {
      name: 'greet',
      source:
        'params:\n  word: {}\n  times: { default: 2 }\nsteps:\n  - exec: for i in $(seq ${times}); do echo say-${word}; done\n',
      groupName: null,
    });
    await console_.goto('/mainboard');
    await console_.runFromPaletteAsking('Run a sequence', 'sequences.run');
    await page.keyboard.type('greet');
    await expect
      .poll(() => page.locator('[cmdk-item][data-selected="true"]').textContent())
      .toContain('greet');
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('Parameters? (name=value, separated by spaces)');
    // The defaults are offered; `word` has none, so they alone are refused with the reason.
    expect(await page.locator('[cmdk-item][data-selected="true"]').textContent()).toContain('times=2');
    await page.keyboard.press('Enter');
    await page.getByText('Give a value for word').waitFor();
    await page.keyboard.type('word=hello times=3');
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('On which boards? (a name, or a pattern such as ci-*)');
    await page.keyboard.type('seq-b');
    await expect
      .poll(() => page.locator('[cmdk-item][data-selected="true"]').textContent())
      .toContain('seq-b');
    await page.keyboard.press('Enter');
    await expect.poll(asked).toBe('Enter runs it; Backspace goes back, Esc cancels');
    await page.keyboard.press('Enter');
    await page
      .locator('[data-testid="sequence-run-state"][data-state="success"]')
      .waitFor({ timeout: 60_000 });
    await page.locator('[data-board="seq-b"] button[aria-expanded]').focus();
    await page.keyboard.press('Enter');
    expect(
      await page.locator('[data-board="seq-b"] [data-testid="sequence-step-output"]').textContent(),
    ).toBe('say-hello\nsay-hello\nsay-hello\n');
    await page.keyboard.press('Escape');
  });

  it('names the line of a problem when a file is saved from the dialog, and saves nothing', async () => {
    await console_.goto('/mainboard');
    await console_.runFromPalette('Sequences', 'sequences.open');
    const dialog = page.getByTestId('sequences-dialog');
    await dialog.waitFor();
    await page.getByTestId('sequence-name').fill('broken');
    await page.getByTestId('sequence-source').fill('steps:\n  - exec: ls\n  - frobnicate: 3\n');
    await page.getByTestId('sequence-save').click();
    expect(await page.getByTestId('sequence-problem').textContent()).toMatch(
      /^Line 3, column \d+: a step needs one of/,
    );
    const list = await api<{ items: { name: string }[] }>(svc, token, 'GET', '/api/sequence/list');
    expect(list.items.map((s) => s.name)).not.toContain('broken');
  });
});
