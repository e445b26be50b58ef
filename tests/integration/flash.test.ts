// Flashing on the real service with real local boards (bubblewrap sandboxes, ext4 loop disks): the
// catalogue, one board, several at once (one failing while the others succeed), cancel, the
// concurrency limit, bad images (corrupt, truncated, escaping the root, too large for the disk), a
// lease ending mid-flash — each time the board is left booted on a whole image.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '#server/clock.ts';
import type { FlashJobDto } from '#shared/flash.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import type { TestUser } from './helpers/users.ts';
import { makeUser as makeIdentityUser } from './helpers/users.ts';
import { boardState, call, endIn, H48 } from './leases.fixtures.ts';

/** A member with the flash permissions (as seeded for every organisation member), whose token outlives the moved clock. */
async function makeUser(app: TestApp['app']): Promise<TestUser> {
  const user = await makeIdentityUser(app, { perms: ['device.add_flash', 'device.view_flash'] });
  await app.storage.query('update credentials set expires_at = null where user_id = $1', [user.id]);
  return user;
}

/** A tar.gz of the given entries. */
async function makeArchive(
  file: string,
  entries: {
    name: string;
    type?: 'file' | 'symlink' | 'directory';
    body?: Buffer | string;
    linkname?: string;
  }[],
) {
  const pack = tar.pack();
  const out = fs.createWriteStream(file);
  const done = new Promise<void>((r, j) => out.on('finish', () => r()).on('error', j));
  pack.pipe(zlib.createGzip({ level: 1 })).pipe(out);
  for (const e of entries) {
    await new Promise<void>((r, j) => {
      const body = e.body === undefined ? undefined : Buffer.from(e.body);
      const h = {
        name: e.name,
        type: e.type ?? 'file',
        linkname: e.linkname,
        mode: e.type === 'directory' ? 0o755 : 0o644,
        uid: 0,
        gid: 0,
      } as const;
      if (body) pack.entry({ ...h, size: body.length }, body, (err) => (err ? j(err) : r()));
      else pack.entry(h, (err) => (err ? j(err) : r()));
    });
  }
  pack.finalize();
  await done;
}

const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

describe('flashing real local boards', () => {
  let t: TestApp;
  let u: TestUser;
  let other: TestUser;
  const clock = new ManualClock(Date.now());
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-flash-'));
  const notices: { userId: string; kind: string; data: Record<string, unknown> }[] = [];
  const held: Record<string, string> = {};

  // The service runs with umask 077 (src/server/main.ts): boards' own files must not inherit it.
  const umask = process.umask(0o077);

  beforeAll(async () => {
    // A minimal root with /etc/passwd (what a flashed board needs), and random bytes that do not fit a small disk.
    await makeArchive(path.join(work, 'k1.tar.gz'), [
      { name: 'etc/', type: 'directory' },
      {
        name: 'etc/passwd',
        body: 'root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n',
      },
      { name: 'etc/os-release', body: 'PRETTY_NAME="K1 lab image"\n' },
      { name: 'etc/bianbu-image', body: 'k1-lab\n' },
      { name: 'opt/k1/only-in-k1.txt', body: 'k1' },
      { name: 'opt/k1/blob.bin', body: crypto.randomBytes(24 * 1024 * 1024) },
      { name: 'opt/k1/link', type: 'symlink', linkname: 'only-in-k1.txt' },
    ]);
    const lab = {
      images: [
        {
          tag: 'k1-lab',
          name: 'K1 lab image',
          osVersion: '1.0',
          models: ['K1'],
          path: path.join(work, 'k1.tar.gz'),
        },
      ],
      boards: ['a', 'b', 'c', 'small', 'other'].map((n) => ({
        id: `fl-${n}`,
        name: `fl-${n}`,
        model: n === 'other' ? 'Other' : 'K1',
        attributes: { os: 'Bianbu 2.0', group: n === 'other' ? 'other' : 'k1', slot: n },
        driver: 'local',
        options: { memoryMb: 256, diskQuotaMb: n === 'small' ? 20 : 96, maxProcesses: 256 },
      })),
    };
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(labFile, JSON.stringify(lab));
    t = await makeTestApp({
      clock,
      env: {
        BIANBU_LAB_FILE: labFile,
        BIANBU_LEASE_TICK_MS: '0',
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
        BIANBU_FLASH_CONCURRENCY: '2',
      },
    });
    const publish = t.app.realtime.publishToUser.bind(t.app.realtime);
    t.app.realtime.publishToUser = (userId, n) => {
      notices.push({ userId, kind: n.kind, data: (n.data ?? {}) as Record<string, unknown> });
      publish(userId, n);
    };
    u = await makeUser(t.app);
    other = await makeUser(t.app);
    for (const slot of ['a', 'b', 'c', 'small', 'other']) {
      const lease = await call(t.app, u, 'POST', '/api/device/request-device', {
        requestDate: endIn(clock.now(), H48),
        filterReq: { slot },
        serverName: `s-${slot}`,
      });
      expect(lease.code, JSON.stringify(lease)).toBe(20000);
      held[slot] = lease.data.deviceId;
    }
  }, 120_000);
  afterAll(async () => {
    process.umask(umask);
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  async function waitFinal(
    deviceId: string,
    timeoutMs = 90_000,
  ): Promise<{ job: FlashJobDto; log: string[]; seen: Set<string> }> {
    const seen = new Set<string>();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await call(t.app, u, 'GET', '/api/device/fetch-flash-job', { deviceId });
      expect(r.code, JSON.stringify(r)).toBe(20000);
      const job = r.data.job as FlashJobDto;
      seen.add(`${job.state}/${job.stage}`);
      if (['SUCCESS', 'FAILURE', 'CANCELLED'].includes(job.state)) return { job, log: r.data.log, seen };
      if (Date.now() > deadline) throw new Error(`job still ${job.state}/${job.stage}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  const post = (deviceId: string, tag: string, who = u) =>
    call(t.app, who, 'POST', '/api/device/post-flash', { applyId: null, flashImageTag: tag, deviceId });

  it('lists the built-in and lab images with size, sha256 and whether each fits the board', async () => {
    const r = await call(t.app, u, 'GET', '/api/device/flash-images', { deviceId: held.other });
    expect(r.code).toBe(20000);
    const tags = r.data.items.map((i: { tag: string }) => i.tag);
    expect(tags).toEqual(expect.arrayContaining(['bianbu-minimal', 'bianbu-developer', 'k1-lab']));
    const dev = r.data.items.find((i: { tag: string }) => i.tag === 'bianbu-developer');
    expect(dev.sha256).toBe(sha256(path.join(t.dataDir, 'images/builtin/bianbu-developer.tar.gz')));
    expect(dev.fits).toBe(true);
    expect(r.data.items.find((i: { tag: string }) => i.tag === 'k1-lab').fits).toBe(false);
    expect(r.data.quota.limitBytes).toBe(2048 * 1024 * 1024);
  });

  it('flashes a held board: stages in order, verified, booted on the new image, shown in its os attribute and history', async () => {
    const deviceId = held.a;
    const driver = t.app.boards.driver(deviceId);
    const mode = async (p: string) => (await driver.files.stat(p)).mode & 0o7777;
    // the default image, built by a service whose umask is 077, is readable by the board's user
    expect([
      await mode('/'),
      await mode('/etc'),
      await mode('/etc/passwd'),
      await mode('/etc/shadow'),
    ]).toEqual([0o755, 0o755, 0o644, 0o640]);
    await driver.files.write('/root/old.txt', 'from the old image');
    const serial = await driver.openSerial({ cols: 120, rows: 40 });
    let console = '';
    serial.onData((b) => {
      console += b.toString();
    });
    const before = notices.length;
    const r = await post(deviceId, 'bianbu-developer');
    expect(r.code, JSON.stringify(r)).toBe(20000);
    expect(r.data.state).toBe('PENDING');
    expect((await post(deviceId, 'bianbu-developer')).error).toBe('flash.already_flashing');
    const { job, log } = await waitFinal(deviceId);
    expect(job.state, JSON.stringify(job)).toBe('SUCCESS');
    expect(job.stage).toBe('done');
    expect(job.percent).toBe(100);
    expect(job.durationMs).toBeGreaterThan(0);
    const stages = log.map((l) => /stage (\w+)/.exec(l)?.[1]).filter(Boolean);
    expect(stages).toEqual(['transfer', 'write', 'verify', 'boot']);
    expect(log.join('\n')).toMatch(/sha256 matches/);
    expect(log.join('\n')).toMatch(/verified \d+ entries/);
    // the new image, and nothing of the old one
    expect((await driver.files.read('/etc/bianbu-image')).toString()).toBe('bianbu-developer\n');
    expect((await driver.files.read('/opt/bianbu-developer/README')).toString()).toMatch(/developer image/);
    // modes are the image's, whatever the service's umask
    expect([
      await mode('/etc/passwd'),
      await mode('/opt/bianbu-developer'),
      await mode('/opt/bianbu-developer/bin/board-info'),
    ]).toEqual([0o644, 0o755, 0o755]);
    await expect(driver.files.read('/root/old.txt')).rejects.toThrow();
    expect(await boardState(t.app, deviceId)).toBe('leased');
    const dto = await call(t.app, u, 'GET', '/api/device/fetch-request-device');
    expect(dto.data.items.find((l: { deviceId: string }) => l.deviceId === deviceId).attributes.os).toBe(
      'Bianbu 2.0 developer',
    );
    // the serial console stayed open and shows the boot of the new image
    await new Promise((res) => setTimeout(res, 200));
    expect(console).toMatch(/writing image: Bianbu 2.0 developer/);
    expect(console).toMatch(/Loading image: Bianbu 2.0 developer/);
    expect(console).toMatch(/Bianbu 2\.0 Developer fl-a ttyS0/);
    serial.close();
    // progress reached the user live, ending with one success notice
    const mine = notices.slice(before).filter((n) => n.userId === u.id);
    expect(mine.filter((n) => n.kind === 'flash.progress').length).toBeGreaterThan(3);
    expect(mine.filter((n) => n.kind === 'flash.succeeded')).toHaveLength(1);
    const hist = await call(t.app, u, 'GET', '/api/device/flash-history', { deviceId });
    expect(hist.data.items[0]).toMatchObject({
      jobId: job.jobId,
      imageTag: 'bianbu-developer',
      state: 'SUCCESS',
      userId: u.id,
    });
  }, 120_000);

  it('refuses unknown images, images that do not fit, boards the caller does not hold', async () => {
    expect((await post(held.b, 'no-such-image')).error).toBe('flash.image_unknown');
    const unfit = await post(held.other, 'k1-lab');
    expect(unfit.status).toBe(400);
    expect(unfit.error).toBe('flash.image_unfit');
    expect((await post(held.b, 'bianbu-minimal', other)).error).toBe('device.not_held');
    expect((await call(t.app, other, 'GET', '/api/device/fetch-flash-job', { deviceId: held.a })).error).toBe(
      'device.not_held',
    );
    expect(
      (await call(t.app, u, 'POST', '/api/device/post-flash', { flashImageTag: '../x', deviceId: held.b }))
        .status,
    ).toBe(400);
  });

  it('flashes several boards at once: the one whose disk is too small fails, the others succeed and say so', async () => {
    const r = await call(t.app, u, 'POST', '/api/device/post-multi-flash', {
      flashImageTag: 'k1-lab',
      devices: [
        { deviceId: held.b },
        { deviceId: held.c },
        { deviceId: held.small },
        { deviceId: held.other },
      ],
    });
    expect(r.code, JSON.stringify(r)).toBe(20000);
    const byDevice = Object.fromEntries(r.data.results.map((x: { deviceId: string }) => [x.deviceId, x]));
    expect(byDevice[held.other].errorKey).toBe('flash.image_unfit');
    expect(byDevice[held.b].job.state).toBe('PENDING');
    const results = await Promise.all([held.b, held.c, held.small].map((d) => waitFinal(d)));
    expect(results.map((x) => x.job.state)).toEqual(['SUCCESS', 'SUCCESS', 'FAILURE']);
    expect(results[2].job.errorKey).toBe('flash.no_space');
    const multi = await call(t.app, u, 'POST', '/api/device/fetch-multi-flash-job', {
      multiIds: [r.data.multiId],
    });
    expect(multi.data.jobs.map((j: FlashJobDto) => j.state).sort()).toEqual([
      'FAILURE',
      'SUCCESS',
      'SUCCESS',
    ]);
    for (const d of [held.b, held.c]) {
      expect((await t.app.boards.driver(d).files.read('/opt/k1/only-in-k1.txt')).toString()).toBe('k1');
      expect(await t.app.boards.driver(d).files.readlink('/opt/k1/link')).toBe('only-in-k1.txt');
    }
    // the board that failed kept its image and runs
    const small = t.app.boards.driver(held.small);
    await small.probe(5000);
    expect((await small.files.read('/etc/os-release')).toString()).toMatch(/Bianbu/);
    expect(await boardState(t.app, held.small)).toBe('leased');
  }, 180_000);

  it('refuses a corrupt or truncated image before writing, and an archive that leaves the root', async () => {
    const deviceId = held.c;
    const driver = t.app.boards.driver(deviceId);
    await driver.files.write('/root/keep.txt', 'kept');
    const copy = path.join(work, 'k1-copy.tar.gz');
    fs.copyFileSync(path.join(work, 'k1.tar.gz'), copy);
    await t.app.storage.query(
      `insert into flash_images (tag, name, format, size, sha256, path, source, created_at) values ('k1-copy', 'copy', 'tar.gz', $1, $2, $3, 'lab', now())`,
      [fs.statSync(copy).size, sha256(copy), copy],
    );
    // one byte changed, same size
    const fd = fs.openSync(copy, 'r+');
    fs.writeSync(fd, Buffer.from([0x42]), 0, 1, 1000);
    fs.closeSync(fd);
    expect((await post(deviceId, 'k1-copy')).code).toBe(20000);
    let { job } = await waitFinal(deviceId);
    expect(job.errorKey).toBe('flash.image_corrupt');
    expect(job.errorMessage).toMatch(/sha256/);
    // truncated
    fs.truncateSync(copy, 4096);
    expect((await post(deviceId, 'k1-copy')).code).toBe(20000);
    ({ job } = await waitFinal(deviceId));
    expect(job.errorKey).toBe('flash.image_corrupt');
    expect(job.errorMessage).toMatch(/truncated/);
    // escaping names and links pointing out
    const evil = path.join(work, 'evil.tar.gz');
    const outside = path.join(work, 'written-outside');
    await makeArchive(evil, [
      { name: 'etc/passwd', body: 'root:x:0:0::/root:/bin/sh\n' },
      { name: 'out', type: 'symlink', linkname: work },
      { name: 'out/written-outside', body: 'pwned' },
    ]);
    await t.app.storage.query(
      `insert into flash_images (tag, name, format, size, sha256, path, source, created_at) values ('evil', 'evil', 'tar.gz', $1, $2, $3, 'lab', now())`,
      [fs.statSync(evil).size, sha256(evil), evil],
    );
    expect((await post(deviceId, 'evil')).code).toBe(20000);
    ({ job } = await waitFinal(deviceId));
    expect(job.state).toBe('FAILURE');
    expect(job.errorKey).toMatch(/^(flash\.image_invalid|path\.outside_root)$/);
    expect(fs.existsSync(outside)).toBe(false);
    expect((await driver.files.read('/root/keep.txt')).toString()).toBe('kept');
    await driver.probe(5000);
    expect(await boardState(t.app, deviceId)).toBe('leased');
  }, 120_000);

  it('runs at most BIANBU_FLASH_CONCURRENCY jobs at once, and cancels a job that has not started writing', async () => {
    const r = await call(t.app, u, 'POST', '/api/device/post-multi-flash', {
      flashImageTag: 'bianbu-minimal',
      devices: [{ deviceId: held.a }, { deviceId: held.b }, { deviceId: held.c }],
    });
    const jobs = r.data.results.map((x: { job: FlashJobDto }) => x.job);
    // two run, the third waits its turn
    await new Promise((res) => setTimeout(res, 30));
    const now = (
      await call(t.app, u, 'POST', '/api/device/fetch-multi-flash-job', { multiIds: r.data.multiId })
    ).data.jobs as FlashJobDto[];
    expect(now.filter((j) => j.state === 'RUNNING').length).toBeLessThanOrEqual(2);
    const third = now.find((j) => j.deviceId === held.c)!;
    expect(third.state).toBe('PENDING');
    const cancelled = await call(t.app, u, 'POST', '/api/device/cancel-flash-job', { jobId: jobs[2].jobId });
    expect(cancelled.data.state).toBe('CANCELLED');
    expect(cancelled.data.errorKey).toBe('flash.cancelled');
    expect(
      (await call(t.app, other, 'POST', '/api/device/cancel-flash-job', { jobId: jobs[0].jobId })).error,
    ).toBe('flash.job_unknown');
    const done = await Promise.all([held.a, held.b].map((d) => waitFinal(d)));
    expect(
      done.map((d) => d.job.state),
      JSON.stringify(done.map((d) => [d.job.errorKey, d.job.errorMessage])),
    ).toEqual(['SUCCESS', 'SUCCESS']);
    expect(
      (await call(t.app, u, 'POST', '/api/device/cancel-flash-job', { jobId: jobs[0].jobId })).error,
    ).toBe('flash.not_cancellable');
    expect(await boardState(t.app, held.c)).toBe('leased');
  }, 120_000);

  it('locks the board while flashing: no power reset, no release, no new session', async () => {
    const deviceId = held.b;
    expect((await post(deviceId, 'k1-lab')).code).toBe(20000);
    for (let i = 0; i < 200 && (await boardState(t.app, deviceId)) !== 'flashing'; i++)
      await new Promise((res) => setTimeout(res, 10));
    expect(await boardState(t.app, deviceId)).toBe('flashing');
    expect(
      (await call(t.app, u, 'POST', '/api/device/unlock-request-device', { deviceId, serverName: 's-b' }))
        .error,
    ).toBe('board.busy');
    expect((await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId })).error).toBe('board.busy');
    const { job } = await waitFinal(deviceId);
    expect(job.state).toBe('SUCCESS');
    expect((await call(t.app, u, 'POST', '/api/device/apply-device', { deviceId })).code).toBe(20000);
  }, 120_000);

  it('stops a job whose lease ends, and the board is restored and freed', async () => {
    const deviceId = held.a;
    expect((await post(deviceId, 'k1-lab')).code).toBe(20000);
    for (let i = 0; i < 400 && (await boardState(t.app, deviceId)) !== 'flashing'; i++)
      await new Promise((res) => setTimeout(res, 10));
    await call(t.app, u, 'POST', '/api/device/unlock-request-device', { deviceId, serverName: 's-a' }).then(
      (r) => expect(r.error).toBe('board.busy'),
    );
    clock.advance(H48);
    await t.app.leaseScheduler.tick();
    const { job } = await waitFinal(deviceId);
    expect(job.state).toBe('FAILURE');
    expect(job.errorKey).toBe('flash.lease_ended');
    await t.app.leases.drain();
    expect(await boardState(t.app, deviceId)).toBe('idle');
    const rows = await t.app.storage.query<{ attributes: { os: string } }>(
      'select attributes from boards where id = $1',
      [deviceId],
    );
    expect(rows[0].attributes.os).toBe('Bianbu 2.0');
  }, 120_000);
});
