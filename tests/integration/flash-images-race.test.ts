// The image catalogue under races, on the real service over real sockets: parallel uploads by one
// user never store more than the quota, two users racing for one tag leave exactly one image whose
// file is whole, and an upload cut short by a SIGKILL leaves nothing behind the next start.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '#server/app.ts';
import { testConfig } from '#server/config.ts';
import { listen, multipart, multipartHead } from './files.fixtures.ts';
import { freshStorage, makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { call } from './leases.fixtures.ts';

/** A tar.gz of about `bytes` bytes: incompressible content, so the archive is as large as asked. */
async function archive(bytes: number): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const gz = pack.pipe(zlib.createGzip({ level: 1 }));
  gz.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((r) => gz.on('end', () => r()));
  pack.entry({ name: 'etc/passwd' }, 'root:x:0:0::/root:/bin/sh\n');
  pack.entry({ name: 'data/blob.bin' }, crypto.randomBytes(bytes));
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** One upload over a connection of its own (none kept alive), as parallel browsers or CLIs send them. */
function upload(port: number, who: TestUser, fields: Record<string, string>, data: Buffer) {
  const m = multipart(fields, [{ name: 'image.tar.gz', data }]);
  return new Promise<{ status: number; code: number; error?: string }>((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/device/upload-flash-image',
        agent: false,
        headers: { ...who.headers, ...m.headers, 'content-length': String(m.body.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, ...JSON.parse(Buffer.concat(chunks).toString()) }),
        );
        res.on('error', reject);
      },
    );
    // the service may answer (a refusal) before it has read the whole body
    req.on('error', reject);
    req.end(m.body);
  });
}

const uploadsOf = (dataDir: string) => path.join(dataDir, 'images', 'uploads');
const noBoards = (dir: string) => {
  const file = path.join(dir, 'lab.yaml');
  fs.writeFileSync(file, JSON.stringify({ boards: [], images: [] }));
  return file;
};

describe('the image catalogue under races', () => {
  let t: TestApp;
  let port: number;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-images-race-'));

  beforeAll(async () => {
    t = await makeTestApp({ env: { BIANBU_LAB_FILE: noBoards(work), BIANBU_FLASH_USER_QUOTA_MB: '1' } });
    port = await listen(t.app);
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('stores at most what fits of six parallel uploads by one user, refusing the rest with flash.quota_exceeded', async () => {
    const dev = await makeUser(t.app, { perms: ['device.add_flash', 'device.view_flash'] });
    const quota = 1024 * 1024;
    const images = await Promise.all(Array.from({ length: 6 }, () => archive(900_000)));
    expect(images[0].length).toBeGreaterThan(quota / 2);
    expect(images[0].length).toBeLessThan(quota);
    const results = await Promise.all(
      images.map((data, i) => upload(port, dev, { tag: `par-${i}`, name: `Parallel ${i}` }, data)),
    );
    const stored = results.filter((r) => r.code === 20000);
    const refused = results.filter((r) => r.code !== 20000);
    // two of them do not fit together: exactly one is stored
    expect(stored, JSON.stringify(results.map((r) => [r.status, r.error]))).toHaveLength(1);
    for (const r of refused) {
      expect(r.status).toBe(413);
      expect(r.error).toBe('flash.quota_exceeded');
    }
    const list = await call(t.app, dev, 'GET', '/api/device/flash-images');
    expect(list.data.quota.usedBytes).toBeLessThanOrEqual(quota);
    expect(list.data.items.filter((i: { ownerId: string }) => i.ownerId === dev.id)).toHaveLength(1);
    const onDisk = fs
      .readdirSync(uploadsOf(t.dataDir))
      .reduce((sum, n) => sum + fs.statSync(path.join(uploadsOf(t.dataDir), n)).size, 0);
    expect(onDisk).toBeLessThanOrEqual(quota);
    expect(fs.readdirSync(uploadsOf(t.dataDir)).filter((n) => n.startsWith('.upload-'))).toEqual([]);
  });

  it('gives a tag two users race for to exactly one of them, whose file stays whole; the other gets flash.tag_taken', async () => {
    const perms = ['device.add_flash', 'device.view_flash'];
    for (let round = 0; round < 4; round++) {
      const a = await makeUser(t.app, { perms });
      const b = await makeUser(t.app, { perms });
      const [imgA, imgB] = await Promise.all([archive(600_000), archive(600_000)]);
      const tag = `same-tag-${round}`;
      const [ra, rb] = await Promise.all([
        upload(port, a, { tag, name: 'A' }, imgA),
        upload(port, b, { tag, name: 'B' }, imgB),
      ]);
      const outcome = JSON.stringify([
        [ra.status, ra.error],
        [rb.status, rb.error],
      ]);
      expect(
        [ra.code, rb.code].filter((c) => c === 20000),
        outcome,
      ).toHaveLength(1);
      const [winner, loser, winnerImage] = ra.code === 20000 ? [a, rb, imgA] : [b, ra, imgB];
      expect(loser.status, outcome).toBe(409);
      expect(loser.error).toBe('flash.tag_taken');
      const row = await t.app.flash.images.get(tag);
      expect(row?.owner_id).toBe(winner.id);
      expect(row?.sha256).toBe(sha(winnerImage));
      expect(fs.existsSync(row!.path), `the winner's file ${row!.path}`).toBe(true);
      expect(sha(fs.readFileSync(row!.path))).toBe(sha(winnerImage));
      // and it flashes: the catalogue takes it as the winner's
      await expect(t.app.flash.images.usable(tag, winner.id)).resolves.toMatchObject({ tag });
    }
    expect(fs.readdirSync(uploadsOf(t.dataDir)).filter((n) => n.startsWith('.upload-'))).toEqual([]);
  });
});

describe('an upload cut short by a killed service', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-upload-crash-'));
  const dataDir = path.join(work, 'data');
  let app: Awaited<ReturnType<typeof buildApp>> | null = null;
  let drop: (() => Promise<void>) | null = null;
  afterAll(async () => {
    await app?.close(); // and its storage, which it opened
    await drop?.();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('leaves no temporary file, no tag and no quota taken after the next start', async () => {
    const labFile = noBoards(work);
    let databaseUrl: string | undefined;
    if (process.env.DATABASE_URL) {
      const fresh = await freshStorage();
      await fresh.storage.close();
      databaseUrl = fresh.url;
      drop = fresh.drop;
    }
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(import.meta.dirname, 'helpers', 'upload-then-die.ts')],
      {
        cwd: process.cwd(),
        env: { ...process.env, BIANBU_CRASH_UPLOAD: JSON.stringify({ dataDir, labFile, databaseUrl }) },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let output = '';
    const [port, userId, token] = await new Promise<string[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the service never started: ${output}`)), 180_000);
      child.stdout.on('data', (b: Buffer) => {
        output += b.toString();
        const m = /READY (\d+) (\S+) (\S+)/.exec(output);
        if (m) {
          clearTimeout(timer);
          resolve(m.slice(1));
        }
      });
      child.once('exit', (code) => reject(new Error(`the service exited (${code}): ${output}`)));
    });
    // Half of a 3 MB image, then nothing: the service is killed while it waits for the rest.
    const image = await archive(3_000_000);
    const m = multipartHead({ tag: 'cut-short', name: 'Cut short' }, 'image.tar.gz');
    const socket = net.connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((r) => socket.once('connect', () => r()));
    socket.write(
      `POST /api/device/upload-flash-image HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${token}\r\n` +
        `Content-Type: ${m.contentType}\r\nContent-Length: ${m.head.length + image.length + m.tail.length}\r\n\r\n`,
    );
    socket.write(m.head);
    socket.write(image.subarray(0, image.length >> 1));
    const uploads = uploadsOf(dataDir);
    const partial = () =>
      (fs.existsSync(uploads) ? fs.readdirSync(uploads) : []).filter(
        (n) => n.startsWith('.upload-') && fs.statSync(path.join(uploads, n)).size > 1_000_000,
      );
    for (let i = 0; i < 600 && partial().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(partial()).toHaveLength(1);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    socket.destroy();
    expect(partial()).toHaveLength(1);

    app = await buildApp({
      config: testConfig({
        BIANBU_DATA_DIR: dataDir,
        BIANBU_LAB_FILE: labFile,
        BIANBU_FLASH_USER_QUOTA_MB: '4',
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      }),
      logger: false,
    });
    await app.ready();
    expect(fs.readdirSync(uploads).filter((n) => n.startsWith('.upload-'))).toEqual([]);
    const who = { id: userId, username: '', token, headers: { authorization: token } };
    const list = await call(app, who, 'GET', '/api/device/flash-images');
    expect(list.data.quota.usedBytes).toBe(0);
    // the tag is free again: the whole image fits in the quota under it
    const again = await listen(app).then((p) => upload(p, who, { tag: 'cut-short', name: 'Again' }, image));
    expect(again.code, JSON.stringify(again)).toBe(20000);
    expect(fs.readdirSync(uploads).filter((n) => n.startsWith('.upload-'))).toEqual([]);
  }, 360_000);
});
