// Sign-in end to end through the embedded OpenID Connect provider's real pages: reach /mainboard,
// see the user's name, crop and upload an avatar, sign out. And the re-login dialog after the
// token expires, signed in through the console's own password form (RSA-OAEP in the browser).
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { avatarPicture } from './helpers/png.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { LoginPage } from './pages/LoginPage.ts';
import { ProfileDialog } from './pages/ProfileDialog.ts';
import { ProviderSignInPage } from './pages/ProviderSignInPage.ts';

async function userInfo(
  svc: Service,
  token: string,
): Promise<{ code: number; data: { name: string; username: string } | null }> {
  const res = await fetch(`${svc.url}/api/user/info`, { headers: { Authorization: token } });
  return (await res.json()) as { code: number; data: { name: string; username: string } | null };
}

const storedToken = (page: Page) => page.evaluate(() => localStorage.getItem('token'));

describe.skipIf(SKIP_E2E)('single sign-on through the embedded provider', () => {
  let svc: Service;
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it('signs in on the provider pages, shows the name, uploads a cropped avatar and signs out', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'zh-CN' });
    const page = await ctx.newPage();
    const console_ = new ConsolePage(page, svc.url);

    await console_.goto('/cloudsetting');
    const provider = new ProviderSignInPage(page);
    await provider.waitUntilShown();
    await provider.signIn('admin', ADMIN_PASSWORD);

    // Back with ?code=: exchanged, stored, and on to the remembered path, with the code gone from the URL.
    await console_.waitForPath('/cloudsetting', 30_000);
    await page.getByTestId('user-name').waitFor();
    expect(new URL(page.url()).searchParams.has('code')).toBe(false);
    const token = await storedToken(page);
    expect(token).toMatch(/^bbt_/);
    const info = await userInfo(svc, token ?? '');
    expect(info.code).toBe(20000);
    expect(await page.getByTestId('user-name').textContent()).toBe(info.data?.name || info.data?.username);

    await console_.goto('/mainboard');
    await console_.waitForTitle('设备大厅 - Bianbu Cloud');
    await page.getByTestId('user-name').waitFor();

    const profile = new ProfileDialog(page);
    await profile.openFromNavbar();
    await profile.cropAndUpload({ name: 'me.png', mimeType: 'image/png', buffer: avatarPicture(400) });
    await profile.waitForLoading(2);
    const avatar = page.getByTestId('avatar-button').locator('img');
    await avatar.waitFor();
    const src = await avatar.getAttribute('src');
    expect(src).toMatch(/\/api\/user\/avatar\//);
    const image = await fetch(new URL(src ?? '', svc.url));
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toMatch(/^image\/(png|jpeg)/);
    // The upload is the 150×150 crop, not the 400×400 original.
    const bytes = Buffer.from(await image.arrayBuffer());
    expect(bytes.readUInt32BE(16)).toBe(150);
    expect(bytes.readUInt32BE(20)).toBe(150);
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
    await page.getByTestId('profile-dialog').waitFor({ state: 'detached' });

    // Sign out asks first (issue 38): the palette offers Stay (chosen) and Sign out; Enter stays.
    await page.getByTestId('logout-button').first().click();
    await page.locator('[cmdk-item][data-option="stay"]').waitFor();
    await page.keyboard.press('Enter');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    expect(await storedToken(page)).not.toBeNull();
    await page.getByTestId('logout-button').first().click();
    await page.locator('[cmdk-item][data-option="logout"]').click();
    await console_.waitForPath('/');
    await console_.waitForTitle('首页 - Bianbu Cloud');
    expect(await storedToken(page)).toBeNull();
    // Signed out everywhere that token was used: the service refuses it now.
    expect((await userInfo(svc, token ?? '')).code).toBe(50008);
    await ctx.close();
  });
  it('signs in from a /thridparty link with a sequence code minted by a trusted system', async () => {
    const admin = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    const minted = await fetch(`${svc.url}/api/admin/sequence-codes/create`, {
      method: 'POST',
      headers: { Authorization: admin, 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'rainier-user', createIfMissing: true, name: 'Rainier User' }),
    });
    const { data } = (await minted.json()) as { data: { sequenceCode: string } };
    const ctx = await browser.newContext({ locale: 'zh-CN' });
    const page = await ctx.newPage();
    const console_ = new ConsolePage(page, svc.url);
    await console_.goto(`/thridparty?sequenceCode=${encodeURIComponent(data.sequenceCode)}`);
    await console_.waitForPath('/mainboard', 30_000);
    expect(await page.getByTestId('user-name').textContent()).toBe('Rainier User');

    await ctx.close();

    // The code was single use: the same link in another browser says why it cannot sign in.
    const other = await browser.newContext({ locale: 'zh-CN' });
    const again = await other.newPage();
    await again.goto(`${svc.url}/thridparty?sequenceCode=${encodeURIComponent(data.sequenceCode)}`);
    await again.getByRole('alert').first().waitFor();
    expect(new URL(again.url()).pathname).toBe('/thridparty');
    expect(await again.evaluate(() => localStorage.getItem('token'))).toBeNull();
    await other.close();
  });

  it('signs in with a phone number and the one-time code from the outbox', async () => {
    const admin = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    const ctx = await browser.newContext({ locale: 'zh-CN' });
    await ctx.addCookies([{ name: 'lang', value: 'en', url: svc.url }]);
    const page = await ctx.newPage();
    await page.goto(`${svc.url}/login`);
    await page.locator('[data-mode="phone"]').click();
    const phone = '13800138000';
    await page.locator('#login-phone').fill(` ${phone} `);
    await page.getByTestId('send-code').click();
    await page.waitForFunction(() =>
      /\d/.test(document.querySelector('[data-testid="send-code"]')?.textContent ?? ''),
    );
    const outbox = await fetch(`${svc.url}/api/admin/phone-outbox?phone=${phone}`, {
      headers: { Authorization: admin },
    });
    const { data } = (await outbox.json()) as { data: { items: { body: string }[] } };
    const code = /\b(\d{6})\b/.exec(data.items[0]?.body ?? '')?.[1];
    expect(code).toMatch(/^\d{6}$/);
    await page.locator('#login-code').fill(code ?? '');
    await page.getByTestId('phone-form').locator('button[type="submit"]').click();
    await page.waitForURL((u) => u.pathname === '/mainboard', { timeout: 20_000 });
    expect(await storedToken(page)).toMatch(/^bbt_/);
    await ctx.close();
  });
});

describe.skipIf(SKIP_E2E)('an expired token', () => {
  let svc: Service;
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
    // About one second of token lifetime.
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD, BIANBU_TOKEN_TTL_HOURS: '0.0003' });
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it('asks to log in again with the "Confirm logout" dialog, and Re-Login starts a new sign-in', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'zh-CN' });
    await ctx.addCookies([{ name: 'lang', value: 'en', url: svc.url }]);
    const page = await ctx.newPage();
    const login = new LoginPage(page, svc.url);
    await login.open('/login');
    await login.signInWithPassword('admin', ADMIN_PASSWORD);
    await page.waitForURL((u) => u.pathname === '/mainboard', { timeout: 20_000 });
    expect(await storedToken(page)).toMatch(/^bbt_/);

    await page.waitForTimeout(1_500);
    await page.reload();
    const dialog = page.getByTestId('session-ended-dialog');
    await dialog.waitFor({ timeout: 15_000 });
    expect(await dialog.getByRole('heading').textContent()).toBe('Confirm logout');
    expect(await dialog.textContent()).toContain(
      'You have been logged out, you can cancel to stay on this page, or log in again',
    );
    await expect(dialog.getByRole('button', { name: 'Cancel' }).isVisible()).resolves.toBe(true);

    await dialog.getByRole('button', { name: 'Re-Login' }).click();
    await new ProviderSignInPage(page).waitUntilShown();
    expect(await storedToken(page)).toBeNull();
    await ctx.close();
  });

  it('says the user is signed out, instead of loading forever, when they cancel the dialog', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'zh-CN' });
    await ctx.addCookies([{ name: 'lang', value: 'en', url: svc.url }]);
    const page = await ctx.newPage();
    const login = new LoginPage(page, svc.url);
    await login.open('/login');
    await login.signInWithPassword('admin', ADMIN_PASSWORD);
    await page.waitForURL((u) => u.pathname === '/mainboard', { timeout: 20_000 });

    await page.waitForTimeout(1_500);
    await page.reload();
    const dialog = page.getByTestId('session-ended-dialog');
    await dialog.waitFor({ timeout: 15_000 });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.getByText('You have been signed out.').waitFor({ timeout: 5_000 });
    await page.getByRole('button', { name: 'Sign in again' }).click();
    await new ProviderSignInPage(page).waitUntilShown();
    await ctx.close();
  });
});
