// Files scenarios of transfers (files.scenarios.ts runs them): uploads and downloads, streamed and
// bounded, dropped, timed out, out of space, resumed and as a tar; and who may reach a board's files.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import tar from 'tar-stream';
import { beforeAll, expect, it } from 'vitest';
import {
  type FileLab,
  type Holder,
  leftovers,
  listen,
  multipart,
  multipartHead,
  patternChunks,
  post,
  rawRequest,
  rssMiB,
} from './files.fixtures.ts';
import { type FilesContext, filesCalls, sha, sleep } from './helpers/files-context.ts';
import { makeUser } from './helpers/users.ts';

export function transferScenarios(c: FilesContext) {
  let lab: FileLab;
  let h: Holder;
  let home: string;
  // The suite's beforeAll (files.scenarios.ts) has filled the context by the time these run.
  beforeAll(() => {
    ({ lab, h, home } = c);
  });
  const { call, onBoard, writeOnBoard } = filesCalls(c);

  it('uploads several files in one request, replacing an existing one whole', async () => {
    writeOnBoard('/home/user/up/keep.txt', 'old');
    const body = multipart({ applyId: h.applyId, path: '/home/user/up' }, [
      { name: 'keep.txt', data: 'new content' },
      { name: 'second.bin', data: Buffer.from([0, 1, 2, 3]) },
    ]);
    const res = await (lab.settle(), lab.t.app).inject({
      method: 'POST',
      url: '/api/device/uploadFile',
      payload: body.body,
      headers: { ...h.user.headers, ...body.headers, applyaccess: h.applyId },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.files).toEqual([
      { name: 'keep.txt', path: '/home/user/up/keep.txt', size: 11 },
      { name: 'second.bin', path: '/home/user/up/second.bin', size: 4 },
    ]);
    expect(fs.readFileSync(onBoard('/home/user/up/keep.txt'), 'utf8')).toBe('new content');
    expect([...fs.readFileSync(onBoard('/home/user/up/second.bin'))]).toEqual([0, 1, 2, 3]);
    expect(leftovers(onBoard('/home/user/up'))).toEqual([]);
  });

  it('streams a 64 MiB upload and download without holding them in memory', async () => {
    const size = 64 * 1024 * 1024;
    const port = await listen(lab.t.app);
    const expected = crypto.createHash('sha256');
    for (const c of patternChunks(size)) expected.update(c);
    const want = expected.digest('hex');
    global.gc?.();
    const base = rssMiB();
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMiB());
    }, 20);
    try {
      const mp = multipartHead({ applyId: h.applyId, path: '/home/user' }, 'big.bin');
      const up = await (lab.settle(), rawRequest)(port, {
        path: '/api/device/uploadFile',
        headers: {
          ...h.user.headers,
          applyaccess: h.applyId,
          'content-type': mp.contentType,
          'content-length': mp.head.length + size + mp.tail.length,
        },
        body: (function* () {
          yield mp.head;
          yield* patternChunks(size);
          yield mp.tail;
        })(),
      });
      expect(up.status, up.body.toString()).toBe(200);
      expect(fs.statSync(onBoard('/home/user/big.bin')).size).toBe(size);
      const upPeak = peak - base;

      peak = rssMiB();
      const downBase = peak;
      const got = crypto.createHash('sha256');
      let length = 0;
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/api/device/downloadFile',
            headers: { ...h.user.headers, applyaccess: h.applyId, 'content-type': 'application/json' },
          },
          (res: http.IncomingMessage) => {
            expect(res.headers['content-length']).toBe(String(size));
            res.on('data', (c: Buffer) => {
              length += c.length;
              got.update(c);
            });
            res.on('end', () => resolve(res.statusCode ?? 0));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ deviceId: h.deviceId, filePath: '/home/user/big.bin' }));
      });
      expect(status).toBe(200);
      expect(length).toBe(size);
      expect(got.digest('hex')).toBe(want);
      const downPeak = peak - downBase;
      // Buffering the file would cost at least its 64 MiB; streaming stays within a few buffers. The
      // client runs in this process too, and the chunks it has taken wait for a collection: on a slow
      // machine they made 40.4 MiB once (a fresh-clone CI run), so the bound sits below the file's size
      // rather than near what a quick collector leaves.
      expect(upPeak, `upload grew RSS by ${upPeak.toFixed(1)} MiB`).toBeLessThan(56);
      expect(downPeak, `download grew RSS by ${downPeak.toFixed(1)} MiB`).toBeLessThan(56);
    } finally {
      clearInterval(sampler);
      fs.rmSync(onBoard('/home/user/big.bin'), { force: true });
    }
  });

  it('keeps the old file and leaves no partial file when the client drops an upload mid-stream', async () => {
    writeOnBoard('/home/user/drop/target.bin', 'the old content');
    const port = await listen(lab.t.app);
    const mp = multipartHead({ applyId: h.applyId, path: '/home/user/drop' }, 'target.bin');
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/device/uploadFile',
      headers: {
        ...h.user.headers,
        applyaccess: h.applyId,
        'content-type': mp.contentType,
        'content-length': mp.head.length + 32 * 1024 * 1024 + mp.tail.length,
      },
    });
    req.on('error', () => {});
    req.write(mp.head);
    for (const c of patternChunks(4 * 1024 * 1024)) req.write(c);
    // Wait until the service is writing the temporary file, then drop the connection.
    const dir = onBoard('/home/user/drop');
    const deadline = Date.now() + 10_000;
    while (!fs.readdirSync(dir).some((n) => n !== 'target.bin') && Date.now() < deadline) await sleep(20);
    expect(fs.readdirSync(dir).length).toBe(2);
    req.destroy();
    const settle = Date.now() + 10_000;
    while (fs.readdirSync(dir).length > 1 && Date.now() < settle) await sleep(50);
    expect(fs.readdirSync(dir)).toEqual(['target.bin']);
    expect(fs.readFileSync(path.join(dir, 'target.bin'), 'utf8')).toBe('the old content');
  });

  it('stops a transfer that outlives its deadline and leaves no partial file', async () => {
    writeOnBoard('/home/user/slow/target.txt', 'before');
    const port = await listen(lab.t.app);
    const config = lab.t.app.config as { BIANBU_TRANSFER_TIMEOUT_MS: number };
    const saved = config.BIANBU_TRANSFER_TIMEOUT_MS;
    // The deadline is read per transfer; shortened here so the test need not wait ten minutes.
    config.BIANBU_TRANSFER_TIMEOUT_MS = 1500;
    try {
      const mp = multipartHead({ applyId: h.applyId, path: '/home/user/slow' }, 'target.txt');
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/api/device/uploadFile',
            headers: {
              ...h.user.headers,
              applyaccess: h.applyId,
              'content-type': mp.contentType,
              'content-length': mp.head.length + 1000 + mp.tail.length,
            },
          },
          (res: http.IncomingMessage) => {
            let body = '';
            res.on('data', (c: Buffer) => {
              body += c;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.write(mp.head);
        req.write(Buffer.alloc(100, 'x'));
        // ...and never the rest.
      });
      expect(answer.status).toBe(408);
      expect(JSON.parse(answer.body).error).toBe('transfer.timeout');
    } finally {
      config.BIANBU_TRANSFER_TIMEOUT_MS = saved;
    }
    const dir = onBoard('/home/user/slow');
    const settle = Date.now() + 5000;
    while (fs.readdirSync(dir).length > 1 && Date.now() < settle) await sleep(50);
    expect(fs.readdirSync(dir)).toEqual(['target.txt']);
    expect(fs.readFileSync(path.join(dir, 'target.txt'), 'utf8')).toBe('before');
  });

  it('refuses an upload larger than the board’s free space before writing a byte', async () => {
    writeOnBoard('/home/user/full/target.txt', 'kept');
    const port = await listen(lab.t.app);
    const mp = multipartHead({ applyId: h.applyId, path: '/home/user/full' }, 'target.txt');
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/device/uploadFile',
          headers: {
            ...h.user.headers,
            applyaccess: h.applyId,
            'content-type': mp.contentType,
            // Far more than any disk holds.
            'content-length': String(2 ** 52),
          },
        },
        (res: http.IncomingMessage) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write(mp.head);
      req.write(Buffer.alloc(64 * 1024, 'x'));
    });
    expect(answer.status).toBe(507);
    expect(JSON.parse(answer.body).error).toBe('file.no_space');
    expect(fs.readdirSync(onBoard('/home/user/full'))).toEqual(['target.txt']);
    expect(fs.readFileSync(onBoard('/home/user/full/target.txt'), 'utf8')).toBe('kept');
  });

  it('fails an upload that fills the disk mid-stream cleanly, keeping the old file and no partial one', async () => {
    // Room for about 4 MiB left on the board: the upload (chunked, so its size is not declared) runs
    // out of it half way. A local board's disk is its own file system, filled from the host; an ssh
    // board's folder becomes a 4 MiB tmpfs.
    const small = onBoard('/home/user/small');
    fs.mkdirSync(small, { recursive: true });
    const filler = onBoard('/home/user/filler.bin');
    if (lab.linksResolveInBoard) {
      const st = fs.statfsSync(lab.hostRoot);
      execFileSync('fallocate', ['-l', String(Math.max(0, st.bavail * st.bsize - 4 * 1024 * 1024)), filler]);
    } else execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', small]);
    try {
      fs.writeFileSync(path.join(small, 'target.bin'), 'old bytes');
      lab.settle();
      const port = await listen(lab.t.app);
      const mp = multipartHead({ applyId: h.applyId, path: '/home/user/small' }, 'target.bin');
      const answer = await (lab.settle(), rawRequest)(port, {
        path: '/api/device/uploadFile',
        headers: {
          ...h.user.headers,
          applyaccess: h.applyId,
          'content-type': mp.contentType,
          'transfer-encoding': 'chunked',
        },
        body: (function* () {
          yield mp.head;
          yield* patternChunks(6 * 1024 * 1024, 256 * 1024);
          yield mp.tail;
        })(),
      }).catch((err: Error) => ({ status: -1, body: Buffer.from(err.message), headers: {} }));
      expect(answer.status, answer.body.toString()).toBe(507);
      expect(JSON.parse(answer.body.toString()).error).toBe('file.no_space');
      const settle = Date.now() + 5000;
      while (fs.readdirSync(small).length > 1 && Date.now() < settle) await sleep(50);
      expect(fs.readdirSync(small)).toEqual(['target.bin']);
      expect(fs.readFileSync(path.join(small, 'target.bin'), 'utf8')).toBe('old bytes');
    } finally {
      if (lab.linksResolveInBoard) fs.rmSync(filler, { force: true });
      else execFileSync('umount', ['-l', small]);
    }
  });

  it('resumes a download from an offset (Range with If-Range), and sends it all when the file changed', async () => {
    const data = crypto.randomBytes(3 * 1024 * 1024 + 17);
    writeOnBoard('/home/user/resume.bin', data);
    const get = (headers: Record<string, string>) =>
      (lab.settle(), lab.t.app).inject({
        method: 'POST',
        url: '/api/device/downloadFile',
        payload: { deviceId: h.deviceId, filePath: '/home/user/resume.bin' },
        headers: { ...h.user.headers, applyaccess: h.applyId, ...headers },
      });
    const full = await get({});
    expect(full.statusCode).toBe(200);
    expect(full.headers['accept-ranges']).toBe('bytes');
    const etag = String(full.headers.etag);
    expect(etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
    expect(sha(full.rawPayload)).toBe(sha(data));

    // The rest from an offset inside the SFTP read size and one past it, and a closed range.
    for (const from of [1, 200_001, data.length - 1]) {
      const part = await get({ range: `bytes=${from}-`, 'if-range': etag });
      expect(part.statusCode, `from ${from}`).toBe(206);
      expect(part.headers['content-range']).toBe(`bytes ${from}-${data.length - 1}/${data.length}`);
      expect(Number(part.headers['content-length'])).toBe(data.length - from);
      expect(sha(part.rawPayload), `from ${from}`).toBe(sha(data.subarray(from)));
    }
    const mid = await get({ range: 'bytes=1000-1999' });
    expect(mid.statusCode).toBe(206);
    expect(mid.rawPayload.equals(data.subarray(1000, 2000))).toBe(true);
    // Past the end: 416 with the size; ranges this does not serve: the whole file.
    const past = await get({ range: `bytes=${data.length}-` });
    expect(past.statusCode).toBe(416);
    expect(past.headers['content-range']).toBe(`bytes */${data.length}`);
    for (const range of ['bytes=0-1,5-9', 'bytes=-100', 'items=0-', 'bytes=9-3', 'bytes=x-']) {
      const all = await get({ range });
      expect(all.statusCode, range).toBe(200);
      expect(all.rawPayload.length, range).toBe(data.length);
    }
    // The file changed on the board (a new size and time): If-Range no longer matches, so it comes
    // whole rather than a stale part spliced onto new bytes.
    const changed = Buffer.concat([data, Buffer.from('appended')]);
    writeOnBoard('/home/user/resume.bin', changed);
    fs.utimesSync(onBoard('/home/user/resume.bin'), new Date(), new Date(Date.now() + 5_000));
    const after = await get({ range: 'bytes=100-', 'if-range': etag });
    expect(after.statusCode).toBe(200);
    expect(String(after.headers.etag)).not.toBe(etag);
    expect(sha(after.rawPayload)).toBe(sha(changed));
  });

  it('downloads a folder as a tar archive of its files, with symlinks as links and never their targets’ content', async () => {
    writeOnBoard('/home/user/pack/a.txt', 'alpha');
    writeOnBoard('/home/user/pack/sub/b.txt', 'beta');
    const outside = fs.mkdtempSync('/tmp/bianbu-packout-');
    fs.writeFileSync(path.join(outside, 'secret'), 'host secret in a link');
    const climbs = path.relative(onBoard('/home/user/pack/sub'), path.join(outside, 'secret'));
    fs.symlinkSync('../a.txt', onBoard('/home/user/pack/sub/to-a'));
    fs.symlinkSync(climbs, onBoard('/home/user/pack/sub/out-rel'));
    fs.symlinkSync(path.join(outside, 'secret'), onBoard('/home/user/pack/out-abs'));
    fs.symlinkSync(outside, onBoard('/home/user/pack/out-dir'));
    const res = await (lab.settle(), lab.t.app).inject({
      method: 'POST',
      url: '/api/device/downloadFile',
      payload: { deviceId: h.deviceId, filePath: '/home/user/pack' },
      headers: { ...h.user.headers, applyaccess: h.applyId },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toContain('pack.tar');
    const entries = new Map<string, string>();
    const links = new Map<string, string>();
    const types = new Map<string, string>();
    const extract = tar.extract();
    await new Promise<void>((resolve, reject) => {
      extract.on('entry', (header, stream, next) => {
        const chunks: Buffer[] = [];
        types.set(header.name, header.type ?? '');
        if (header.type === 'symlink') links.set(header.name, header.linkname ?? '');
        stream.on('data', (c: unknown) => void chunks.push(c as Buffer));
        stream.on('end', () => {
          entries.set(header.name, Buffer.concat(chunks).toString());
          next();
        });
      });
      extract.on('finish', resolve);
      extract.on('error', reject);
      extract.end(res.rawPayload);
    });
    try {
      expect(entries.get('pack/a.txt')).toBe('alpha');
      expect(entries.get('pack/sub/b.txt')).toBe('beta');
      expect([...entries.keys()]).toContain('pack/sub/');
      expect(Object.fromEntries(links)).toEqual({
        'pack/out-abs': path.join(outside, 'secret'),
        'pack/out-dir': outside,
        'pack/sub/out-rel': climbs,
        'pack/sub/to-a': '../a.txt',
      });
      for (const name of links.keys()) {
        expect(types.get(name)).toBe('symlink');
        expect(entries.get(name)).toBe('');
      }
      // Nothing of the host reached the archive: no link was followed, no folder behind one walked.
      expect(res.rawPayload.includes('host secret in a link')).toBe(false);
      expect([...entries.keys()].filter((n) => n.startsWith('pack/out-dir/'))).toEqual([]);
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  it('never lets a user reach the files of a board they do not hold', async () => {
    const stranger = await makeUser(lab.t.app);
    const asStranger = (
      url: string,
      payload: Record<string, unknown>,
      headers: Record<string, string> = {},
    ) => post(lab.t.app, stranger, url, payload, headers);
    const noApply = await asStranger('/api/device/file-browser', { path: '/home/user' });
    expect(noApply.status).toBe(400);
    for (const url of ['/api/device/file-browser', '/api/device/file-read', '/api/device/remove-file']) {
      const res = await asStranger(url, { applyId: h.applyId, path: '/home/user/conflict.txt' });
      expect(res.status, url).toBe(404);
    }
    const write = await asStranger('/api/device/file-write', {
      applyId: h.applyId,
      path: '/home/user/x.txt',
      data: 'x',
    });
    expect(write.status).toBe(404);
    expect(fs.existsSync(onBoard('/home/user/x.txt'))).toBe(false);
    const dl = await asStranger(
      '/api/device/downloadFile',
      { deviceId: h.deviceId, filePath: '/home/user/conflict.txt' },
      {
        applyaccess: h.applyId,
      },
    );
    expect(dl.status).toBe(404);
    const dlNoHeader = await asStranger('/api/device/downloadFile', {
      deviceId: h.deviceId,
      filePath: '/home/user/conflict.txt',
    });
    expect([400, 404]).toContain(dlNoHeader.status);
    const up = multipart({ applyId: h.applyId, path: '/home/user' }, [{ name: 'intruder.txt', data: 'x' }]);
    const upRes = await (lab.settle(), lab.t.app).inject({
      method: 'POST',
      url: '/api/device/uploadFile',
      payload: up.body,
      headers: { ...stranger.headers, ...up.headers, applyaccess: h.applyId },
    });
    expect(upRes.statusCode).toBe(404);
    expect(fs.existsSync(onBoard('/home/user/intruder.txt'))).toBe(false);
    // The holder's own download names the wrong board: refused the same way.
    const wrongBoard = await call(
      '/api/device/downloadFile',
      { deviceId: 'some-other-board', filePath: '/etc/hostname' },
      {
        applyaccess: h.applyId,
      },
    );
    expect(wrongBoard.status).toBe(404);
  });

  it('removes a home folder after the second confirmation, and stops answering once the apply ends', async () => {
    writeOnBoard('/home/user/last.txt', 'bye');
    const res = await call('/api/device/remove-file', {
      path: '/home/user',
      recursive: true,
      confirm: '/home/user',
    });
    expect(res.code).toBe(20000);
    expect(fs.existsSync(onBoard('/home/user'))).toBe(false);
    fs.mkdirSync(onBoard('/home/user'));
    const ended = await call('/api/device/unapply-device', {});
    expect(ended.code).toBe(20000);
    const after = await call('/api/device/file-browser', { path: '/' });
    expect(after.status).toBe(404);
  });
}
