// The console frame in Chromium against the real service: the landing page in Chinese by default,
// language switching, the palette by keyboard, and an unknown path ending on /404.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';

describe.skipIf(SKIP_E2E)('console frame', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let console_: ConsolePage;

  beforeAll(async () => {
    browser = await launchChromium();
    svc = await startService();
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
  });

  // A browser that asks for Chinese unless told otherwise (the console follows the browser's language).
  const fresh = async (locale = 'zh-CN') => {
    await ctx?.close();
    ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale });
    page = await ctx.newPage();
    console_ = new ConsolePage(page, svc.url);
  };

  it('shows the landing page in Chinese with the title "<route title> - Bianbu Cloud"', async () => {
    await fresh();
    const catalogues: string[] = [];
    page.on('request', (r) => {
      const m = /\/assets\/(zh|en|ja)-[\w-]+\.js$/.exec(new URL(r.url()).pathname);
      if (m) catalogues.push(m[1]);
    });
    await console_.goto('/');
    await console_.waitForTitle('首页 - Bianbu Cloud');
    expect(await console_.htmlLang()).toBe('zh');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toContain('RISC-V');
    // Only the shown language's catalogue is downloaded: every key is in it, so the English fallback
    // is never needed (and is not part of the first load the budget counts).
    await page.waitForLoadState('networkidle');
    expect(catalogues).toEqual(['zh']);
  });

  it('switches to English and Japanese, and the choice survives a reload', async () => {
    await fresh();
    await console_.goto('/');
    await console_.waitForTitle('首页 - Bianbu Cloud');
    await console_.chooseLanguage('en');
    await console_.waitForTitle('Home - Bianbu Cloud');
    expect(await page.getByTestId('get-started').textContent()).toContain('Get started');

    await console_.chooseLanguage('ja');
    await console_.waitForTitle('ホーム - Bianbu Cloud');
    expect(await console_.htmlLang()).toBe('ja');

    await page.reload();
    await console_.waitForTitle('ホーム - Bianbu Cloud');
    const cookies = await ctx.cookies();
    expect(cookies.find((c) => c.name === 'lang')?.value).toBe('ja');
  });

  it('follows the browser’s language on a first visit, and the user’s choice over it', async () => {
    await fresh('en-US');
    await console_.goto('/');
    await console_.waitForTitle('Home - Bianbu Cloud');
    expect(await console_.htmlLang()).toBe('en');
    // The sign-in provider's page follows it too (Accept-Language).
    await console_.goto('/cloudsetting');
    await page.waitForURL((u) => u.pathname.startsWith('/idp/'), { timeout: 20_000 });
    await expect.poll(() => page.evaluate(() => document.documentElement.lang)).toBe('en');
    await fresh('ja-JP');
    await console_.goto('/');
    await console_.waitForTitle('ホーム - Bianbu Cloud');
    await console_.chooseLanguage('zh');
    await console_.waitForTitle('首页 - Bianbu Cloud');
    await page.reload();
    await console_.waitForTitle('首页 - Bianbu Cloud');
  });

  it('follows an unknown path to /404', async () => {
    await fresh();
    await console_.goto('/no/such/page');
    await console_.waitForPath('/404');
    await console_.waitForTitle('页面不存在 - Bianbu Cloud');
    expect(await page.getByTestId('error-code').textContent()).toBe('404');
  });

  it('opens the palette with Ctrl+K and navigates with the keyboard alone', async () => {
    await fresh();
    await console_.goto('/404');
    await console_.waitForTitle('页面不存在 - Bianbu Cloud');
    await page.keyboard.press('Control+k');
    await page.locator('[cmdk-input]').waitFor({ state: 'visible' });
    // The palette lists the language commands and the pages a signed-out visitor may open.
    await expect(console_.paletteItems().count()).resolves.toBeGreaterThan(3);
    await page.keyboard.press('Escape');
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });

    await console_.runFromPalette('English', 'lang.en');
    await console_.waitForTitle('Page not found - Bianbu Cloud');

    await console_.runFromPalette('Go to Home', 'nav./');
    await console_.waitForPath('/');
    await console_.waitForTitle('Home - Bianbu Cloud');
  });

  it('keeps the keys typed at once after the first Ctrl+K, while the palette is still loading', async () => {
    for (const wait of [0, 3000]) {
      await fresh('en-US');
      await console_.goto('/');
      await console_.waitForTitle('Home - Bianbu Cloud');
      // At once after the page shows (the palette not fetched yet), and once it was prefetched.
      await page.waitForTimeout(wait);
      await page.keyboard.press('Control+k');
      await page.keyboard.type('dark theme');
      await page
        .locator('[cmdk-item][data-selected="true"][data-command="theme.toggle"]')
        .waitFor({ timeout: 5_000 });
      expect(await page.locator('[cmdk-input]').inputValue()).toBe('dark theme');
    }
  });

  it('runs a command typed and entered at once after the first Ctrl+K, before the palette has loaded', async () => {
    await fresh('en-US');
    await console_.goto('/');
    await console_.waitForTitle('Home - Bianbu Cloud');
    const dark = () => page.evaluate(() => document.documentElement.classList.contains('dark'));
    const before = await dark();
    // The palette's chunk is not fetched yet: the Enter waits behind the keys typed before it.
    await page.keyboard.press('Control+k');
    await page.keyboard.type('dark theme');
    await page.keyboard.press('Enter');
    await page.waitForFunction((b) => document.documentElement.classList.contains('dark') !== b, before);
    await page.locator('[cmdk-input]').waitFor({ state: 'detached' });
    expect(await dark()).toBe(!before);
  });

  it('toggles the dark theme from the palette and keeps it in the theme cookie', async () => {
    await fresh();
    await console_.goto('/');
    const dark = () => page.evaluate(() => document.documentElement.classList.contains('dark'));
    const before = await dark();
    await console_.runFromPalette('theme', 'theme.toggle');
    expect(await dark()).toBe(!before);
    const cookies = await ctx.cookies();
    expect(cookies.find((c) => c.name === 'theme')?.value).toBe(before ? 'light' : 'dark');
  });

  it('sends a signed-out visitor of a console page to the sign-in provider and remembers the path', async () => {
    await fresh();
    await console_.goto('/cloudsetting');
    await page.waitForURL((u) => u.pathname.startsWith('/idp/'), { timeout: 20_000 });
    const cookies = await ctx.cookies();
    expect(decodeURIComponent(cookies.find((c) => c.name === 'redirect')?.value ?? '')).toBe('/cloudsetting');
    const authorize = new URL(page.url());
    expect(authorize.searchParams.get('code_challenge_method') ?? '').toMatch(/S256|^$/);
  });
});
