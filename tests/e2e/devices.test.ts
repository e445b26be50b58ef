// The device lifecycle in Chromium against the real service and its local board lab: sign in with a
// password, apply for a board on /riscvhouse, see it on /mainboard, rename and renew it, Start it into
// /workbench, run a command in its shell, and unlock it. The service is checked through its own API
// after each step, so a page that merely looks right cannot pass.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, callApi, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { signedInContext } from './helpers/context.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { ApplyPage, MainboardPage } from './pages/DevicePages.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

interface Lease {
  deviceId: string;
  serverName: string;
  model: string;
  endsAt: string;
}

/** A model only one board has, so a second apply for it finds none free. */
const SOLO_MODEL = 'e2e single board';
const ISA = 'rv64imafdch_zicntr_zicsr_zifencei_zihintpause_zihpm_zca_zcd_zba_zbb_zbc_zbs_sstc';

interface AdminBoard {
  deviceId: string;
  state: string;
  attributes: Record<string, string | number | boolean>;
}

async function myLeases(svc: Service, token: string): Promise<Lease[]> {
  const res = await fetch(`${svc.url}/api/device/fetch-request-device`, {
    headers: { Authorization: token },
  });
  const body = (await res.json()) as { code: number; data: { items: Lease[] } };
  expect(body.code).toBe(20000);
  return body.data.items;
}

describe.skipIf(SKIP_E2E)('device lifecycle in the console', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let token: string;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    // The default lab's sandbox boards share one model: one board gets a model of its own.
    await callApi(svc.url, token, '/api/admin/boards/change', { deviceId: 'board-4', model: SOLO_MODEL });
  });

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('signs in, applies for a board, renames, renews, starts it into the workbench, runs a command and unlocks it', async () => {
    ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript(forceDomRenderer);
    page = await ctx.newPage();
    const console_ = new ConsolePage(page, svc.url);

    // Sign in with the password form; the console lands on /mainboard.
    await console_.goto('/login');
    await page.locator('#login-username').fill('admin');
    await page.locator('#login-password').fill(ADMIN_PASSWORD);
    await page.getByTestId('password-form').getByRole('button').last().click();
    await console_.waitForPath('/mainboard');
    await console_.waitForTitle('Mainboard - Bianbu Cloud').catch(() => {});
    const main = new MainboardPage(page);
    await page.getByText('You hold no boards yet').waitFor();

    // Apply New → /riscvhouse. Without accepting the terms nothing is requested.
    await page.getByTestId('apply-new').click();
    await console_.waitForPath('/riscvhouse');
    const apply = new ApplyPage(page);
    await page.getByText('I have read and agree to').waitFor();
    const models = await apply.attributeValues('model');
    expect(models.length).toBeGreaterThan(1);
    expect(models).toContain(SOLO_MODEL);
    const model = SOLO_MODEL;
    await apply.getStarted();
    await page.getByText('Accept the terms to continue').waitFor();
    expect(await myLeases(svc, token)).toHaveLength(0);

    await apply.agree();
    await apply.chooseDuration('7d');
    await apply.chooseAttribute('model', model);
    await apply.name('e2e-board');
    await apply.getStarted();
    await console_.waitForPath('/mainboard');
    const row = await main.waitForRow('e2e-board');
    expect(await row.getAttribute('aria-selected')).toBe('true');
    await row.getByTestId('new-badge').waitFor();
    let leases = await myLeases(svc, token);
    expect(leases).toHaveLength(1);
    expect(leases[0].model).toBe(model);
    const hoursLeft = (Date.parse(leases[0].endsAt) - Date.now()) / 3_600_000;
    expect(hoursLeft).toBeGreaterThan(7 * 24 - 1);
    expect(hoursLeft).toBeLessThan(7 * 24 + 1);
    expect(await row.getByTestId('time-left').textContent()).toMatch(/^6d 23h|^7d 0h/);

    // The same model again: none is free, and the page says when the next one frees.
    await page.getByTestId('apply-new').click();
    await console_.waitForPath('/riscvhouse');
    await apply.agree();
    await apply.chooseAttribute('model', model);
    await apply.name('second');
    await apply.getStarted();
    await apply.noneFree().waitFor();
    expect(await apply.noneFree().textContent()).toMatch(/The next one frees .*in 7 days/);
    expect(await myLeases(svc, token)).toHaveLength(1);
    await page.getByRole('button', { name: 'Back to your boards' }).click();
    await console_.waitForPath('/mainboard');

    // Rename in place (F2, type, Enter).
    await main.waitForRow('e2e-board');
    await main.rename('e2e-board', 'kernel-lab');
    leases = await myLeases(svc, token);
    expect(leases.map((l) => l.serverName)).toEqual(['kernel-lab']);

    // Renew by 48 hours from the current end.
    const before = Date.parse(leases[0].endsAt);
    const endsText = await main.endsAtText('kernel-lab');
    await main.renewBy('kernel-lab', /Extend by 48 hours/);
    await page.waitForFunction(
      ([n, old]) => document.querySelector(`[data-name="${n}"] [data-testid="ends-at"]`)?.textContent !== old,
      ['kernel-lab', endsText] as const,
    );
    leases = await myLeases(svc, token);
    const movedHours = (Date.parse(leases[0].endsAt) - before) / 3_600_000;
    // The dialog works in minutes: the new end is 48 hours later, give or take the minute it rounds to.
    expect(movedHours).toBeGreaterThan(47.9);
    expect(movedHours).toBeLessThan(48.1);

    // Start → /workbench with the apply kept in the applyInfo cookie; a shell opens and runs a command.
    await main.start('kernel-lab');
    const cookie = (await ctx.cookies()).find((c) => c.name === 'applyInfo');
    expect(cookie).toBeDefined();
    const info = JSON.parse(decodeURIComponent(cookie?.value ?? '{}')) as {
      applyId: string;
      deviceId: string;
      deviceRow?: { deviceId: string };
    };
    expect(info.deviceId).toBe(leases[0].deviceId);
    // The cookie is readable by script, so it carries ids only: the board's row stays in memory.
    expect(info.deviceRow).toBeUndefined();
    expect(Object.keys(info).filter((k) => !['applyId', 'deviceId', 'serverName'].includes(k))).toEqual([]);
    expect(info.applyId).toMatch(/\S/);

    const wb = new WorkbenchPage(page);
    await wb.ready();
    expect(await wb.boardName().textContent()).toBe('kernel-lab');
    await wb.waitForLiveTerminals(1);
    await wb.run(0, 'echo "sum=$((40+2))"', 'sum=42');
    await page.getByTestId('chart-cpu-mem').waitFor();

    // Back on /mainboard: unlock (confirm) and the board is released.
    await page.getByRole('link', { name: 'Your boards' }).click();
    await console_.waitForPath('/mainboard');
    await main.waitForRow('kernel-lab');
    await main.unlock('kernel-lab');
    await page.getByText('You hold no boards yet').waitFor();
    expect(await myLeases(svc, token)).toHaveLength(0);
    // The apply ended with the lease: the workbench says so instead of showing a dead board.
    await console_.goto('/workbench');
    await page.getByText('No board is open').or(page.getByTestId('workbench-ended')).waitFor();
  });

  it('shows every label of the sidebar whole, in Chinese, English and Japanese', async () => {
    // The sidebar is 180 px wide (spec); a label cut off to "Documentat…" hides what the item is.
    const cut: string[] = [];
    for (const lang of ['zh', 'en', 'ja']) {
      const c = await signedInContext(browser, token, { cookies: { lang } });
      try {
        const p = await c.newPage();
        await new ConsolePage(p, svc.url).goto('/dashboard/dashboard');
        await p.getByTestId('exit-layout').waitFor();
        const labels = await p.evaluate(() =>
          [...document.querySelectorAll('aside nav a span, [data-testid="exit-layout"] span')].map((el) => ({
            text: el.textContent ?? '',
            cut: el.scrollWidth > el.clientWidth,
          })),
        );
        expect(labels.length).toBeGreaterThanOrEqual(4);
        cut.push(...labels.filter((l) => l.cut).map((l) => `${lang}: ${l.text}`));
      } finally {
        await c.close();
      }
    }
    expect(cut).toEqual([]);
  });

  it('shows what a board is on /mainboard and in the workbench header: a sandbox as a sandbox, its kernel and image as text', async () => {
    // A riscv64 board's machine fills these as it boots; a sandbox board is given them here (no QEMU in
    // tests) and must still read as the sandbox it is.
    const { items } = await callApi<{ items: AdminBoard[] }>(svc.url, token, '/api/admin/boards');
    const board = items.find((b) => b.deviceId === 'board-3');
    expect(board?.state).toBe('idle');
    const arch = String(board?.attributes.arch);
    expect(board?.attributes.kind).toBe('sandbox');
    await callApi(svc.url, token, '/api/admin/boards/change', {
      deviceId: 'board-3',
      attributes: {
        ...board?.attributes,
        isa: ISA,
        kernel: '6.12.117+deb13-riscv64',
        os: 'Debian GNU/Linux 13 (trixie)',
        image: 'debian-trixie-riscv64-developer',
      },
    });
    await callApi(svc.url, token, '/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
      filterReq: { name: 'board-3' },
      serverName: 'facts-lab',
    });

    for (const [lang, sandboxWord] of [
      ['en', 'sandbox'],
      ['zh', '沙箱'],
    ]) {
      const c = await signedInContext(browser, token, { cookies: { lang } });
      try {
        const p = await c.newPage();
        await new ConsolePage(p, svc.url).goto('/mainboard');
        const main = new MainboardPage(p);
        const row = await main.waitForRow('facts-lab');
        const badge = row.getByTestId('board-arch');
        expect(await badge.textContent()).toBe(`${arch} ${sandboxWord}`);
        expect(await badge.getAttribute('data-sandbox')).toBe('true');
        // The ISA string is long: it is in the badge's tooltip, after what the board is.
        const title = (await badge.getAttribute('title')) ?? '';
        expect(title).toContain(ISA);
        expect(title).not.toMatch(/^Architecture/);
        expect(await row.getByTestId('board-kernel').textContent()).toBe('6.12.117+deb13-riscv64');
        expect(await row.getByTestId('board-image').textContent()).toBe('debian-trixie-riscv64-developer');
        expect(await row.getByTestId('board-os').textContent()).toBe('Debian GNU/Linux 13 (trixie)');

        await main.start('facts-lab');
        const header = p.getByTestId('workbench-header');
        await header.getByTestId('board-facts').waitFor();
        expect(await header.getByTestId('board-arch').textContent()).toBe(`${arch} ${sandboxWord}`);
        expect(await header.getByTestId('board-kernel').textContent()).toBe('6.12.117+deb13-riscv64');
        // One line in the header: the image stands for the OS, which is in its tooltip.
        expect(await header.getByTestId('board-image').getAttribute('title')).toContain(
          'Debian GNU/Linux 13 (trixie)',
        );
        expect(await header.getByTestId('board-os').count()).toBe(0);
      } finally {
        await c.close();
      }
    }
    await callApi(svc.url, token, '/api/device/unlock-request-device', {
      deviceId: 'board-3',
      serverName: 'facts-lab',
    });
  });
});
