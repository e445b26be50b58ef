// The image catalogue's uploads and retirement on the real service: a private image within the
// user's quota, a public one only with device.add_image, the form's sha256 checked, files that are
// not images refused, someone else's private image invisible, a retired image no longer flashable.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipart } from './files.fixtures.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';
import { call } from './leases.fixtures.ts';

async function archive(files: Record<string, Buffer | string>): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const gz = pack.pipe(zlib.createGzip());
  gz.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((r) => gz.on('end', () => r()));
  for (const [name, body] of Object.entries(files)) pack.entry({ name }, body);
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

describe('the image catalogue', () => {
  let t: TestApp;
  let dev: TestUser;
  let admin: TestUser;
  let stranger: TestUser;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-images-'));
  let image: Buffer;

  let server: http.Server;

  beforeAll(async () => {
    image = await archive({ 'etc/passwd': 'root:x:0:0::/root:/bin/sh\n', 'etc/bianbu-image': 'mine\n' });
    // A web server on loopback that the lab file names images by URL on.
    server = http.createServer((req, res) => {
      if (req.url === '/images/net.tar.gz') res.end(image);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(
      labFile,
      JSON.stringify({
        boards: [],
        images: [
          { tag: 'net-image', name: 'From the web', url: `${base}/images/net.tar.gz`, sha256: sha(image) },
          { tag: 'net-wrong', name: 'Wrong sum', url: `${base}/images/net.tar.gz`, sha256: 'b'.repeat(64) },
          { tag: 'net-missing', name: 'Missing', url: `${base}/images/nope.tar.gz` },
        ],
      }),
    );
    t = await makeTestApp({ env: { BIANBU_LAB_FILE: labFile, BIANBU_FLASH_USER_QUOTA_MB: '1' } });
    const perms = ['device.add_flash', 'device.view_flash'];
    dev = await makeUser(t.app, { perms });
    stranger = await makeUser(t.app, { perms });
    admin = await makeUser(t.app, { perms: [...perms, 'device.add_image'] });
  });
  afterAll(async () => {
    await t?.close();
    server?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const upload = (who: TestUser, fields: Record<string, string>, data: Buffer) => {
    const m = multipart(fields, [{ name: 'image.tar.gz', data }]);
    return t.app
      .inject({
        method: 'POST',
        url: '/api/device/upload-flash-image',
        payload: m.body,
        headers: { ...who.headers, ...m.headers },
      })
      .then((r) => ({ status: r.statusCode, ...r.json() }));
  };

  it('downloads the URL images of the lab file in the background, checked against their sha256', async () => {
    let tags: string[] = [];
    for (let i = 0; i < 100 && !tags.includes('net-image'); i++) {
      await new Promise((r) => setTimeout(r, 50));
      tags = (await call(t.app, dev, 'GET', '/api/device/flash-images')).data.items.map(
        (x: { tag: string }) => x.tag,
      );
    }
    expect(tags).toContain('net-image');
    await t.app.flash.images.fetchLabUrls([]); // settles nothing new; the two bad ones were tried already
    await new Promise((r) => setTimeout(r, 200));
    tags = (await call(t.app, dev, 'GET', '/api/device/flash-images')).data.items.map(
      (x: { tag: string }) => x.tag,
    );
    expect(tags).not.toContain('net-wrong');
    expect(tags).not.toContain('net-missing');
    const row = await t.app.flash.images.get('net-image');
    expect(row?.sha256).toBe(sha(image));
    expect(fs.readFileSync(row!.path).equals(image)).toBe(true);
    expect(fs.readdirSync(path.join(t.dataDir, 'images', 'lab'))).toEqual(['net-image.img']);
  });

  it('stores a private image streamed whole, measured and checked against the sha256 the form gives', async () => {
    const r = await upload(
      dev,
      { tag: 'my-image', name: 'My image', models: 'K1, K1-Pro', sha256: sha(image) },
      image,
    );
    expect(r.code, JSON.stringify(r)).toBe(20000);
    expect(r.data).toMatchObject({
      tag: 'my-image',
      size: image.length,
      sha256: sha(image),
      models: ['K1', 'K1-Pro'],
      source: 'user',
      ownerId: dev.id,
      format: 'tar.gz',
    });
    const list = await call(t.app, dev, 'GET', '/api/device/flash-images');
    expect(list.data.items.map((i: { tag: string }) => i.tag)).toContain('my-image');
    expect(list.data.quota).toEqual({ usedBytes: image.length, limitBytes: 1024 * 1024 });
    // private: someone else neither sees nor flashes it
    const theirs = await call(t.app, stranger, 'GET', '/api/device/flash-images');
    expect(theirs.data.items.map((i: { tag: string }) => i.tag)).not.toContain('my-image');
    expect(
      (await call(t.app, stranger, 'POST', '/api/device/retire-flash-image', { tag: 'my-image' })).error,
    ).toBe('flash.image_unknown');
    // the stored file is the upload, byte for byte, and no temporary file is left
    const dir = path.join(t.dataDir, 'images', 'uploads');
    expect(fs.readdirSync(dir)).toEqual(['my-image.tar.gz']);
    expect(sha(fs.readFileSync(path.join(dir, 'my-image.tar.gz')))).toBe(sha(image));
  });

  it('refuses a sha256 mismatch, a file that is not an archive, a taken tag, and an upload past the quota — keeping nothing', async () => {
    const bad = await upload(dev, { tag: 'bad-sum', name: 'x', sha256: 'a'.repeat(64) }, image);
    expect(bad.error).toBe('flash.upload_corrupt');
    const notTar = await upload(dev, { tag: 'not-tar', name: 'x' }, Buffer.from('just text, not an image'));
    expect(notTar.error).toBe('flash.image_invalid');
    expect((await upload(dev, { tag: 'my-image', name: 'again' }, image)).error).toBe('flash.tag_taken');
    const big = await upload(dev, { tag: 'too-big', name: 'x' }, crypto.randomBytes(1024 * 1024));
    expect(big.status).toBe(413);
    expect(big.error).toBe('flash.quota_exceeded');
    const badTag = await upload(dev, { tag: '../escape', name: 'x' }, image);
    expect(badTag.status).toBe(400);
    expect(fs.readdirSync(path.join(t.dataDir, 'images', 'uploads'))).toEqual(['my-image.tar.gz']);
  });

  it('publishes for everyone only with device.add_image, and retires', async () => {
    expect((await upload(dev, { tag: 'public-one', name: 'P', visibility: 'public' }, image)).error).toBe(
      'flash.image_forbidden',
    );
    const pub = await upload(admin, { tag: 'public-one', name: 'P', visibility: 'public' }, image);
    expect(pub.data).toMatchObject({ source: 'admin', ownerId: null });
    const seen = await call(t.app, stranger, 'GET', '/api/device/flash-images');
    expect(seen.data.items.map((i: { tag: string }) => i.tag)).toContain('public-one');
    expect(
      (await call(t.app, dev, 'POST', '/api/device/retire-flash-image', { tag: 'public-one' })).error,
    ).toBe('flash.image_forbidden');
    const retired = await call(t.app, admin, 'POST', '/api/device/retire-flash-image', { tag: 'public-one' });
    expect(retired.data.retiredAt).not.toBeNull();
    expect(
      (await call(t.app, stranger, 'GET', '/api/device/flash-images')).data.items.map(
        (i: { tag: string }) => i.tag,
      ),
    ).not.toContain('public-one');
    // a retired image takes no new job
    await expect(t.app.flash.images.usable('public-one', dev.id)).rejects.toMatchObject({
      key: 'flash.image_retired',
    });
    expect(
      (await call(t.app, dev, 'POST', '/api/device/retire-flash-image', { tag: 'my-image' })).data.retiredAt,
    ).not.toBeNull();
    expect((await call(t.app, dev, 'GET', '/api/device/flash-images')).data.quota.usedBytes).toBe(0);
    expect(fs.readdirSync(path.join(t.dataDir, 'images', 'uploads'))).toEqual([]);
  });
});
