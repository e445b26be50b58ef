// The setup most workbench suites share: the service, Chromium signed in as the administrator, a
// board leased through the API (the suite is about the workbench, not the apply page), and the
// workbench started on it from /mainboard, its first shell live. `close` ends all of it.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ConsolePage } from '../pages/ConsolePage.ts';
import { MainboardPage } from '../pages/DevicePages.ts';
import { WorkbenchPage } from '../pages/WorkbenchPage.ts';
import { ADMIN_PASSWORD, passwordLogin, requestBoard } from './api.ts';
import { launchChromium } from './chromium.ts';
import { type SignedInOptions, signedInContext } from './context.ts';
import { type Service, startService } from './service.ts';

export interface WorkbenchSession {
  svc: Service;
  browser: Browser;
  ctx: BrowserContext;
  page: Page;
  token: string;
  console: ConsolePage;
  wb: WorkbenchPage;
  close(): Promise<void>;
}

export async function openWorkbench(
  board: string,
  opts: SignedInOptions & { waitForShell?: boolean } = {},
): Promise<WorkbenchSession> {
  const parts: Partial<WorkbenchSession> = {};
  const close = async () => {
    await parts.ctx?.close();
    await parts.browser?.close();
    await parts.svc?.stop();
  };
  try {
    parts.svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    parts.browser = await launchChromium();
    const token = await passwordLogin(parts.svc.url, 'admin', ADMIN_PASSWORD);
    await requestBoard(parts.svc.url, token, board);
    const { waitForShell = true, ...ctxOpts } = opts;
    const ctx = await signedInContext(parts.browser, token, ctxOpts);
    parts.ctx = ctx;
    const page = await ctx.newPage();
    const console_ = new ConsolePage(page, parts.svc.url);
    const wb = new WorkbenchPage(page);
    await console_.goto('/mainboard');
    await new MainboardPage(page).start(board);
    await wb.ready();
    if (waitForShell) await wb.waitForLiveTerminals(1);
    return { svc: parts.svc, browser: parts.browser, ctx, page, token, console: console_, wb, close };
  } catch (err) {
    // A setup that fails part-way leaves no service or browser behind.
    await close().catch(() => undefined);
    throw err;
  }
}
