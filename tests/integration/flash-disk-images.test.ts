// Raw disk images in the image catalogue on the real service (issue 35): the built-in Debian riscv64
// disk images found where build.sh leaves them (a fake build here: a tiny GPT disk, zstd'd, and the
// .json of its facts), catalogued in place with their facts and only when the file is what its .json
// says; an image fits a board only when the board's driver takes its kind (a sandbox board a root file
// system archive, a QEMU board a disk, an ssh board either); uploads of raw disks in every format,
// told by their bytes. No QEMU board is started: the QEMU and ssh boards here are rows only.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DriverError, type FlashOptions } from '#server/boards/driver.ts';
import type { FlashImageDto } from '#shared/flash.ts';
import { multipart } from './files.fixtures.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { call, endIn, H48 } from './leases.fixtures.ts';

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
const MINIMAL = 'debian-trixie-riscv64-minimal';
const DEVELOPER = 'debian-trixie-riscv64-developer';
const OS = 'Debian GNU/Linux 13 (trixie)';
const KERNEL = '6.12.117+deb13-riscv64';

/** A raw disk of `mib` MiB with a GPT and one Linux partition, made as build.sh makes its disks. */
function gptDisk(file: string, mib: number): Buffer {
  execFileSync('truncate', ['-s', `${mib}M`, file]);
  execFileSync('sfdisk', ['-q', file], { input: 'label: gpt\n,,L\n' });
  // some bytes in the partition, so that compressed files differ from one disk to the next
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, crypto.randomBytes(4096), 0, 4096, 1024 * 1024 + 4096);
  fs.closeSync(fd);
  return fs.readFileSync(file);
}

/** A variant as build.sh leaves it: <name>.img.zst and <name>.json with the facts of the file. */
function fakeBuild(dir: string, variant: 'minimal' | 'developer', lie?: { fileSha256: string }) {
  const name = `debian-trixie-riscv64-${variant}`;
  const raw = path.join(dir, `${name}.img`);
  const disk = gptDisk(raw, 3);
  execFileSync('zstd', ['-q', '-f', '--rm', raw, '-o', path.join(dir, `${name}.img.zst`)]);
  const zst = fs.readFileSync(path.join(dir, `${name}.img.zst`));
  const facts = {
    name,
    variant,
    arch: 'riscv64',
    os: OS,
    kernel: KERNEL,
    hostname: 'riscv-board',
    packages: variant === 'minimal' ? 135 : 262,
    rootUuid: crypto.randomUUID(),
    rawBytes: disk.length,
    rawAllocatedBytes: 8192,
    rawSha256: sha(disk),
    initrdBytes: 10485760,
    file: `${name}.img.zst`,
    fileBytes: zst.length,
    fileSha256: lie?.fileSha256 ?? sha(zst),
    builtAt: new Date().toISOString(),
    buildSeconds: { bootstrap: 1 },
    recipe: '58e9632e11edc361',
  };
  fs.writeFileSync(path.join(dir, `${name}.json`), `${JSON.stringify(facts, null, 2)}\n`);
  return { zst, disk, facts };
}

describe('raw disk images in the catalogue', () => {
  let t: TestApp;
  let u: TestUser;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-disk-images-'));
  const boardDir = path.join(work, 'board');
  let minimal: ReturnType<typeof fakeBuild>;
  let local = '';
  // The service runs with umask 077 (src/server/main.ts): boards' own files must not inherit it.
  const umask = process.umask(0o077);

  beforeAll(async () => {
    fs.mkdirSync(boardDir);
    minimal = fakeBuild(boardDir, 'minimal');
    // the developer image's .json does not describe its file (a rebuild caught half way, or tampering)
    fakeBuild(boardDir, 'developer', { fileSha256: 'c'.repeat(64) });
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(
      labFile,
      JSON.stringify({
        boards: [
          {
            id: 'dk-local',
            name: 'dk-local',
            model: 'K1',
            attributes: { os: 'Bianbu 2.0', slot: 'dk' },
            driver: 'local',
            options: { memoryMb: 256, diskQuotaMb: 64, maxProcesses: 256 },
          },
        ],
      }),
    );
    t = await makeTestApp({
      env: {
        BIANBU_LAB_FILE: labFile,
        BIANBU_BOARD_IMAGES: boardDir,
        BIANBU_LEASE_TICK_MS: '0',
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    u = await makeUser(t.app, { perms: ['device.add_flash', 'device.view_flash'] });
    const lease = await call(t.app, u, 'POST', '/api/device/request-device', {
      requestDate: endIn(t.app.clock.now(), H48),
      filterReq: { slot: 'dk' },
      serverName: 's-dk',
    });
    expect(lease.code, JSON.stringify(lease)).toBe(20000);
    local = lease.data.deviceId;
    // A QEMU board and an ssh board as rows only: no driver of theirs runs, nobody may lease them.
    for (const [id, driver] of [
      ['dk-qemu', 'qemu'],
      ['dk-ssh', 'ssh'],
    ])
      await t.app.storage.query(
        `insert into boards (id, name, model, driver, state) values ($1, $1, 'K1', $2, 'offline')`,
        [id, driver],
      );
  }, 120_000);
  afterAll(async () => {
    process.umask(umask);
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const catalogue = async (deviceId?: string): Promise<FlashImageDto[]> => {
    const r = await call(t.app, u, 'GET', '/api/device/flash-images', deviceId ? { deviceId } : {});
    expect(r.code, JSON.stringify(r)).toBe(20000);
    return r.data.items;
  };

  const upload = (tag: string, fileName: string, data: Buffer) => {
    const m = multipart({ tag, name: tag }, [{ name: fileName, data }]);
    return t.app
      .inject({
        method: 'POST',
        url: '/api/device/upload-flash-image',
        payload: m.body,
        headers: { ...u.headers, ...m.headers },
      })
      .then((r) => ({ status: r.statusCode, ...r.json() }));
  };

  it('catalogues the built disk image in place, with its facts, and leaves out the one its .json does not describe', async () => {
    const items = await catalogue();
    const img = items.find((i) => i.tag === MINIMAL);
    expect(img, JSON.stringify(items.map((i) => i.tag))).toBeDefined();
    expect(img).toMatchObject({
      name: 'Debian 13 riscv64 minimal',
      osVersion: OS,
      format: 'img.zst',
      size: minimal.zst.length,
      sha256: sha(minimal.zst),
      source: 'builtin',
      ownerId: null,
      models: [],
      facts: {
        arch: 'riscv64',
        os: OS,
        kernel: KERNEL,
        rawBytes: 3 * 1024 * 1024,
        rawSha256: sha(minimal.disk),
      },
    });
    expect(img!.description).toContain(KERNEL);
    expect(Object.keys(img!.facts!).sort()).toEqual(['arch', 'kernel', 'os', 'rawBytes', 'rawSha256']);
    // used where build.sh left it: no copy
    expect((await t.app.flash.images.get(MINIMAL))!.path).toBe(path.join(boardDir, `${MINIMAL}.img.zst`));
    expect(items.map((i) => i.tag)).not.toContain(DEVELOPER);
    // its tag stays the built-in image's: an upload never takes it, even before the image is built
    const squat = await upload(DEVELOPER, 'x.img.zst', minimal.zst);
    expect(squat.error, JSON.stringify(squat)).toBe('flash.tag_taken');
    // the tar images have no facts
    expect(items.find((i) => i.tag === 'bianbu-minimal')).not.toHaveProperty('facts');
  });

  it('catalogues a disk image built after the start when asked again, and nothing when none is there', async () => {
    const dev = fakeBuild(boardDir, 'developer');
    expect((await t.app.flash.registerBoardImages()).sort()).toEqual([DEVELOPER, MINIMAL]);
    const img = (await catalogue()).find((i) => i.tag === DEVELOPER);
    expect(img).toMatchObject({
      name: 'Debian 13 riscv64 developer',
      format: 'img.zst',
      sha256: sha(dev.zst),
      facts: { kernel: KERNEL, rawSha256: sha(dev.disk) },
    });
    expect(img!.description).toMatch(/gcc, make, git, python3, build-essential/);
    // a directory without images: nothing catalogued, no error, the catalogued ones stay
    const away = path.join(work, 'away');
    fs.renameSync(boardDir, away);
    try {
      expect(await t.app.flash.registerBoardImages()).toEqual([]);
    } finally {
      fs.renameSync(away, boardDir);
    }
    expect((await catalogue()).map((i) => i.tag)).toEqual(expect.arrayContaining([MINIMAL, DEVELOPER]));
  });

  it('marks disk images unfit and archives fit for a sandbox board, the reverse for a QEMU board, both fit for ssh', async () => {
    const fit = (items: FlashImageDto[]) =>
      Object.fromEntries(
        items.filter((i) => [MINIMAL, 'bianbu-minimal'].includes(i.tag)).map((i) => [i.tag, i.fits]),
      );
    expect(fit(await catalogue(local))).toEqual({ [MINIMAL]: false, 'bianbu-minimal': true });
    expect(fit(await catalogue('dk-qemu'))).toEqual({ [MINIMAL]: true, 'bianbu-minimal': false });
    expect(fit(await catalogue('dk-ssh'))).toEqual({ [MINIMAL]: true, 'bianbu-minimal': true });
  });

  it('refuses to flash a disk image onto a sandbox board, with its own error key, and starts no job', async () => {
    const r = await call(t.app, u, 'POST', '/api/device/post-flash', {
      applyId: null,
      flashImageTag: MINIMAL,
      deviceId: local,
    });
    expect(r.status).toBe(400);
    expect(r.error).toBe('flash.image_kind_mismatch');
    expect(r.message).toMatch(/raw disk image/);
    const multi = await call(t.app, u, 'POST', '/api/device/post-multi-flash', {
      flashImageTag: MINIMAL,
      devices: [{ deviceId: local }],
    });
    expect(multi.data.results[0].errorKey).toBe('flash.image_kind_mismatch');
    const jobs = await t.app.storage.query('select id from flash_jobs where board_id = $1', [local]);
    expect(jobs).toEqual([]);
  });

  it("passes the image's format to the driver's flash", async () => {
    const driver = t.app.boards.driver(local);
    const flash = driver.flash;
    const seen: (FlashOptions | undefined)[] = [];
    // the driver's own flash is not what is under test: it stops at once, the board keeps its image
    driver.flash = async (_image, _progress, opts) => {
      seen.push(opts);
      throw new DriverError('flash.tool_failed', 'stopped by the test');
    };
    try {
      const r = await call(t.app, u, 'POST', '/api/device/post-flash', {
        applyId: null,
        flashImageTag: 'bianbu-minimal',
        deviceId: local,
      });
      expect(r.code, JSON.stringify(r)).toBe(20000);
      for (let i = 0; i < 400; i++) {
        const job = (await call(t.app, u, 'GET', '/api/device/fetch-flash-job', { deviceId: local })).data
          .job;
        if (['SUCCESS', 'FAILURE', 'CANCELLED'].includes(job.state)) break;
        await new Promise((res) => setTimeout(res, 50));
      }
    } finally {
      driver.flash = flash;
    }
    expect(seen.map((o) => o?.format)).toEqual(['tar.gz']);
  });

  it('takes uploads of raw disks in every format, told by their bytes, and records the format', async () => {
    const raw = gptDisk(path.join(work, 'up.img'), 2);
    const packed = (tool: string, args: string[]) =>
      execFileSync(tool, args, { input: raw, maxBuffer: 1 << 26 });
    const cases: [string, string, Buffer][] = [
      ['img', 'disk.img', raw],
      ['img.gz', 'disk.img.gz', packed('gzip', ['-c'])],
      ['img.xz', 'disk.img.xz', packed('xz', ['-c', '-0'])],
      // the name says tar.gz: the bytes say a zstd'd disk
      ['img.zst', 'disk.tar.gz', packed('zstd', ['-q', '-c'])],
    ];
    for (const [format, fileName, data] of cases) {
      const tag = `up-${format.replace('.', '-')}`;
      const r = await upload(tag, fileName, data);
      expect(r.code, `${format}: ${JSON.stringify(r)}`).toBe(20000);
      expect(r.data).toMatchObject({ tag, format, size: data.length, sha256: sha(data), source: 'user' });
      const row = await t.app.flash.images.get(tag);
      expect(row!.format).toBe(format);
      expect(path.basename(row!.path)).toBe(`${tag}.${format}`);
    }
    // an uploaded disk image fits the QEMU board, not the sandbox one
    const fits = async (deviceId: string) =>
      (await catalogue(deviceId)).find((i) => i.tag === 'up-img')?.fits;
    expect([await fits('dk-qemu'), await fits(local)]).toEqual([true, false]);
  });

  it('refuses random bytes named x.img with a message naming every accepted format, and keeps nothing', async () => {
    const before = fs.readdirSync(path.join(t.dataDir, 'images', 'uploads')).sort();
    const r = await upload('random-img', 'x.img', crypto.randomBytes(64 * 1024));
    expect(r.status).toBe(400);
    expect(r.error).toBe('flash.image_invalid');
    for (const ext of ['.tar', '.tar.gz', '.img', '.img.gz', '.img.xz', '.img.zst'])
      expect(r.message).toContain(ext);
    expect(fs.readdirSync(path.join(t.dataDir, 'images', 'uploads')).sort()).toEqual(before);
    expect(await t.app.flash.images.get('random-img')).toBeNull();
  });
});
