// The administration area in Chromium against the real service: the administrator makes an organisation,
// a role and a user in it from the console (the user through the palette's "Add a user…"), reads the
// audit log filtered by call; the new user signs in with the password given and sees only what the role
// permits — the sections its entries open, no actions it does not hold, 403 for the others, and the
// members of its own organisation only.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { signedInContext } from './helpers/context.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';

const ALICE_PASSWORD = 'Alice-Passw0rd!';
/** Set to a folder to keep screenshots of the pages this test visits. */
const SHOTS = process.env.E2E_SHOTS;

async function shot(page: Page, name: string) {
  if (!SHOTS) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

function sidebarLinks(page: Page) {
  return page.getByTestId('sidebar').locator('nav a');
}

describe.skipIf(SKIP_E2E)('administration: organisations, roles and users from the console', () => {
  let svc: Service;
  let browser: Browser;
  let adminCtx: BrowserContext;
  let aliceCtx: BrowserContext;

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    const admin = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    adminCtx = await signedInContext(browser, admin, { domRenderer: false });
    aliceCtx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await aliceCtx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
  }, 180_000);

  afterAll(async () => {
    await adminCtx?.close();
    await aliceCtx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('an administrator makes an organisation, a role and a user; the user sees only what the role permits', async () => {
    const page = await adminCtx.newPage();
    const c = new ConsolePage(page, svc.url);
    await c.goto('/mainboard');
    await c.waitForApp();
    // The console's top bar leads to the administration area, its first section.
    await page
      .getByRole('navigation', { name: 'Console sections' })
      .getByRole('link', { name: 'Administration' })
      .click();
    await c.waitForPath('/admin/users');
    await page.getByTestId('admin-user-table').waitFor();
    expect(await sidebarLinks(page).allInnerTexts()).toEqual(
      expect.arrayContaining(['Users', 'Organisations', 'Roles', 'Boards and lab', 'Images', 'Audit log']),
    );
    await shot(page, 'admin-users');

    // An organisation, by the keyboard from the sidebar.
    await sidebarLinks(page).filter({ hasText: 'Organisations' }).click();
    await c.waitForPath('/admin/orgs');
    await page.getByTestId('admin-org-add').click();
    const orgDialog = page.getByTestId('admin-org-dialog');
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-testid')))
      .toBe('admin-org-name');
    await page.keyboard.type('Lab Alpha');
    await orgDialog.getByTestId('admin-org-id').fill('lab-alpha');
    await page.keyboard.press('Enter');
    await orgDialog.waitFor({ state: 'detached' });
    const orgRow = page.locator('[data-testid="admin-org-row"][data-org="lab-alpha"]');
    await orgRow.waitFor();
    // Its members open below the list, and the keyboard follows: Enter on the button, focus on the panel.
    await orgRow.getByTestId('admin-org-members').focus();
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.textContent))
      .toBe('Members of Lab Alpha');

    // A role that may list users and read the audit log, nothing else.
    await sidebarLinks(page).filter({ hasText: 'Roles' }).click();
    await c.waitForPath('/admin/roles');
    await page.getByTestId('admin-role-add').click();
    const roleDialog = page.getByTestId('admin-role-dialog');
    await roleDialog.getByTestId('admin-role-name').fill('Lab auditor');
    await roleDialog.getByTestId('admin-role-id').fill('lab-auditor');
    await roleDialog.locator('[data-perm="rbac.view_user"]').check();
    await roleDialog.locator('[data-perm="audit.view_log"]').check();
    await roleDialog.locator('[data-perm="device.view_device"]').check();
    await roleDialog.getByRole('button', { name: 'Create' }).click();
    await roleDialog.waitFor({ state: 'detached' });
    const roleRow = page.locator('[data-testid="admin-role-row"][data-role="lab-auditor"]');
    await roleRow.waitFor();
    const granted = await roleRow.textContent();
    for (const perm of ['rbac.view_user', 'audit.view_log', 'device.view_device'])
      expect(granted).toContain(perm);
    expect(granted).not.toContain('rbac.add_user');
    await shot(page, 'admin-roles');

    // The user, from the palette: "Add a user…" goes to Users and opens the dialog.
    await c.runFromPalette('add a user', 'admin.user.add');
    await c.waitForPath('/admin/users');
    const userDialog = page.getByTestId('admin-user-dialog');
    await userDialog.waitFor();
    await userDialog.getByTestId('admin-user-username').fill('alice');
    await userDialog.getByTestId('admin-user-password').fill(ALICE_PASSWORD);
    await userDialog.getByTestId('admin-user-org').selectOption('lab-alpha');
    await userDialog.getByTestId('admin-user-role').selectOption('lab-auditor');
    await shot(page, 'admin-user-dialog');
    await userDialog.getByRole('button', { name: 'Create user' }).click();
    await userDialog.waitFor({ state: 'detached' });
    const aliceRow = page.locator('[data-testid="admin-user-row"][data-username="alice"]');
    await aliceRow.waitFor();
    expect(await aliceRow.textContent()).toContain('lab-alpha · lab-auditor');

    // The audit log has the three calls, and its filter narrows to one.
    await sidebarLinks(page).filter({ hasText: 'Audit log' }).click();
    await c.waitForPath('/admin/audit');
    for (const action of ['adminOrgCreate', 'adminRoleCreate', 'adminUserCreate'])
      await page.locator(`[data-testid="admin-audit-row"][data-action="${action}"]`).first().waitFor();
    await page.getByTestId('admin-audit-action').fill('adminRoleCreate');
    await page.getByTestId('admin-audit-apply').click();
    await expect
      .poll(async () => [
        ...new Set(
          await page
            .getByTestId('admin-audit-row')
            .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-action'))),
        ),
      ])
      .toEqual(['adminRoleCreate']);
    await shot(page, 'admin-audit');

    // Alice signs in with the password she was given.
    const alice = await aliceCtx.newPage();
    const a = new ConsolePage(alice, svc.url);
    await a.goto('/login');
    await alice.locator('#login-username').fill('alice');
    await alice.locator('#login-password').fill(ALICE_PASSWORD);
    await alice.locator('#login-password').press('Enter');
    await a.waitForPath('/mainboard');
    await alice
      .getByRole('navigation', { name: 'Console sections' })
      .getByRole('link', { name: 'Administration' })
      .click();
    await a.waitForPath('/admin/users');
    await alice.getByTestId('admin-user-table').waitFor();
    // Her sections: users and the audit log; no organisations, roles, boards or images.
    await expect
      .poll(() => sidebarLinks(alice).allInnerTexts())
      .toEqual(expect.arrayContaining(['Users', 'Audit log']));
    for (const hidden of ['Organisations', 'Roles', 'Boards and lab', 'Images'])
      expect(await sidebarLinks(alice).allInnerTexts()).not.toContain(hidden);
    // Her organisation's members only, and none of the actions her role lacks.
    expect(
      await alice
        .getByTestId('admin-user-row')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-username'))),
    ).toEqual(['alice']);
    expect(await alice.getByTestId('admin-user-add').count()).toBe(0);
    expect(await alice.getByTestId('admin-user-passwd').count()).toBe(0);
    expect(await alice.getByTestId('admin-user-deactivate').count()).toBe(0);
    expect(await alice.getByTestId('admin-user-roles').count()).toBe(0);
    await shot(alice, 'alice-users');
    // The palette offers her no administration action.
    await alice.keyboard.press('Control+k');
    await alice.locator('[cmdk-input]').waitFor({ state: 'visible' });
    await alice.keyboard.type('add a user');
    await expect.poll(() => alice.locator('[cmdk-item][data-command="admin.user.add"]').count()).toBe(0);
    await alice.keyboard.press('Escape');
    // A section she may not see answers 403, even by its address.
    for (const denied of ['/admin/roles', '/admin/orgs', '/admin/boards']) {
      await a.goto(denied);
      await a.waitForPath('/403');
    }
    // The audit log is hers to read: her organisation's entries (none of the administrator's).
    await a.goto('/admin/audit');
    await alice.getByTestId('admin-audit').waitFor();
    await expect
      .poll(async () =>
        (await alice.getByTestId('admin-audit-row').count()) === 0
          ? 'none'
          : (await alice.getByTestId('admin-audit-row').allInnerTexts()).join('\n'),
      )
      .not.toMatch(/admin\b/);

    // Deactivated, she cannot call the service any more.
    await c.goto('/admin/users');
    await aliceRow.getByTestId('admin-user-deactivate').click();
    const confirm = page.getByTestId('admin-deactivate-dialog');
    await confirm.getByRole('button', { name: 'Deactivate' }).click();
    await confirm.waitFor({ state: 'detached' });
    await expect.poll(() => aliceRow.textContent()).toContain('Deactivated');
    await expect(passwordLogin(svc.url, 'alice', ALICE_PASSWORD)).rejects.toThrow();
  }, 240_000);
});
