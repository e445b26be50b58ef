// The board hosts' administration page in Chromium against the real service (no board host process):
// the administrator adds a host from the palette's "Add a board host…", sees its credential once with the
// command that runs it, the table lists it as never connected, a wrong name is refused in the dialog,
// and revoking it (a confirmation naming the consequences) shows it revoked. The service's list agrees.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOST_TOKEN_RE } from '#shared/board-hosts.ts';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { signedInContext } from './helpers/context.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';

/** Set to a folder to keep screenshots of the pages this test visits. */
const SHOTS = process.env.E2E_SHOTS;

async function shot(page: Page, name: string) {
  if (!SHOTS) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

describe.skipIf(SKIP_E2E)('administration: board hosts from the console', () => {
  let svc: Service;
  let browser: Browser;
  let token: string;
  let enCtx: BrowserContext;
  let zhCtx: BrowserContext;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    const admin = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    token = admin;
    enCtx = await signedInContext(browser, admin, { domRenderer: false });
    zhCtx = await signedInContext(browser, admin, { domRenderer: false, cookies: { lang: 'zh' } });
  }, 180_000);

  afterAll(async () => {
    await enCtx?.close();
    await zhCtx?.close();
    await browser?.close();
    await svc?.stop();
  });

  /** The service's own list (its answer envelope: { code, data }). */
  async function listed(): Promise<{ name: string; health: string }[]> {
    const r = await fetch(`${svc.url}/api/admin/hosts`, { headers: { Authorization: token } });
    const body = (await r.json()) as { code: number; data: { items: { name: string; health: string }[] } };
    expect(body.code).toBe(20000);
    return body.data.items;
  }

  it('adds a host, shows its credential once, lists it as never connected, revokes it', async () => {
    const page = await enCtx.newPage();
    const c = new ConsolePage(page, svc.url);
    await c.goto('/admin/users');
    await c.waitForApp();
    await expect
      .poll(() => page.getByTestId('sidebar').locator('nav a').allInnerTexts())
      .toContain('Board hosts');

    // "Add a board host…" from the palette: the hosts section, its dialog open, the name focused.
    await c.runFromPalette('add a board host', 'admin.host.add');
    await c.waitForPath('/admin/hosts');
    const dialog = page.getByTestId('admin-host-dialog');
    await dialog.waitFor();
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid')))
      .toBe('admin-host-name');
    // A name hostName refuses stays in the dialog, with its rule.
    await page.keyboard.type('Lab B');
    await page.keyboard.press('Enter');
    await dialog.getByRole('alert').waitFor();
    expect(await dialog.getByRole('alert').textContent()).toContain('Lowercase letters, digits and dashes');
    expect(await listed()).toEqual([]);
    await dialog.getByTestId('admin-host-name').fill('lab-b');
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });

    // The credential, once, with the exact command that runs the host against this console.
    const shown = page.getByTestId('admin-host-token-dialog');
    await shown.waitFor();
    const credential = (await shown.getByTestId('admin-host-token').textContent()) ?? '';
    expect(credential).toMatch(HOST_TOKEN_RE);
    expect(await shown.getByTestId('admin-host-command').textContent()).toBe(
      `BIANBU_SERVICE_URL=${svc.url} BIANBU_HOST_TOKEN=${credential} npm run board-host`,
    );
    expect(await shown.textContent()).toContain('it will not be shown again');
    await shot(page, 'admin-host-token');
    // Done takes the focus: Enter closes it, and nothing shows the credential again.
    await page.keyboard.press('Enter');
    await shown.waitFor({ state: 'detached' });

    const row = page.locator('[data-testid="admin-host-row"][data-host="lab-b"]');
    await row.waitFor();
    expect(await row.getAttribute('data-health')).toBe('never');
    expect(await row.getByTestId('admin-host-health').textContent()).toBe('Never connected');
    expect(await row.getByTestId('admin-host-links').textContent()).toBe('0');
    expect(await page.content()).not.toContain(credential);
    expect(await listed()).toEqual([expect.objectContaining({ name: 'lab-b', health: 'never' })]);
    await shot(page, 'admin-hosts-en');

    // The same page in Chinese.
    const zh = await zhCtx.newPage();
    await new ConsolePage(zh, svc.url).goto('/admin/hosts');
    const zhRow = zh.locator('[data-testid="admin-host-row"][data-host="lab-b"]');
    await zhRow.waitFor();
    expect(await zhRow.getByTestId('admin-host-health').textContent()).toBe('从未连接');
    await shot(zh, 'admin-hosts-zh');
    await zh.close();

    // Revoke, by the keyboard: the confirmation names what happens, and the row turns revoked.
    await row.getByTestId('admin-host-revoke').focus();
    await page.keyboard.press('Enter');
    const confirm = page.getByTestId('admin-host-revoke-dialog');
    await confirm.waitFor();
    const text = (await confirm.textContent()) ?? '';
    expect(text).toContain('links to every instance end at once');
    expect(text).toContain('go offline');
    await shot(page, 'admin-host-revoke');
    await confirm.getByRole('button', { name: 'Revoke' }).click();
    await confirm.waitFor({ state: 'detached' });
    await expect.poll(() => row.getAttribute('data-health')).toBe('revoked');
    expect(await row.getByTestId('admin-host-health').textContent()).toBe('Revoked');
    expect(await row.getByTestId('admin-host-revoke').count()).toBe(0);
    expect(await listed()).toEqual([expect.objectContaining({ name: 'lab-b', health: 'revoked' })]);
    await shot(page, 'admin-hosts-revoked');
  }, 240_000);
});
