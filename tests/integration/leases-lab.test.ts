// The lifecycle on the real service with its real local lab (bubblewrap sandboxes): request a board,
// apply, reset its power, call a plugin, read its load, unlock — and the board comes back restored to
// its default image; a lease that expires does the same.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import type { TestUser } from './helpers/users.ts';
import { boardState, call, endIn, H48, makeUser } from './leases.fixtures.ts';

describe('the lifecycle on real local boards', () => {
  let t: TestApp;
  let u: TestUser;
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    t = await makeTestApp({
      clock,
      env: {
        BIANBU_LEASE_TICK_MS: '0',
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    u = await makeUser(t.app);
    const plugin = path.join(t.app.boards.pluginsDir, 'whoami');
    fs.writeFileSync(plugin, '#!/bin/sh\necho "topic=$1 data=$2 node=$3 host=$(hostname)"\n', {
      mode: 0o755,
    });
  });
  afterAll(() => t?.close());

  const marker = '/root/left-by-the-last-holder.txt';

  it('requests, applies, resets power, calls a plugin, reads load and unlocks a local board', async () => {
    const lease = await call(t.app, u, 'POST', '/api/device/request-device', {
      requestDate: endIn(clock.now(), H48),
      filterReq: {},
      serverName: 'sandbox',
    });
    expect(lease.code).toBe(20000);
    const deviceId: string = lease.data.deviceId;
    const driver = t.app.boards.driver(deviceId);
    expect(driver.kind).toBe('local');
    await driver.files.write(marker, 'secret');

    const { applyId } = (await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId })).data;
    const info = await call(t.app, u, 'GET', '/api/user/apply-info');
    expect(info.data).toEqual([{ applyId, deviceId, serverName: 'sandbox', expiresAt: lease.data.endsAt }]);
    const reset = await call(t.app, u, 'POST', '/api/device/power-reset', {}, { applyaccess: applyId });
    expect(reset.code).toBe(20000);
    expect(reset.data).toEqual({ deviceId, state: 'leased' });
    expect(await boardState(t.app, deviceId)).toBe('leased');
    // a power reset keeps the board's files
    expect((await driver.files.read(marker)).toString()).toBe('secret');

    const plugin = await call(t.app, u, 'POST', '/api/device/call-plugin', {
      applyId,
      topic: 'whoami',
      data: { led: 'on' },
      nodeId: 3,
    });
    expect(plugin.code).toBe(20000);
    expect(plugin.data.result).toContain('topic=whoami data={"led":"on"} node=3 host=');
    const unknown = await call(t.app, u, 'POST', '/api/device/call-plugin', { applyId, topic: 'nope' });
    expect(unknown.status).toBe(400);
    expect(unknown.error).toBe('plugin.unknown');

    await t.app.boards.sampleAll();
    clock.set(Date.now());
    const cpu = await call(t.app, u, 'GET', '/api/device/recent-cpu-loading', {
      deviceId,
      serverName: 'sandbox',
    });
    expect(cpu.data.timestamps.length).toBeGreaterThan(0);
    expect(cpu.data.series[0].values[0]).toBeGreaterThanOrEqual(0);
    const mem = await call(t.app, u, 'GET', '/api/device/recent-mem-loading', { deviceId });
    expect(mem.data.total).toBeGreaterThan(0);

    const unlock = await call(t.app, u, 'POST', '/api/device/unlock-request-device', {
      deviceId,
      serverName: 'sandbox',
    });
    expect(unlock.code).toBe(20000);
    const stale = await call(t.app, u, 'POST', '/api/device/power-reset', { applyId });
    expect(stale.error).toBe('apply.closed');
    await t.app.leases.drain();
    expect(await boardState(t.app, deviceId)).toBe('idle');
    await expect(t.app.boards.driver(deviceId).files.read(marker)).rejects.toThrow();
    expect((await call(t.app, u, 'GET', '/api/user/apply-info')).data).toEqual([]);
  });

  it('restores and frees a board whose lease expires', async () => {
    const lease = await call(t.app, u, 'POST', '/api/device/request-device', {
      requestDate: endIn(clock.now(), H48),
      filterReq: {},
      serverName: 'expiring',
    });
    const deviceId: string = lease.data.deviceId;
    await t.app.boards.driver(deviceId).files.write(marker, 'secret');
    clock.advance(H48 - HOUR_MS);
    expect((await t.app.leaseScheduler.tick()).warned1h).toBe(1);
    clock.advance(HOUR_MS);
    expect((await t.app.leaseScheduler.tick()).expired).toBe(1);
    expect(await boardState(t.app, deviceId)).toBe('idle');
    await expect(t.app.boards.driver(deviceId).files.read(marker)).rejects.toThrow();
    expect((await call(t.app, u, 'GET', '/api/device/fetch-request-device')).data.items).toEqual([]);
  });
});
