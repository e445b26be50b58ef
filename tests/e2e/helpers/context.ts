// A browser context signed in as a user: the token in localStorage before any page script runs, the
// console's cookies (language, themes) set, and optionally xterm's DOM renderer forced so terminal
// text can be read from the page.
import type { Browser, BrowserContext } from 'playwright-core';
import { forceDomRenderer } from '../pages/WorkbenchPage.ts';

export interface SignedInOptions {
  viewport?: { width: number; height: number };
  /** Cookies of the console on 127.0.0.1, e.g. { lang: 'en', theme: 'light' }. */
  cookies?: Record<string, string>;
  acceptDownloads?: boolean;
  /**
   * true: the token is put back on every page load (a test that signs out is signed in again by a
   * reload); false: only while there is none, so signing out sticks.
   */
  tokenEveryLoad?: boolean;
  /** Read terminals as text (xterm's DOM renderer). */
  domRenderer?: boolean;
}

export async function signedInContext(
  browser: Browser,
  token: string,
  o: SignedInOptions = {},
): Promise<BrowserContext> {
  const ctx = await browser.newContext({
    viewport: o.viewport ?? { width: 1440, height: 900 },
    ...(o.acceptDownloads ? { acceptDownloads: true } : {}),
  });
  const cookies = o.cookies ?? { lang: 'en' };
  await ctx.addCookies(
    Object.entries(cookies).map(([name, value]) => ({ name, value, domain: '127.0.0.1', path: '/' })),
  );
  if (o.tokenEveryLoad ?? true) await ctx.addInitScript((t) => localStorage.setItem('token', t), token);
  else
    await ctx.addInitScript((t) => {
      if (!localStorage.getItem('token')) localStorage.setItem('token', t);
    }, token);
  if (o.domRenderer ?? true) await ctx.addInitScript(forceDomRenderer);
  return ctx;
}
