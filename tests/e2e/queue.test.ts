// The waiting line in Chromium against the real service and its local board lab: another user holds
// every board; on /riscvhouse the request finds nothing free, the user opts in to wait in line by
// keyboard and sees position 1 (also from the palette); the other user releases a board, the lab
// restores it, and the waiting user's console says at once, in a toast, that the board is theirs and
// its lease started. The service is asked after each step, so a page that merely looks right fails.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium, SKIP_E2E } from './helpers/chromium.ts';
import { type Service, startService } from './helpers/service.ts';
import { ConsolePage } from './pages/ConsolePage.ts';
import { ApplyPage } from './pages/DevicePages.ts';
import { WaitingLine } from './pages/QueuePages.ts';

const HOLDER_PASSWORD = 'E2e-holder-Passw0rd!';

interface Envelope<T> {
  code: number;
  message: string;
  error?: string;
  data: T;
}

async function api<T>(
  svc: Service,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<Envelope<T>> {
  const res = await fetch(`${svc.url}${path}`, {
    method,
    headers: { Authorization: token, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return (await res.json()) as Envelope<T>;
}

interface Lease {
  deviceId: string;
  serverName: string;
  startedAt: string;
  endsAt: string;
}

describe.skipIf(SKIP_E2E)('waiting in line for a board in the console', () => {
  let svc: Service;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let adminToken: string;
  let holderToken: string;
  const held: Lease[] = [];

  beforeAll(async () => {
    svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
    browser = await launchChromium();
    adminToken = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    const created = await api(svc, adminToken, 'POST', '/api/admin/users/create', {
      username: 'holder',
      password: HOLDER_PASSWORD,
    });
    expect(created.code, created.message).toBe(20000);
    holderToken = await passwordLogin(svc.url, 'holder', HOLDER_PASSWORD);
    // The other user takes every board of the lab.
    for (let i = 0; i < 20; i++) {
      const r = await api<Lease>(svc, holderToken, 'POST', '/api/device/request-device', {
        requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
        filterReq: {},
        serverName: `held-${i}`,
      });
      if (r.code === 20000) held.push(r.data);
      else if (
        r.error === 'lease.none_free' &&
        (r.data as unknown as { matching: number }).matching === held.length
      )
        break;
      else await new Promise((res) => setTimeout(res, 500));
    }
    expect(held.length).toBeGreaterThan(0);
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    await browser?.close();
    await svc?.stop();
  });

  it('finds nothing free, waits in line at position 1, and gets the board the moment another user’s lease ends, told by a toast', async () => {
    ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await ctx.addCookies([{ name: 'lang', value: 'en', domain: '127.0.0.1', path: '/' }]);
    await ctx.addInitScript((t) => localStorage.setItem('token', t), adminToken);
    page = await ctx.newPage();
    const console_ = new ConsolePage(page, svc.url);
    const line = new WaitingLine(page);

    await console_.goto('/riscvhouse');
    const apply = new ApplyPage(page);
    await apply.agree();
    await apply.name('queued-k1');
    await apply.getStarted();
    await apply.noneFree().waitFor();
    expect(await apply.noneFree().textContent()).toContain('Wait in line');
    // Nothing joined until the user opts in.
    const before = await api<{ items: unknown[] }>(svc, adminToken, 'GET', '/api/device/queue/fetch');
    expect(before.data.items).toEqual([]);

    // Opt in by keyboard.
    await line.joinButton().focus();
    await page.keyboard.press('Enter');
    const entry = await line.entry();
    await entry.waitFor();
    expect(await line.position().textContent()).toBe('#1 in line');
    expect(await line.estimate().textContent()).toMatch(/A board is expected around .+/);
    const queued = await api<{ items: { entryId: string; position: number; serverName: string }[] }>(
      svc,
      adminToken,
      'GET',
      '/api/device/queue/fetch',
    );
    expect(queued.data.items).toEqual([expect.objectContaining({ position: 1, serverName: 'queued-k1' })]);
    const entryId = queued.data.items[0].entryId;
    await page.getByTestId('notice').filter({ hasText: 'number 1' }).first().waitFor();

    // The palette shows the place too, and /mainboard lists it.
    await console_.runFromPalette('Show my place in line', `queue.show.${entryId}`);
    await console_.waitForPath('/mainboard');
    await page.getByTestId('queue-panel').getByTestId('queue-entry').waitFor();
    expect(await page.getByTestId('queue-panel').getByTestId('queue-position').textContent()).toBe(
      '#1 in line',
    );

    // The other user lets one board go; the lab restores it and it goes to the waiting user.
    const released = held[0];
    const unlockedAt = Date.now();
    const unlock = await api(svc, holderToken, 'POST', '/api/device/unlock-request-device', {
      deviceId: released.deviceId,
      serverName: released.serverName,
    });
    expect(unlock.code, unlock.message).toBe(20000);
    const toast = page.getByTestId('notice').filter({ hasText: 'is ready' });
    await toast.waitFor({ timeout: 90_000 });
    const text = (await toast.textContent()) ?? '';
    expect(text).toContain('“queued-k1” is ready');
    expect(text).toContain('its lease started now');

    const mine = await api<{ items: Lease[] }>(svc, adminToken, 'GET', '/api/device/fetch-request-device');
    expect(mine.data.items).toEqual([
      expect.objectContaining({ deviceId: released.deviceId, serverName: 'queued-k1' }),
    ]);
    expect(Date.parse(mine.data.items[0].startedAt)).toBeGreaterThanOrEqual(unlockedAt - 1000);
    // The board is in the list, the place in line is gone from it.
    await page.locator('[data-testid="lease-row"][data-name="queued-k1"]').waitFor();
    await page.getByTestId('queue-panel').getByTestId('queue-entry').waitFor({ state: 'detached' });
    const after = await api<{ items: unknown[]; recent: { state: string }[] }>(
      svc,
      adminToken,
      'GET',
      '/api/device/queue/fetch',
    );
    expect(after.data.items).toEqual([]);
    expect(after.data.recent[0].state).toBe('granted');
  }, 180_000);
});
