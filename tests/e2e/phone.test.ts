// The console on a phone (390×844, touch only) against the real service: sign in, apply for a board and
// start it, then the workbench as one pane at a time under tabs, the palette from the top bar's touch
// button, a shell driven by the soft keyboard and the on-screen key row (Ctrl then C interrupts a
// sleep, ↑ recalls history; the row sits under the terminal, above the soft keyboard, scrolls with a
// visible "more keys" arrow, and every one of its keys sends its bytes), an ended shell restarted by a
// tap on its banner, the file tree in its own tab with finger-sized rows where one tap opens a file, no
// desktop key hints anywhere, and the board's name readable on /mainboard. Every press is a tap; a
// listener counts pointer events of a mouse, and there must be none.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySequence, type RowKey, typedSequence } from '#web/workbench/key-row.ts';
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
    // No keyboard on a phone: the palette's key hints ("↑↓ move", "Ctrl K", "Esc") are not shown.
    expect(
      await page.locator('[cmdk-root] kbd').evaluateAll((ks) => ks.filter((k) => k.checkVisibility()).length),
    ).toBe(0);
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
    // (the row re-renders from its store a moment after the tap)
    try {
      await expect.poll(() => ctrl.getAttribute('aria-pressed'), { timeout: 3_000 }).toBe('true');
    } catch (err) {
      // Seen once in CI, never here: the tap left Ctrl off. Say what the row and the page looked like.
      const state = await page.evaluate(() => {
        const key = document.querySelector<HTMLElement>('[data-testid="key-row"] [data-key="ctrl"]');
        const r = key?.getBoundingClientRect();
        const hit = r ? document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) : null;
        const pressed = [...document.querySelectorAll('[data-testid="key-row"] [aria-pressed="true"]')];
        return JSON.stringify({
          ctrlBox: r && [r.x, r.y, r.width, r.height].map(Math.round),
          atItsCentre:
            hit &&
            `${hit.tagName} ${hit.getAttribute('data-key') ?? hit.getAttribute('data-testid') ?? hit.className}`,
          pressed: pressed.map((p) => p.getAttribute('data-key')),
          rowScroll: document.querySelector('[data-testid="key-row"]')?.scrollLeft,
          focus: document.activeElement?.className,
          viewport: [innerWidth, innerHeight, visualViewport?.height],
        });
      });
      throw new Error(`Ctrl not armed by its tap (${(err as Error).message.split('\n')[0]}): ${state}`);
    }
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

    // The key row sits under the terminal at the bottom of the page (the page shrinks for the soft
    // keyboard, so it stays just above it), each key a finger wide.
    expect(await page.locator('meta[name="viewport"]').getAttribute('content')).toContain(
      'interactive-widget=resizes-content',
    );
    const bar = await page.getByTestId('key-row-bar').boundingBox();
    const termBox = await wb.terminals().first().boundingBox();
    expect(bar && termBox).toBeTruthy();
    expect(bar!.y).toBeGreaterThanOrEqual(termBox!.y + termBox!.height - 1);
    expect(bar!.y + bar!.height).toBeGreaterThan(PHONE.height - 4);
    expect(bar!.y + bar!.height).toBeLessThanOrEqual(PHONE.height + 1);
    const keys = await page.locator('[data-testid="key-row"] [data-key]').evaluateAll((els) =>
      els.map((e) => ({
        key: (e as HTMLElement).dataset.key!,
        w: e.getBoundingClientRect().width,
        h: e.getBoundingClientRect().height,
      })),
    );
    expect(keys.map((k) => k.key)).toEqual([
      'esc',
      'tab',
      'ctrl',
      'alt',
      'left',
      'up',
      'down',
      'right',
      '|',
      '~',
      '/',
      '-',
      'home',
      'end',
      'pgup',
      'pgdn',
    ]);
    for (const k of keys) {
      expect(k.w, k.key).toBeGreaterThanOrEqual(44);
      expect(k.h, k.key).toBeGreaterThanOrEqual(44);
    }
    // Wider than the phone: the last keys are out of sight, and an arrow says there are more.
    const offRight = async () => ((await wb.rowKey('pgdn').boundingBox())?.x ?? 0) >= PHONE.width;
    expect(await offRight()).toBe(true);
    expect(await page.getByTestId('key-row-bar').getAttribute('data-more-after')).toBe('yes');
    const more = page.getByTestId('key-row-more');
    await more.waitFor();
    const moreBox = await more.boundingBox();
    expect(moreBox!.width).toBeGreaterThanOrEqual(44);
    expect(moreBox!.x + moreBox!.width).toBeLessThanOrEqual(PHONE.width + 1);
    await page.screenshot({ path: path.join(SHOTS, 'phone-key-row.png') });
    // Each tap of the arrow brings the next keys in, until the last one shows and the arrow goes.
    const scrolled = () => page.getByTestId('key-row').evaluate((r) => r.scrollLeft);
    for (
      let i = 0;
      i < 4 && (await page.getByTestId('key-row-bar').getAttribute('data-more-after')) === 'yes';
      i++
    ) {
      const from = await scrolled();
      await more.tap();
      await page.waitForFunction(
        (f) => (document.querySelector('[data-testid="key-row"]')?.scrollLeft ?? 0) > f,
        from,
      );
      await page.waitForTimeout(400); // the smooth scroll settles
    }
    await page.locator('[data-testid="key-row-bar"][data-more-after="no"]').waitFor();
    expect(
      await wb.rowKey('pgdn').evaluate((k) => k.getBoundingClientRect().right <= window.innerWidth),
    ).toBe(true);
    await page.getByTestId('key-row-back').waitFor();
    // Still focused on the terminal: the keyboard stays up.
    expect(
      await page.evaluate(() => document.activeElement?.classList.contains('xterm-helper-textarea')),
    ).toBe(true);

    // Every key of the row, tapped into a program that prints each byte it reads: the bytes a terminal
    // sends for it (Ctrl and Alt as they apply to the next key).
    await wb.runByTouch(
      0,
      `while IFS= read -rsN1 c; do [ "$c" = q ] && break; printf '<%02x>' "'$c"; done; echo; echo "read-$((40+2))"`,
      'while IFS=',
    );
    const taps: { tap: string[]; sends: string }[] = [];
    const none = { ctrl: false, alt: false };
    for (const k of keys.map((x) => x.key)) {
      if (k === 'ctrl')
        taps.push({ tap: ['ctrl', '/'], sends: typedSequence('/', { ctrl: true, alt: false }) });
      else if (k === 'alt')
        taps.push({ tap: ['alt', '-'], sends: typedSequence('-', { ctrl: false, alt: true }) });
      else if (k.length === 1) taps.push({ tap: [k], sends: typedSequence(k, none) });
      else taps.push({ tap: [k], sends: keySequence(k as RowKey, none) });
    }
    for (const t of taps) for (const k of t.tap) await wb.rowKey(k).tap();
    await page.keyboard.insertText('q');
    await wb.waitForText(0, 'read-42', 10_000);
    const hex = (s: string) =>
      [...s].map((c) => `<${c.charCodeAt(0).toString(16).padStart(2, '0')}>`).join('');
    // (the rows wrap anywhere: whitespace out first)
    const printed = /((?:<[0-9a-f]{2}>)+)read-42/.exec((await wb.terminalText(0)).replace(/\s+/g, ''))?.[1];
    expect(printed).toBe(taps.map((t) => hex(t.sends)).join(''));

    // An ended shell: its banner is a button, and a tap starts a new shell in its place.
    await wb.runByTouch(0, 'exit', 'exit');
    const banner = page.locator(
      '[data-testid="shell-area"] [data-tab-id]:not(.invisible) [data-testid="terminal-banner"]',
    );
    await banner.waitFor();
    expect(await banner.evaluate((b) => b.tagName)).toBe('BUTTON');
    expect(await banner.textContent()).toContain('tap here');
    expect((await banner.boundingBox())!.height).toBeGreaterThanOrEqual(44);
    // The message the console wrote into the terminal follows a language switch, in place.
    const said = async () => (await banner.locator('[role="status"]').textContent()) ?? '';
    const flat = async () => (await wb.terminalText(0)).replace(/\s+/g, '');
    const english = await said();
    expect(await flat()).toContain(english.replace(/\s+/g, ''));
    const pickLanguage = async (lng: string) => {
      await page.getByTestId('language-menu').first().tap();
      await page.locator(`[data-lang="${lng}"]`).tap();
      await page.waitForFunction((l) => document.documentElement.lang === l, lng);
    };
    await pickLanguage('zh');
    await expect.poll(said).not.toBe(english);
    const chinese = (await said()).replace(/\s+/g, '');
    await expect.poll(flat).toContain(chinese);
    expect(await flat()).not.toContain(english.replace(/\s+/g, ''));
    expect(await wb.terminals().first().locator('.xterm-helper-textarea').getAttribute('aria-label')).toBe(
      '终端输入',
    );
    await pickLanguage('en');
    await expect.poll(flat).toContain(english.replace(/\s+/g, ''));
    expect((await flat()).split(english.replace(/\s+/g, '')).length - 1).toBe(1);
    expect(await flat()).not.toContain(chinese);
    await banner.tap();
    await wb.waitForLiveTerminals(1);
    await wb.runByTouch(
      0,
      'echo "again-$((3*3))" > /tap-me.txt; echo "made-$((2*2)) k=$(uname -r)=k"',
      'made-4',
    );
    const kernel = /k=(\S+)=k/.exec(await wb.terminalText(0))?.[1];
    expect(kernel).toBeTruthy();

    // The file tree in its own tab, the whole width of the phone.
    await wb.showPhonePane('files');
    expect(await wb.visiblePhonePanes()).toEqual(['files']);
    const tree = new FilePanes(page).tree();
    await tree.locator('[role="treeitem"]').first().waitFor();
    expect((await tree.boundingBox())?.width).toBeGreaterThan(PHONE.width - 20);
    await page.screenshot({ path: path.join(SHOTS, 'phone-files.png') });
    // Every button on the page is a finger tall, icon buttons as wide.
    const smallButtons = () =>
      page.locator('button').evaluateAll((bs) =>
        bs
          .filter((b) => b.checkVisibility())
          .map((b) => ({ b, r: b.getBoundingClientRect() }))
          .filter(
            ({ b, r }) =>
              r.width > 2 && (r.height < 43.5 || (r.width < 43.5 && !(b.textContent ?? '').trim())),
          )
          .map(({ b, r }) => `${b.getAttribute('aria-label') ?? b.textContent} ${r.width}x${r.height}`),
      );
    expect(await smallButtons()).toEqual([]);
    // Finger-sized rows, and one tap opens a file (in the editor's tab).
    const fileRow = tree.locator('[role="treeitem"][data-path="/tap-me.txt"]');
    if (!(await fileRow.count())) await page.getByRole('button', { name: 'Refresh' }).tap();
    await fileRow.waitFor();
    expect((await fileRow.boundingBox())!.height).toBeGreaterThanOrEqual(44);
    await fileRow.tap();
    await page.locator('[data-testid="phone-pane"][data-phone-pane="editor"]:not([hidden])').waitFor();
    const editor = page.locator('[data-testid="editor-host"][data-path="/tap-me.txt"] .cm-content');
    await editor.waitFor();
    await page.waitForFunction(() =>
      document
        .querySelector('[data-testid="editor-host"][data-path="/tap-me.txt"] .cm-content')
        ?.textContent?.includes('again-9'),
    );
    await page.screenshot({ path: path.join(SHOTS, 'phone-editor.png') });

    // Back on the shells, the terminal is fitted to the pane again and still live.
    await wb.showPhonePane('shells');
    await wb.waitForLiveTerminals(1);
    await wb.runByTouch(0, 'echo "c$((1+1))ls=$(tput cols)"', 'c2ls=');
    const cols = Number(/c2ls=(\d+)/.exec(await wb.terminalText(0))?.[1]);
    expect(cols).toBeGreaterThan(30);

    // The shipped board-info plugin from the palette: what the board says, worded, in a dialog.
    await console_.openPaletteByTouch('board info');
    await console_.tapPaletteCommand('plugin.boardInfo');
    await page.locator('[data-testid="plugin-answer"][data-state="ok"]').waitFor({ timeout: 30_000 });
    expect(await page.locator('[data-fact="kernel"] dd').textContent()).toBe(kernel);
    expect(await page.locator('[data-fact="kernel"] dt').textContent()).toBe('Kernel');
    expect(await page.locator('[data-fact="memoryTotalBytes"] dd').textContent()).toMatch(/ GiB$/);
    await page.screenshot({ path: path.join(SHOTS, 'phone-board-info.png') });
    await page.getByTestId('plugin-close').tap();
    await page.getByTestId('plugin-dialog').waitFor({ state: 'detached' });

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
    // No desktop key hints on a touch screen.
    expect(
      await page
        .locator('[data-key-hints], kbd')
        .evaluateAll((ks) => ks.filter((k) => k.checkVisibility()).length),
    ).toBe(0);

    expect(await page.evaluate(() => sessionStorage.getItem('e2e.mousePointers') ?? '0')).toBe('0');
  });
});
