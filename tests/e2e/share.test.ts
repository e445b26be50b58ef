// Teams in Chromium with two browser contexts (two users) against the real service and its local lab:
// the owner creates a group, adds a teammate by user id and shares a board from /share; the teammate
// sees it under "Shared with me", Starts it and types in a shell; the owner shares one of their shells
// with the group, the teammate joins it (read-only) and the owner sees their presence; the owner
// removes the teammate and the teammate's panes say why at once.
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { MainboardPage } from './pages/DevicePages.ts';
import { forceDomRenderer, WorkbenchPage } from './pages/WorkbenchPage.ts';

const MATE_PASSWORD = 'E2e-mate-Passw0rd!';

async function api(svc: Service, token: string, path: string, body: unknown) {
  const res = await fetch(`${svc.url}${path}`, {
    method: 'POST',
    headers: { Authorization: token, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await res.json()) as { code: number; message: string; data: { user: { id: string } } };
}

async function signIn(page: Page, svc: Service, username: string, password: string) {
  const c = new ConsolePage(page, svc.url);
  await c.goto('/login');
  await page.locator('#login-username').fill(username);
  await page.locator('#login-password').fill(password);
  await page.locator('#login-password').press('Enter');
  await c.waitForPath('/mainboard');
  return c;
}

describe.skipIf(SKIP_E2E)('teams: sharing a board and a shell between two users', () => {
  let svc: Service;
  let browser: Browser;
  let ownerCtx: BrowserContext;
  let mateCtx: BrowserContext;
  let mateId: string;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    const admin = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    // Two ordinary users of one organisation (the admin's users are made in the default one).
    for (const username of ['lead', 'teammate']) {
      const created = await api(svc, admin, '/api/admin/users/create', { username, password: MATE_PASSWORD });
      expect(created.code, created.message).toBe(20000);
      if (username === 'teammate') mateId = created.data.user.id;
    }
    const lead = await passwordLogin(svc.url, 'lead', MATE_PASSWORD);
    const lease = await api(svc, lead, '/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
      filterReq: {},
      serverName: 'team-board',
    });
    expect(lease.code, lease.message).toBe(20000);
    ownerCtx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    mateCtx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    for (const c of [ownerCtx, mateCtx]) {
      await c.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
      await c.addInitScript(forceDomRenderer);
    }
  }, 180_000);

  afterAll(async () => {
    await ownerCtx?.close();
    await mateCtx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('shares, starts, joins with presence, and revokes with a worded reason', async () => {
    const owner = await ownerCtx.newPage();
    const ownerConsole = await signIn(owner, svc, 'lead', MATE_PASSWORD);
    const mate = await mateCtx.newPage();
    await signIn(mate, svc, 'teammate', MATE_PASSWORD);

    // The owner: a group, the teammate by user id, the board — all from /share.
    await ownerConsole.goto('/share');
    await owner.getByTestId('group-name').fill('firmware');
    await owner.getByTestId('group-name').press('Enter');
    const group = owner.locator('[data-testid="owned-group"][data-group="firmware"]');
    await group.waitFor();
    // An unknown phone number is answered in words, never silently.
    await group.getByTestId('member-add-input').fill('13000000000');
    await group.getByTestId('member-add').click();
    await expect
      .poll(() => group.getByTestId('member-add-error').textContent())
      .toContain('No user of your organisation');
    await group.getByTestId('member-add-input').fill(mateId);
    await group.getByTestId('member-add-input').press('Enter');
    await group.locator('[data-testid="group-member"][data-user="teammate"]').waitFor();
    await group.getByTestId('board-toggle-team-board').check();
    await group.getByTestId('boards-save').click();
    await group.getByTestId('board-active-team-board').waitFor();

    // The teammate sees it on /mainboard with the owner's name, Starts it and types.
    await mate.reload();
    const row = mate.getByTestId('shared-board');
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain('lead');
    await row.getByTestId('shared-start').click();
    const mateWb = new WorkbenchPage(mate);
    await mateWb.ready();
    await mateWb.waitForLiveTerminals(1);
    await mateWb.run(0, 'echo "mate-$((6*7))"', 'mate-42');

    // The owner Starts the board too and shares their shell with the group.
    await ownerConsole.goto('/mainboard');
    const main = new MainboardPage(owner);
    await main.waitForRow('team-board');
    await main.start('team-board');
    const ownerWb = new WorkbenchPage(owner);
    await ownerWb.ready();
    await ownerWb.waitForLiveTerminals(1);
    await ownerWb.run(0, 'echo "host-$((5*5))"', 'host-25');
    await owner.getByTestId('shell-invite').first().click();
    await owner.locator('[data-testid="shell-share-bar"][data-shared="yes"]').first().waitFor();

    // The teammate joins it in a second tab and watches read-only; the owner sees them in the shell.
    const mate2 = await mateCtx.newPage();
    await new ConsolePage(mate2, svc.url).goto('/share');
    await mate2.getByTestId('join-shell').first().click();
    const joined = mate2.getByTestId('joined-shell');
    await joined.waitFor();
    await owner
      .locator('[data-testid="shell-presence"] [data-user="teammate"]')
      .first()
      .waitFor({ timeout: 15_000 });
    expect(
      await owner
        .locator('[data-testid="shell-presence"] [data-user="teammate"]')
        .first()
        .getAttribute('data-input'),
    ).toBe('no');
    await ownerWb.run(0, 'echo "seen-$((7*7))"', 'seen-49');
    await expect
      .poll(() => joined.locator('.xterm-rows').textContent(), { timeout: 15_000 })
      .toContain('seen-49');

    // The owner removes the teammate: both of the teammate's panes say why, at once.
    await ownerConsole.goto('/share');
    await owner.getByTestId('member-remove-teammate').click();
    const banner = mate.getByTestId('terminal-banner').first();
    await expect
      .poll(() => banner.textContent(), { timeout: 10_000 })
      .toContain('stopped sharing it with you');
    await expect
      .poll(() => joined.getByTestId('terminal-banner').textContent(), { timeout: 10_000 })
      .toContain('stopped sharing it with you');
  }, 240_000);
  it('creates and deletes a group from the palette, which asks for the name and checks it, and asks before deleting', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    const page = await ctx.newPage();
    const c = await signIn(page, svc, 'lead', MATE_PASSWORD);
    await c.runFromPaletteAsking('share group', 'share.create');
    const input = page.locator('[cmdk-input]');
    expect(await input.getAttribute('placeholder')).toBe('New group');
    expect(await page.getByTestId('palette-asking').textContent()).toBe('Create a share group');
    // A name over the limit is refused in words, and the palette stays open with the text.
    await page.keyboard.type('x'.repeat(65));
    await page.keyboard.press('Enter');
    expect(await page.getByTestId('palette-ask-error').textContent()).toContain('1 to 64 characters');
    await page.screenshot({ path: path.join(import.meta.dirname, 'screenshots', 'palette-asking-en.png') });
    await input.fill('bring-up');
    await page.locator('[cmdk-item][data-selected="true"]').waitFor();
    await page.keyboard.press('Enter');
    await input.waitFor({ state: 'detached' });
    await c.waitForPath('/share');
    await page.locator('[data-testid="owned-group"][data-group="bring-up"]').waitFor();
    // Delete asks; the first choice keeps it.
    await c.runFromPaletteAsking('delete group bring-up', 'share.delete.bring-up');
    expect(await input.getAttribute('placeholder')).toContain('Delete group bring-up?');
    expect(await page.locator('[cmdk-item][data-selected="true"]').getAttribute('data-option')).toBe('keep');
    await page.keyboard.press('Enter');
    await input.waitFor({ state: 'detached' });
    expect(await page.locator('[data-testid="owned-group"][data-group="bring-up"]').count()).toBe(1);
    // Backspace in the empty field goes back to the commands; then the delete is chosen by keyboard.
    await c.runFromPaletteAsking('delete group bring-up', 'share.delete.bring-up');
    await page.keyboard.press('Backspace');
    await page.getByTestId('palette-asking').waitFor({ state: 'detached' });
    await page.keyboard.type('delete group bring-up');
    await page.locator('[cmdk-item][data-selected="true"][data-command="share.delete.bring-up"]').waitFor();
    await page.keyboard.press('Enter');
    await page.getByTestId('palette-asking').waitFor();
    await page.keyboard.type('delete');
    await page.locator('[cmdk-item][data-selected="true"][data-option="delete"]').waitFor();
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="owned-group"][data-group="bring-up"]').waitFor({ state: 'detached' });
    await ctx.close();
  }, 120_000);
});
