// Screenshots of the flash UI (catalogue, wizard, confirm, job dialog and workbench pane, multi-board
// table, history) in zh and en, into tests/e2e/screenshots/ (gitignored). The flash calls are answered
// by fixtures here (page.route), so every state — running with speed and ETA, failed, refused — can be
// looked at without waiting for real jobs. Run: node --import tsx tests/e2e/flash-screenshots.ts
import fs from 'node:fs';
import path from 'node:path';
import type { Page, Route } from 'playwright-core';
import { ADMIN_PASSWORD, passwordLogin } from './helpers/api.ts';
import { launchChromium } from './helpers/chromium.ts';
import { ROOT, startService } from './helpers/service.ts';

const OUT = path.join(ROOT, 'tests/e2e/screenshots');

const now = Date.now();
const iso = (ms: number) => new Date(ms).toISOString();

const images = [
  {
    tag: 'minimal',
    name: 'Bianbu minimal',
    osVersion: 'Bianbu 2.1 (minimal)',
    size: 48 * 1024 * 1024,
    sha256: '3f9c2b7a1d0e4c5b6a7980f1e2d3c4b5a6978877665544332211ffeeddccbbaa',
    description: 'The default image every board starts with.',
    models: [],
    format: 'tar',
    source: 'builtin',
    ownerId: null,
    createdAt: iso(now - 86_400_000),
    retiredAt: null,
  },
  {
    tag: 'developer',
    name: 'Bianbu developer',
    osVersion: 'Bianbu 2.1 (developer)',
    size: 212 * 1024 * 1024,
    sha256: 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90',
    description: 'Minimal plus compilers, debuggers and /opt/bianbu-developer.',
    models: [],
    format: 'tar.gz',
    source: 'builtin',
    ownerId: null,
    createdAt: iso(now - 86_400_000),
    retiredAt: null,
  },
  {
    tag: 'x60-bsp-test',
    name: 'X60 BSP test build',
    osVersion: '6.6.36-rc2',
    size: 731 * 1024 * 1024,
    sha256: 'ffee00112233445566778899aabbccddeeff00112233445566778899aabbccdd',
    description: 'Private kernel test build.',
    models: ['X60'],
    format: 'tar.gz',
    source: 'user',
    ownerId: 'someone',
    createdAt: iso(now - 3_600_000),
    retiredAt: null,
  },
];

function job(over: Record<string, unknown>) {
  return {
    jobId: 'job-1',
    multiId: null,
    deviceId: 'dev',
    serverName: 'board',
    imageTag: 'developer',
    imageName: 'Bianbu developer',
    userId: 'u',
    userName: 'admin',
    state: 'RUNNING',
    stage: 'write',
    percent: 46,
    bytesDone: 97 * 1024 * 1024,
    bytesTotal: 212 * 1024 * 1024,
    speedBps: 38 * 1024 * 1024,
    etaSeconds: 3,
    createdAt: iso(now - 20_000),
    startedAt: iso(now - 19_000),
    endedAt: null,
    durationMs: 19_000,
    errorKey: null,
    errorMessage: null,
    ...over,
  };
}

const LOG = [
  'queued: waiting for a flashing slot (1 of 2 in use)',
  'transfer: reading developer.tar.gz (212.0 MiB)',
  'transfer: sha256 a1b2c3d4e5f6… matches',
  'write: unpacking into a fresh root',
  'write: 41 %  usr/lib/gcc/riscv64-linux-gnu/13/cc1',
  'write: 46 %  usr/share/doc/gdb/…',
];

const ok = (data: unknown) => ({
  status: 200,
  contentType: 'application/json',
  body: JSON.stringify({ code: 20000, message: 'success', data }),
});

async function mockFlash(page: Page, leases: { deviceId: string; serverName: string }[]): Promise<void> {
  const [a, b] = leases;
  await page.route('**/api/device/flash-images**', (r: Route) =>
    r.fulfill(
      ok({
        items: images.map((i) => ({
          ...i,
          ownerId: i.ownerId,
          fits: new URL(r.request().url()).searchParams.get('deviceId') ? i.models.length === 0 : undefined,
        })),
        quota: { usedBytes: 731 * 1024 * 1024, limitBytes: 2 * 1024 * 1024 * 1024 },
      }),
    ),
  );
  await page.route('**/api/device/post-flash', (r) =>
    r.fulfill(ok(job({ deviceId: a.deviceId, serverName: a.serverName }))),
  );
  await page.route('**/api/device/fetch-flash-job**', (r) =>
    r.fulfill(
      ok({ deviceId: a.deviceId, job: job({ deviceId: a.deviceId, serverName: a.serverName }), log: LOG }),
    ),
  );
  await page.route('**/api/device/post-multi-flash', (r) =>
    r.fulfill(
      ok({
        multiId: 'multi-1',
        results: [
          {
            deviceId: a.deviceId,
            job: job({
              jobId: 'j-a',
              multiId: 'multi-1',
              deviceId: a.deviceId,
              serverName: a.serverName,
              stage: 'verify',
              percent: 81,
            }),
            errorKey: null,
            message: null,
          },
          {
            deviceId: b.deviceId,
            job: job({
              jobId: 'j-b',
              multiId: 'multi-1',
              deviceId: b.deviceId,
              serverName: b.serverName,
              state: 'FAILURE',
              stage: 'write',
              errorKey: 'flash.no_space',
              percent: 37,
            }),
            errorKey: null,
            message: null,
          },
          ...leases.slice(2).map((l) => ({
            deviceId: l.deviceId,
            job: null,
            errorKey: 'flash.already_flashing',
            message: 'already flashing',
          })),
        ],
      }),
    ),
  );
  await page.route('**/api/device/fetch-multi-flash-job', (r) => r.fulfill(ok({ jobs: [] })));
  await page.route('**/api/device/flash-history**', (r) =>
    r.fulfill(
      ok({
        deviceId: a.deviceId,
        items: [
          job({
            jobId: 'h1',
            deviceId: a.deviceId,
            serverName: a.serverName,
            state: 'SUCCESS',
            stage: 'done',
            percent: 100,
            endedAt: iso(now - 60_000),
            durationMs: 41_000,
          }),
          job({
            jobId: 'h2',
            deviceId: a.deviceId,
            serverName: a.serverName,
            state: 'FAILURE',
            stage: 'verify',
            errorKey: 'flash.verify_failed',
            durationMs: 33_500,
            imageTag: 'x60-bsp-test',
            imageName: 'X60 BSP test build',
          }),
          job({
            jobId: 'h3',
            deviceId: a.deviceId,
            serverName: a.serverName,
            state: 'CANCELLED',
            stage: 'transfer',
            errorKey: 'flash.cancelled',
            durationMs: 2_000,
            userName: 'alice',
          }),
        ],
      }),
    ),
  );
}

async function shot(page: Page, name: string): Promise<void> {
  await page.waitForTimeout(400);
  await page.screenshot({ path: path.join(OUT, `${name}.png`) });
  console.log('shot', name);
}

async function main(): Promise<void> {
  fs.mkdirSync(OUT, { recursive: true });
  const svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
  const browser = await launchChromium();
  try {
    const token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    const leases: { deviceId: string; serverName: string }[] = [];
    for (const name of ['flash-a', 'flash-b', 'flash-c']) {
      const res = await fetch(`${svc.url}/api/device/request-device`, {
        method: 'POST',
        headers: { Authorization: token, 'content-type': 'application/json' },
        body: JSON.stringify({
          requestDate: iso(Date.now() + 48 * 3_600_000),
          filterReq: {},
          serverName: name,
        }),
      });
      const body = (await res.json()) as {
        code: number;
        message: string;
        data: { deviceId: string; serverName: string };
      };
      if (body.code !== 20000) throw new Error(`request-device: ${body.code} ${body.message}`);
      leases.push({ deviceId: body.data.deviceId, serverName: body.data.serverName });
    }
    for (const lang of ['en', 'zh'] as const) {
      const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      await ctx.addCookies([{ name: 'lang', value: lang, domain: '127.0.0.1', path: '/' }]);
      await ctx.addInitScript((t) => localStorage.setItem('token', t), token);
      const page = await ctx.newPage();
      await mockFlash(page, leases);

      await page.goto(`${svc.url}/flash-images`);
      await page.getByTestId('image-table').waitFor();
      await shot(page, `flash-catalogue-${lang}`);
      await page.getByTestId('image-upload-open').click();
      await shot(page, `flash-upload-${lang}`);
      await page.keyboard.press('Escape');

      await page.goto(`${svc.url}/mainboard`);
      await page.getByTestId('lease-row').first().waitFor();
      await shot(page, `flash-mainboard-${lang}`);
      await page.getByTestId('flash').first().click();
      await page.getByTestId('flash-image-list').waitFor();
      await page.locator('[data-tag="developer"]').click();
      await shot(page, `flash-pick-${lang}`);
      await page.getByTestId('flash-next').click();
      await shot(page, `flash-confirm-${lang}`);
      await page.getByTestId('flash-confirm').click();
      await page.getByTestId('flash-job-dialog').waitFor();
      await shot(page, `flash-job-${lang}`);
      await page.keyboard.press('Escape');

      // Several boards from the mainboard's pick.
      for (const p of await page.getByTestId('flash-pick').all()) await p.check();
      await page.getByTestId('flash-picked').click();
      await shot(page, `flash-many-boards-${lang}`);
      await page.getByTestId('flash-next').click();
      await page.locator('[data-tag="developer"]').click();
      await page.getByTestId('flash-next').click();
      await page.getByTestId('flash-confirm').click();
      await page.getByTestId('flash-multi-dialog').waitFor();
      await shot(page, `flash-multi-${lang}`);
      await page.keyboard.press('Escape');

      await page.getByTestId('flash-history-open').first().click();
      await page.getByTestId('flash-history').waitFor();
      await shot(page, `flash-history-${lang}`);
      await ctx.close();
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
