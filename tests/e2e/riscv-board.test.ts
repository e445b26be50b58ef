// A riscv64 board in Chromium against the real service: the default lab's riscv-1, a QEMU `virt`
// machine booting Debian's riscv64 kernel from its developer image. As a user would: sign in, apply
// for a board narrowed to arch riscv64, start it into the workbench, see riscv64 in the header, run
// `uname -m` and read the ISA in a shell, open the serial console and find the machine's own boot in
// it (OpenSBI, then Linux), then reset the power from the header and watch a second OpenSBI banner
// come. Then its own screen in the desktop pane: the console login on tty1, the same pixels as QEMU's
// VNC server gives a client straight on it, and a login typed there. The board boots under emulation
// (40-180 s), so the waits here are long on purpose.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { grab, litPixels, qemuUnder, straightScreen } from '../bench/rfb-screen.ts';
import { ADMIN_PASSWORD } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { ApplyPage, MainboardPage } from './pages/DevicePages.ts';
import { FilePanes } from './pages/FilePanes.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

const SHOTS = path.join(import.meta.dirname, 'screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

/** Disk write, OpenSBI, U-Boot, the kernel and the agent: a first boot under TCG. */
const BOOT_MS = 240_000;
/**
 * The power reset's boot to tty1's login, as the screen shows it: on a host busy with other boards it
 * took over 240 s (the kernel clock at 65 s in systemd, 244 s after the reset).
 */
const REBOOT_MS = 480_000;

describe.skipIf(SKIP_E2E)('a riscv64 board in the workbench', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    svc = await startService({
      BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD,
      // The e2e project turns riscv64 boards off; this suite is about one.
      BIANBU_RISCV_BOARDS: '1',
      BIANBU_BOARD_IMAGES: process.env.BIANBU_BOARD_IMAGES ?? '/var/cache/bianbu/board-images',
    });
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript(forceDomRenderer);
    page = await ctx.newPage();
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  /**
   * Waits for a row of terminal `index` that matches `line` as a whole (trimmed): the command's own
   * output, not the command line typed or a login banner that mentions the same word.
   */
  const waitForLine = async (wb: WorkbenchPage, index: number, line: RegExp, timeout = 30_000) => {
    const handle = await wb.terminals().nth(index).elementHandle();
    await page.waitForFunction(
      ({ el, src, flags }) => {
        const re = new RegExp(src, flags);
        return [...(el as HTMLElement).querySelectorAll('.xterm-rows > div')].some((row) =>
          re.test((row.textContent ?? '').replace(/\u00a0/g, ' ').trim()),
        );
      },
      { el: handle, src: line.source, flags: line.flags },
      { timeout },
    );
  };

  /** The find bar's count of the open search ("2 of 2", "1 result"), read until it says `want`. */
  const waitForCount = async (want: RegExp, timeout: number) => {
    await page.waitForFunction(
      (src) =>
        new RegExp(src).test(
          document.querySelector('[data-testid="terminal-search-count"]')?.textContent?.trim() ?? '',
        ),
      want.source,
      { timeout },
    );
  };

  /** Opens the find bar of the focused terminal and waits for the keyboard to be in it. */
  const openSearch = async () => {
    await page.keyboard.press('Control+Alt+KeyF');
    await page.waitForFunction(
      () => document.activeElement?.getAttribute('data-testid') === 'terminal-search-input',
    );
  };

  /** Replaces the find bar's query (it has the focus) and waits for its count. */
  const searchFor = async (query: string, want: RegExp, timeout = 10_000) => {
    await page.keyboard.press('Control+A');
    await page.keyboard.type(query);
    await waitForCount(want, timeout);
  };

  it('leases riscv-1 by its arch, runs riscv64 commands in a shell, shows its boot on the serial console and a second one after a power reset', async () => {
    const begun = Date.now();
    // Where the walk is and how long it took to get there: a slow boot is told apart from a stuck one.
    const step = (what: string) => console.log(`[${Math.round((Date.now() - begun) / 1000)} s] ${what}`);
    onTestFailed(async () => {
      await page.screenshot({ path: path.join(SHOTS, 'riscv-board-failed.png') }).catch(() => {});
    });
    const console_ = new ConsolePage(page, svc.url);
    const wb = new WorkbenchPage(page);

    // Sign in with the password form.
    await console_.goto('/login');
    await page.locator('#login-username').fill('admin');
    await page.locator('#login-password').fill(ADMIN_PASSWORD);
    await page.locator('#login-password').press('Enter');
    await console_.waitForPath('/mainboard');

    step('signed in');
    // Apply for a board, narrowed to what the catalogue calls riscv64: the lab has one, riscv-1.
    await page.getByTestId('apply-new').click();
    await console_.waitForPath('/riscvhouse');
    const apply = new ApplyPage(page);
    expect(await apply.attributeValues('arch')).toContain('riscv64');
    await apply.agree();
    await apply.chooseDuration('48h');
    await apply.chooseAttribute('arch', 'riscv64');
    await apply.name('riscv-lab');
    await apply.getStarted();
    await console_.waitForPath('/mainboard');
    const main = new MainboardPage(page);
    const row = await main.waitForRow('riscv-lab');
    expect(await row.textContent()).toContain('riscv-1');
    expect(await row.textContent()).toContain('riscv64');

    step('leased riscv-lab');
    // Start it into the workbench: the header names it and says what it is.
    await main.start('riscv-lab');
    await wb.ready();
    const header = page.getByTestId('workbench-header');
    expect(await wb.boardName().textContent()).toBe('riscv-lab');
    await header.getByTestId('board-arch').waitFor();
    expect((await header.getByTestId('board-arch').textContent())?.trim()).toBe('riscv64');

    step('workbench open, the header says riscv64');
    // The board is still booting, so the first shell waits for its agent. Meanwhile the serial console,
    // from the shell area's button, shows the machine's ttyS0 from power-on: OpenSBI, U-Boot, then
    // Debian's kernel and its getty.
    await page.getByTestId('new-serial').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="shell-tab"]').length === 2);
    expect(await page.getByTestId('shell-tab').nth(1).textContent()).toMatch(/Serial 1/);
    await wb.waitForLiveTerminals(1, 30_000);
    const serial = await wb.terminals().nth(0).getAttribute('data-shell-id');
    await wb.focusTerminal(0);
    await openSearch();
    step('serial console live');
    // The boot scrolls off the screen as it goes: the scrollback search finds each stage. (A search
    // also scrolls the view up to its match, so the prompt is brought back below by a key.)
    await searchFor('OpenSBI v', /^(1 of 1|1 result)$/, BOOT_MS);
    step('OpenSBI');
    await searchFor('Linux version', /^(1 of 1|1 result)$/, BOOT_MS);
    step('Linux version');
    // Debian's getty on ttyS0 ends the boot (root has an empty password there).
    await searchFor('riscv-board login:', /^(\d+ of \d+|\d+ results?)$/, BOOT_MS);
    const booted = Date.now();
    step("the getty's login: prompt");
    await page.keyboard.press('Escape');

    // Back to the first shell: it opened by itself once the agent answered.
    await page.getByTestId('shell-tab').nth(0).click();
    await wb.waitForLiveTerminals(1, 120_000);
    step('the first shell is live');
    const loginShell = await wb.terminals().nth(0).getAttribute('data-shell-id');
    expect(loginShell).not.toBe(serial);
    await wb.focusTerminal(0);
    await page.keyboard.type('uname -m');
    await page.keyboard.press('Enter');
    await waitForLine(wb, 0, /^riscv64$/);
    await page.keyboard.type('cat /proc/cpuinfo | grep -m1 isa');
    await page.keyboard.press('Enter');
    await waitForLine(wb, 0, /^isa\s*:\s*rv64imafdc/);
    step('uname -m and the ISA read in the shell');
    // The file tree, refused while the board booted, lists its root by itself now.
    await new FilePanes(page).row('/etc').waitFor({ timeout: 30_000 });
    await page.screenshot({ path: path.join(SHOTS, 'riscv-board-shell.png') });

    // The serial console again: Enter at the getty asks it for a new prompt, at the bottom.
    await page.getByTestId('shell-tab').nth(1).click();
    await page.waitForFunction(
      (id) => !!document.querySelector(`[data-tab-id]:not(.invisible) [data-shell-id="${id}"]`),
      serial,
    );
    await wb.focusTerminal(0);
    await page.keyboard.press('Enter');
    await waitForLine(wb, 0, /riscv-board login:$/);
    await page.screenshot({ path: path.join(SHOTS, 'riscv-board-serial.png') });
    step('the serial console shot');

    // Power reset from the header's button, confirmed in its dialog, with the search for the banner
    // open: its count moves as the machine starts again.
    await openSearch();
    await searchFor('OpenSBI v', /^(1 of 1|1 result)$/);
    await header.getByTestId('wb-reset').click();
    const dialog = page.getByTestId('reset-dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Reset the power of riscv-lab?');
    await dialog.getByTestId('reset-confirm').click();
    await dialog.waitFor({ state: 'detached' });
    await waitForCount(/^(\d of 2|2 results)$/, 60_000);
    step('a second OpenSBI banner');
    // The serial console stayed open through the reset; the login shell closed.
    expect(await wb.terminals().nth(0).getAttribute('data-status')).toBe('live');
    expect(await wb.terminals().nth(0).getAttribute('data-shell-id')).toBe(serial);
    await page.waitForFunction(
      (id) => document.querySelector(`[data-shell-id="${id}"]`)?.getAttribute('data-status') === 'closed',
      loginShell,
      { timeout: 30_000 },
    );
    await page.waitForFunction(
      () =>
        document
          .querySelector('[data-testid="workbench-header"] [data-state]')
          ?.getAttribute('data-state') === 'leased',
      null,
      { timeout: 30_000 },
    );
    // The header's facts come from the lease list, read again after the reset: what the machine
    // said of itself in its first boot (the image on its disk, the kernel from its serial console,
    // the OS from its agent, in the image's tooltip).
    await header.getByTestId('board-kernel').waitFor({ timeout: 30_000 });
    expect(await header.getByTestId('board-kernel').textContent()).toMatch(/^\d+\.\d+\S*riscv64$/);
    const image = header.getByTestId('board-image');
    expect(await image.textContent()).toBe('debian-trixie-riscv64-developer');
    expect(await image.getAttribute('title')).toMatch(/Debian GNU\/Linux/);
    // The find bar's next match is the new banner: shown, highlighted, with what follows it.
    await page.getByTestId('terminal-search-input').focus();
    const onSecond = async () =>
      (await page.getByTestId('terminal-search-count').textContent())?.trim() === '2 of 2';
    for (let i = 0; i < 2 && !(await onSecond()); i++) {
      await page.keyboard.press('Enter');
      await page.waitForTimeout(300);
    }
    await waitForCount(/^2 of 2$/, 10_000);
    await page.waitForTimeout(2000);
    await page.screenshot({ path: path.join(SHOTS, 'riscv-board-serial-reset.png') });

    console.log(
      `riscv64 board: booted to login: after ${Math.round((booted - begun) / 1000)} s, ` +
        `the whole walk ${Math.round((Date.now() - begun) / 1000)} s`,
    );
  }, 360_000);

  /**
   * The noVNC canvas against a framebuffer (B,G,R,0 bytes) fetched straight from QEMU: the mean absolute
   * difference per channel (0-255), and the canvas's lit pixels. 255 while the sizes differ.
   */
  const compareCanvas = (fb: Buffer, width: number, height: number) =>
    page.evaluate(
      ({ b64, width, height }) => {
        const c = document.querySelector('[data-testid="vnc-screen"] canvas') as HTMLCanvasElement | null;
        if (!c || c.width !== width || c.height !== height)
          return { diff: 255, lit: 0, size: c ? `${c.width}x${c.height}` : 'none' };
        const d = c.getContext('2d')!.getImageData(0, 0, width, height).data;
        const raw = atob(b64);
        let sum = 0;
        let lit = 0;
        for (let i = 0; i < width * height; i++) {
          const [r, g, b] = [d[i * 4], d[i * 4 + 1], d[i * 4 + 2]];
          sum +=
            Math.abs(r - raw.charCodeAt(i * 4 + 2)) +
            Math.abs(g - raw.charCodeAt(i * 4 + 1)) +
            Math.abs(b - raw.charCodeAt(i * 4));
          if (Math.max(r, g, b) > 96) lit++;
        }
        return { diff: sum / (width * height * 3), lit, size: `${width}x${height}` };
      },
      { b64: fb.toString('base64'), width, height },
    );

  it("shows the board's own screen in the desktop pane: its console login, pixel for pixel, and what is typed there", async () => {
    const begun = Date.now();
    const step = (what: string) => console.log(`[${Math.round((Date.now() - begun) / 1000)} s] ${what}`);
    onTestFailed(async () => {
      await page.screenshot({ path: path.join(SHOTS, 'riscv-desktop-failed.png') }).catch(() => {});
    });
    const console_ = new ConsolePage(page, svc.url);
    await console_.runFromPalette('desktop vnc', 'desktop.toggleVnc');
    await page.waitForSelector('[data-testid="vnc-pane"][data-status="connected"]', { timeout: 60_000 });
    step('desktop pane connected');
    // A client straight on QEMU's VNC server (nsenter into the machine's namespace), not the product.
    const straight = await straightScreen(qemuUnder(process.pid));
    try {
      // The board booted again after the reset above: its fbcon shows tty1's login. The prompt's row
      // (8×16 glyphs of "riscv-board login:") is lit, and the screen is past QEMU's 640×480 notice.
      const loginRow = (px: Buffer, width: number) => {
        let best = 0;
        for (let row = 0; row < 12; row++)
          best = Math.max(best, litPixels(px, 0, row * 16, 18 * 8, 16, width));
        return best;
      };
      let login = Buffer.alloc(0);
      await expect
        .poll(
          async () => {
            login = Buffer.from(await grab(straight));
            return straight.width > 640 ? loginRow(login, straight.width) : 0;
          },
          { timeout: REBOOT_MS, interval: 2000 },
        )
        .toBeGreaterThan(150);
      step(`tty1's login on QEMU's screen, ${straight.width}×${straight.height}`);
      // The canvas shows the same pixels (the cursor blinks: a few differ).
      let seen = { diff: 255, lit: 0, size: '' };
      await expect
        .poll(
          async () => {
            seen = await compareCanvas(Buffer.from(await grab(straight)), straight.width, straight.height);
            return seen.diff;
          },
          { timeout: 30_000, interval: 1000 },
        )
        .toBeLessThan(2);
      expect(seen.lit).toBeGreaterThan(500);
      step(`canvas = QEMU's framebuffer: mean difference ${seen.diff.toFixed(3)}, ${seen.lit} lit pixels`);
      await page.screenshot({ path: path.join(SHOTS, 'riscv-desktop-login.png') });

      // Typed into the canvas: root at tty1's login (an empty password on the consoles) logs in, and
      // the screen fills with the login's banner and a prompt.
      const before = seen.lit;
      const canvas = page.locator('[data-testid="vnc-screen"] canvas');
      const box = (await canvas.boundingBox())!;
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await page.keyboard.type('root', { delay: 50 });
      await page.keyboard.press('Enter');
      await expect
        .poll(
          async () => {
            seen = await compareCanvas(Buffer.from(await grab(straight)), straight.width, straight.height);
            return seen.diff < 2 ? seen.lit : 0;
          },
          { timeout: 120_000, interval: 2000 },
        )
        .toBeGreaterThan(before + 2000);
      step(`logged in on the screen: ${seen.lit} lit pixels, mean difference ${seen.diff.toFixed(3)}`);
      await page.screenshot({ path: path.join(SHOTS, 'riscv-desktop-typed.png') });

      // The pane's Type button: a console has no clipboard, so the text goes as keystrokes. `clear`
      // and Enter leave only the shell's prompt on the screen.
      await page.getByTestId('vnc-clip').fill('clear');
      await page.getByTestId('vnc-clip-type').click();
      await page.keyboard.press('Enter');
      await expect
        .poll(
          async () => {
            seen = await compareCanvas(Buffer.from(await grab(straight)), straight.width, straight.height);
            return seen.diff < 2 ? seen.lit : Number.POSITIVE_INFINITY;
          },
          { timeout: 60_000, interval: 2000 },
        )
        .toBeLessThan(1500);
      expect(seen.lit).toBeGreaterThan(100);
      step(`cleared by the Type button: ${seen.lit} lit pixels`);
    } finally {
      straight.close();
    }
  }, 660_000);

  it('saves a snapshot of the board from the palette, lists it in the Snapshots dialog and restores it', async () => {
    const console_ = new ConsolePage(page, svc.url);
    await console_.runFromPaletteAsking('snapshot save', 'snapshot.save');
    await page.keyboard.type('_bianbu_x');
    await page.keyboard.press('Enter');
    // A name of the service's own is refused where it is typed.
    await page.getByTestId('palette-ask-error').filter({ hasText: 'not starting with _bianbu_' }).waitFor();
    await page.locator('[cmdk-input]').fill('e2e-snap');
    await page.keyboard.press('Enter');
    await page
      .getByTestId('notice')
      .filter({ hasText: 'Snapshot e2e-snap saved' })
      .waitFor({ timeout: 60_000 });
    await console_.runFromPalette('snapshot list', 'snapshot.ls');
    const dialog = page.getByTestId('snapshots-dialog');
    await dialog.locator('[data-testid="snapshot-row"][data-name="e2e-snap"]').waitFor();
    expect(await dialog.getByTestId('snapshot-usage').textContent()).toMatch(/Snapshots cost/);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await console_.runFromPaletteAsking('snapshot restore', 'snapshot.restore');
    await page.locator('[cmdk-item][data-option="e2e-snap"]').waitFor();
    await page.keyboard.type('e2e-snap');
    await page.keyboard.press('Enter');
    await page
      .getByTestId('notice')
      .filter({ hasText: 'riscv-lab restored to e2e-snap' })
      .waitFor({ timeout: 120_000 });
    await page.waitForFunction(
      () =>
        document
          .querySelector('[data-testid="workbench-header"] [data-state]')
          ?.getAttribute('data-state') === 'leased',
      null,
      { timeout: 30_000 },
    );
  }, 240_000);
});
