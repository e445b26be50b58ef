// Screenshots of the console frame's pages, light and dark, desktop and mobile, into
// tests/e2e/screenshots/ (gitignored). Run: node --import tsx tests/e2e/screenshots.ts
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium } from './helpers/chromium.ts';
import { avatarPicture } from './helpers/png.ts';
import { ROOT, startService } from './helpers/service.ts';

const OUT = path.join(ROOT, 'tests/e2e/screenshots');
const VIEWPORTS = { desktop: { width: 1440, height: 900 }, mobile: { width: 390, height: 844 } } as const;
const only = process.argv.slice(2);

async function shot(page: Page, name: string): Promise<void> {
  await page.waitForLoadState('networkidle').catch(() => {});
  await page.waitForTimeout(250);
  await page.screenshot({ path: path.join(OUT, `${name}.png`) });
  console.log('shot', name);
}

async function context(
  browser: Browser,
  base: string,
  vp: keyof typeof VIEWPORTS,
  theme: 'light' | 'dark',
  lang: string,
  token?: string,
): Promise<BrowserContext> {
  const ctx = await browser.newContext({ viewport: VIEWPORTS[vp], deviceScaleFactor: 1 });
  const host = new URL(base).hostname;
  await ctx.addCookies([
    { name: 'theme', value: theme, domain: host, path: '/' },
    { name: 'lang', value: lang, domain: host, path: '/' },
  ]);
  if (token) await ctx.addInitScript((t) => localStorage.setItem('token', t), token);
  return ctx;
}

async function main(): Promise<void> {
  fs.mkdirSync(OUT, { recursive: true });
  const svc = await startService({
    BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD,
    XPACK_ENABLED: '1',
    BIANBU_LICENSE_EXPIRES: new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10),
  });
  const browser = await launchChromium();
  try {
    const token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    for (const vp of Object.keys(VIEWPORTS) as (keyof typeof VIEWPORTS)[]) {
      for (const theme of ['light', 'dark'] as const) {
        const tag = `${vp}-${theme}`;
        const lang = theme === 'dark' ? 'en' : 'zh';
        const anon = await context(browser, svc.url, vp, theme, lang);
        const p = await anon.newPage();
        const pages: [string, string, ((pg: Page) => Promise<void>)?][] = [
          ['landing', '/'],
          ['login', '/login'],
          ['login-phone', '/login', async (pg) => pg.locator('[data-mode="phone"]').click()],
          ['thirdparty', '/thridparty'],
          ['404', '/404'],
          ['403', '/403'],
          ['palette-anon', '/', async (pg) => pg.keyboard.press('Control+k')],
        ];
        for (const [name, url, act] of pages) {
          if (only.length && !only.includes(name)) continue;
          await p.goto(`${svc.url}${url}`);
          await p.waitForTimeout(300);
          if (act) await act(p);
          await shot(p, `${name}-${tag}`);
        }
        await anon.close();

        const user = await context(browser, svc.url, vp, theme, lang, token);
        const q = await user.newPage();
        const signed: [string, string, ((pg: Page) => Promise<void>)?][] = [
          ['mainboard', '/mainboard'],
          ['settings', '/cloudsetting'],
          ['settings-apikey', '/cloudsetting?activeTab=apikey'],
          ['dashboard', '/dashboard/dashboard'],
          ['devices-public', '/clouddevice/public'],
          ['sidebar-open', '/clouddevice/public', async (pg) => pg.getByTestId('sidebar-toggle').click()],
          ['palette', '/dashboard/dashboard', async (pg) => pg.keyboard.press('Control+k')],
          ['profile', '/cloudsetting', async (pg) => pg.getByTestId('avatar-button').click()],
          [
            'avatar-crop',
            '/cloudsetting',
            async (pg) => {
              await pg.getByTestId('avatar-button').click();
              await pg.getByTestId('change-avatar').click();
              await pg
                .getByTestId('avatar-file')
                .setInputFiles({ name: 'avatar.png', mimeType: 'image/png', buffer: avatarPicture() });
              await pg.waitForTimeout(600);
            },
          ],
        ];
        for (const [name, url, act] of signed) {
          if (only.length && !only.includes(name)) continue;
          await q.goto(`${svc.url}${url}`);
          await q.waitForTimeout(500);
          if (act) await act(q);
          await shot(q, `${name}-${tag}`);
        }
        await user.close();
      }
    }
  } finally {
    await browser.close();
    await svc.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
