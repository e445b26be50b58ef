// code-server installed by the service itself: a start (BIANBU_CODE_SERVER_INSTALL=auto, the default
// outside tests) that finds no install under BIANBU_CODE_SERVER_DIR runs scripts/install-code-server.sh
// in the background, says `code.installing` in the code window meanwhile, logs each step, and offers
// VS Code once it is there, without a restart. Needs root, Node 20 under /usr and the npm registry (or
// its cache), as the script does; it installs into a directory of its own under /usr and removes it.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostCodeServer } from '#server/boards/local/code-server.ts';
import { codeServerInstallOf } from '#server/desktop/desktop.feature.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { DesktopUnavailable } from '#shared/desktop.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { call } from './leases.fixtures.ts';

const DIR = `/usr/local/lib/bianbu-code-server-test-${process.pid}`;

describe('code-server installed by a start that finds none', () => {
  let t: TestApp;
  let u: TestUser;
  let applyId: string;

  const post = (url: string, payload: Record<string, unknown>) =>
    call<Record<string, unknown>>(t.app, u, 'POST', url, payload, applyId ? { applyaccess: applyId } : {});

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('the install and local boards need root');
    fs.rmSync(DIR, { recursive: true, force: true });
    t = await makeTestApp({
      env: { BIANBU_CODE_SERVER_INSTALL: 'auto', BIANBU_CODE_SERVER_DIR: DIR },
    });
    u = await makeUser(t.app);
    const l = await post('/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: {},
      serverName: 'install',
    });
    const a = await post('/api/device/apply-device', { deviceId: l.data.deviceId });
    expect(a.code, a.message).toBe(20000);
    applyId = String(a.data.applyId);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    fs.rmSync(DIR, { recursive: true, force: true });
    for (const n of fs.readdirSync('/usr/local/lib'))
      if (n.startsWith(`bianbu-code-server-test-${process.pid}`))
        fs.rmSync(`/usr/local/lib/${n}`, { recursive: true, force: true });
  }, 60_000);

  it('says it is installing, logs the steps, then offers VS Code without a restart', async () => {
    const first = await post('/api/device/desktop-status', { applyId });
    expect(first.data.code).toEqual({ available: false, reason: DesktopUnavailable.codeInstalling });
    const deadline = Date.now() + 280_000;
    let code: unknown = first.data.code;
    while (Date.now() < deadline) {
      code = (await post('/api/device/desktop-status', { applyId })).data.code;
      if ((code as { reason?: string }).reason !== DesktopUnavailable.codeInstalling) break;
      await new Promise((r) => setTimeout(r, 2000));
    }
    const steps = codeServerInstallOf(t.app)?.steps ?? [];
    expect(code, steps.slice(-20).join('\n')).toEqual({ available: true });
    expect(hostCodeServer(DIR)?.version).toMatch(/^4\./);
    // What the service logged, step by step, as an administrator reads it.
    expect(steps.some((l) => l.startsWith('install-code-server: npm install code-server@'))).toBe(true);
    expect(steps.at(-1)).toMatch(/^install-code-server: code-server .* installed in /);
    expect(codeServerInstallOf(t.app)?.state).toBe('done');
  }, 300_000);
});
