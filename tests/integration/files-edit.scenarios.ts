// Files scenarios of browsing and editing (files.scenarios.ts runs them): listing, opening text in
// its encoding, saving, conflicts, creating, renaming and removing, hostile paths and names.
import fs from 'node:fs';
import path from 'node:path';
import iconv from 'iconv-lite';
import { beforeAll, expect, it } from 'vitest';
import { EDITOR_MAX_BYTES } from '#shared/files.ts';
import { type FileLab, type Holder, leftovers, multipart } from './files.fixtures.ts';
import { type FilesContext, filesCalls, sha } from './helpers/files-context.ts';

export function editScenarios(c: FilesContext) {
  let lab: FileLab;
  let h: Holder;
  let home: string;
  // The suite's beforeAll (files.scenarios.ts) has filled the context by the time these run.
  beforeAll(() => {
    ({ lab, h, home } = c);
  });
  const { call, onBoard, writeOnBoard } = filesCalls(c);

  it('lists a folder with folders first and each entry’s size, time and mode', async () => {
    writeOnBoard('/home/user/list/b.txt', 'hello');
    fs.mkdirSync(onBoard('/home/user/list/z-dir'), { recursive: true });
    fs.chmodSync(onBoard('/home/user/list/b.txt'), 0o640);
    const res = await call('/api/device/file-browser', { path: '/home/user/list' });
    expect(res.code).toBe(20000);
    expect(res.data.path).toBe('/home/user/list');
    expect(res.data.entries.map((e: { name: string }) => e.name)).toEqual(['z-dir', 'b.txt']);
    const file = res.data.entries[1];
    expect(file).toMatchObject({ path: '/home/user/list/b.txt', type: 'file', size: 5 });
    expect(file.mode & 0o777).toBe(0o640);
    expect(Math.abs(file.mtimeMs - fs.statSync(onBoard('/home/user/list/b.txt')).mtimeMs)).toBeLessThan(1500);
    const rel = await call('/api/device/file-browser', { path: 'list', dir: '/home/user' });
    expect(rel.data.path).toBe('/home/user/list');
  });

  it('lists without an audit row, so the console can poll the tree, while a change is audited', async () => {
    const count = async (action: string) =>
      Number(
        (
          await lab.t.app.storage.query<{ n: string }>(
            `select count(*) as n from audit_log where action = '${action}' and username = '${h.user.username}'`,
          )
        )[0].n,
      );
    const listed = await count('fileBrowser');
    const wrote = await count('fileWrite');
    for (let i = 0; i < 3; i++)
      expect((await call('/api/device/file-browser', { path: '/home/user' })).code).toBe(20000);
    expect((await call('/api/device/file-write', { path: '/home/user/audited.txt', data: 'x' })).code).toBe(
      20000,
    );
    const deadline = Date.now() + 5000;
    while ((await count('fileWrite')) === wrote && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(await count('fileWrite')).toBe(wrote + 1);
    expect(await count('fileBrowser')).toBe(listed);
  });

  it('opens UTF-8, UTF-8 with BOM and GBK text with the encoding it detected', async () => {
    writeOnBoard('/home/user/enc/u8.txt', 'héllo 世界\n');
    writeOnBoard(
      '/home/user/enc/bom.txt',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('with bom')]),
    );
    writeOnBoard('/home/user/enc/gbk.txt', iconv.encode('中文内容，GBK 编码\n', 'gbk'));
    const u8 = await call('/api/device/file-read', { path: '/home/user/enc/u8.txt' });
    expect(u8.data).toMatchObject({ kind: 'text', encoding: 'utf-8', content: 'héllo 世界\n' });
    expect(u8.data.hash).toBe(sha(fs.readFileSync(onBoard('/home/user/enc/u8.txt'))));
    const bom = await call('/api/device/file-read', { path: '/home/user/enc/bom.txt' });
    expect(bom.data).toMatchObject({ kind: 'text', encoding: 'utf-8-bom', content: 'with bom' });
    const gbk = await call('/api/device/file-read', { path: '/home/user/enc/gbk.txt' });
    expect(gbk.data).toMatchObject({ kind: 'text', encoding: 'gbk', content: '中文内容，GBK 编码\n' });
    const forced = await call('/api/device/file-read', {
      path: '/home/user/enc/gbk.txt',
      encoding: 'utf-8',
    });
    expect(forced.data.content).toContain('\uFFFD');
  });

  it('answers binary and too-large files without their content, so the console offers a download', async () => {
    writeOnBoard('/home/user/bin/blob.bin', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3, 0, 0]));
    writeOnBoard('/home/user/bin/big.log', Buffer.alloc(EDITOR_MAX_BYTES + 10, 'a'));
    const bin = await call('/api/device/file-read', { path: '/home/user/bin/blob.bin' });
    expect(bin.data).toMatchObject({ kind: 'binary', size: 10 });
    expect(bin.data.content).toBeUndefined();
    const big = await call('/api/device/file-read', { path: '/home/user/bin/big.log' });
    expect(big.data).toMatchObject({
      kind: 'tooLarge',
      size: EDITOR_MAX_BYTES + 10,
      limit: EDITOR_MAX_BYTES,
    });
    expect(big.data.content).toBeUndefined();
  });

  it('saves in the file’s encoding and keeps its mode, leaving no temporary file', async () => {
    writeOnBoard('/home/user/save/gbk.txt', iconv.encode('旧内容', 'gbk'));
    fs.chmodSync(onBoard('/home/user/save/gbk.txt'), 0o600);
    const opened = await call('/api/device/file-read', { path: '/home/user/save/gbk.txt' });
    const saved = await call('/api/device/file-write', {
      path: '/home/user/save/gbk.txt',
      data: '新内容',
      encoding: opened.data.encoding,
      expectedHash: opened.data.hash,
    });
    expect(saved.code).toBe(20000);
    const bytes = fs.readFileSync(onBoard('/home/user/save/gbk.txt'));
    expect(bytes.equals(iconv.encode('新内容', 'gbk'))).toBe(true);
    expect(saved.data.hash).toBe(sha(bytes));
    expect(fs.statSync(onBoard('/home/user/save/gbk.txt')).mode & 0o777).toBe(0o600);
    const bom = await call('/api/device/file-write', {
      path: '/home/user/save/bom.txt',
      data: 'x',
      encoding: 'utf-8-bom',
    });
    expect(bom.code).toBe(20000);
    expect([...fs.readFileSync(onBoard('/home/user/save/bom.txt'))]).toEqual([0xef, 0xbb, 0xbf, 0x78]);
    const bad = await call('/api/device/file-write', {
      path: '/home/user/save/gbk.txt',
      data: '😀',
      encoding: 'gbk',
    });
    expect(bad).toMatchObject({ status: 400, error: 'file.unencodable' });
    expect(leftovers(onBoard('/home/user/save'))).toEqual([]);
  });

  it('refuses to overwrite a file changed on the board since it was opened, until told to', async () => {
    writeOnBoard('/home/user/conflict.txt', 'v1');
    const opened = await call('/api/device/file-read', { path: '/home/user/conflict.txt' });
    writeOnBoard('/home/user/conflict.txt', 'v2 from a shell');
    const refused = await call('/api/device/file-write', {
      path: '/home/user/conflict.txt',
      data: 'mine',
      expectedHash: opened.data.hash,
    });
    expect(refused).toMatchObject({ status: 409, error: 'file.changed' });
    expect(fs.readFileSync(onBoard('/home/user/conflict.txt'), 'utf8')).toBe('v2 from a shell');
    const forced = await call('/api/device/file-write', { path: '/home/user/conflict.txt', data: 'mine' });
    expect(forced.code).toBe(20000);
    expect(fs.readFileSync(onBoard('/home/user/conflict.txt'), 'utf8')).toBe('mine');
    const create = await call('/api/device/file-write', {
      path: '/home/user/conflict.txt',
      data: 'new',
      expectedHash: null,
    });
    expect(create).toMatchObject({ status: 409, error: 'path.exists' });
  });

  it('creates, renames and removes files and folders, asking for recursion on a full folder', async () => {
    expect((await call('/api/device/file-mkdir', { path: '/home/user/ops' })).code).toBe(20000);
    expect(fs.statSync(onBoard('/home/user/ops')).isDirectory()).toBe(true);
    expect(await call('/api/device/file-mkdir', { path: '/home/user/ops' })).toMatchObject({
      status: 409,
      error: 'path.exists',
    });
    await call('/api/device/file-write', { path: '/home/user/ops/a.txt', data: 'a', expectedHash: null });
    const renamed = await call('/api/device/file-rename', { path: '/home/user/ops/a.txt', to: 'b.txt' });
    expect(renamed.data.path).toBe('/home/user/ops/b.txt');
    expect(fs.existsSync(onBoard('/home/user/ops/a.txt'))).toBe(false);
    await call('/api/device/file-write', { path: '/home/user/ops/c.txt', data: 'c' });
    expect(
      await call('/api/device/file-rename', { path: '/home/user/ops/c.txt', to: 'b.txt' }),
    ).toMatchObject({
      status: 409,
      error: 'path.exists',
    });
    expect(fs.readFileSync(onBoard('/home/user/ops/b.txt'), 'utf8')).toBe('a');
    expect(await call('/api/device/remove-file', { path: '/home/user/ops' })).toMatchObject({
      status: 409,
      error: 'path.not_empty',
    });
    expect(fs.existsSync(onBoard('/home/user/ops/b.txt'))).toBe(true);
    expect((await call('/api/device/remove-file', { path: '/home/user/ops', recursive: true })).code).toBe(
      20000,
    );
    expect(fs.existsSync(onBoard('/home/user/ops'))).toBe(false);
  });

  it('refuses to remove / or a home folder without the second confirmation', async () => {
    for (const p of ['/', '/home/user', '/root', '/home']) {
      const res = await call('/api/device/remove-file', { path: p, recursive: true });
      expect(res, p).toMatchObject({ status: 409, error: 'file.remove_protected' });
    }
    expect(fs.existsSync(onBoard('/home/user/conflict.txt'))).toBe(true);
    const wrong = await call('/api/device/remove-file', {
      path: '/home/user',
      recursive: true,
      confirm: '/home',
    });
    expect(wrong.error).toBe('file.remove_protected');
  });

  it('refuses hostile paths with a clear error and touches nothing outside the board', async () => {
    const outside = fs.mkdtempSync('/tmp/bianbu-outside-');
    fs.writeFileSync(path.join(outside, 'secret'), 'host secret');
    const climbs = path.relative(path.join(lab.hostRoot, 'home/user'), outside);
    fs.symlinkSync(climbs, onBoard('/home/user/escape'));
    try {
      // A link out of the board: where links resolve inside the board (local), it points at a path
      // the board does not have; where the service resolves them (ssh), it leaves the root.
      const [escKey, escStatus] = lab.linksResolveInBoard
        ? ['path.not_found', 404]
        : ['path.outside_root', 400];
      const cases: [string, Record<string, unknown>, string, number][] = [
        [
          '/api/device/file-read',
          { path: '../../etc/passwd', dir: '/home/user/..' },
          'path.outside_root',
          400,
        ],
        ['/api/device/file-read', { path: '/../../../etc/passwd' }, 'path.outside_root', 400],
        ['/api/device/file-browser', { path: '/home/user/escape' }, escKey, escStatus],
        ['/api/device/file-read', { path: '/home/user/escape/secret' }, escKey, escStatus],
        ['/api/device/file-write', { path: '/home/user/escape/pwned', data: 'x' }, escKey, escStatus],
        ['/api/device/remove-file', { path: '/home/user/escape/secret' }, escKey, escStatus],
        [
          '/api/device/file-rename',
          { path: '/home/user/conflict.txt', to: '/home/user/escape/moved' },
          escKey,
          escStatus,
        ],
        ['/api/device/file-mkdir', { path: '/home/user/escape/newdir' }, escKey, escStatus],
      ];
      for (const [url, payload, key, status] of cases) {
        const res = await call(url, payload);
        expect(res.status, `${url} ${JSON.stringify(payload)}`).toBe(status);
        expect(res.error, `${url} ${JSON.stringify(payload)}`).toBe(key);
      }
      for (const bad of ['/home/user/a\0b', '/home/user/line\nbreak', `/home/user/${'n'.repeat(256)}`]) {
        const res = await call('/api/device/file-write', { path: bad, data: 'x' });
        expect(res.status, JSON.stringify(bad)).toBe(400);
        expect(res.fields?.[0].path).toBe('path');
      }
      const dl = await (lab.settle(), lab.t.app).inject({
        method: 'POST',
        url: '/api/device/downloadFile',
        payload: { deviceId: h.deviceId, filePath: '/home/user/escape/secret' },
        headers: { ...h.user.headers, applyaccess: h.applyId },
      });
      expect(dl.statusCode).toBe(escStatus);
      expect(dl.body).not.toContain('host secret');
      const up = multipart({ applyId: h.applyId, path: '/home/user/escape' }, [{ name: 'pwned', data: 'x' }]);
      const upRes = await (lab.settle(), lab.t.app).inject({
        method: 'POST',
        url: '/api/device/uploadFile',
        payload: up.body,
        headers: { ...h.user.headers, ...up.headers, applyaccess: h.applyId },
      });
      expect(upRes.statusCode).toBe(400);
      expect(fs.readdirSync(outside)).toEqual(['secret']);
      expect(fs.readFileSync(path.join(outside, 'secret'), 'utf8')).toBe('host secret');
    } finally {
      fs.rmSync(onBoard('/home/user/escape'));
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  it('takes names with shell metacharacters literally', async () => {
    const name = '$(touch pwned);`id`|x&y>z \'q\' "w".txt';
    fs.mkdirSync(onBoard('/home/user/meta'), { recursive: true });
    const w = await call('/api/device/file-write', { path: `/home/user/meta/${name}`, data: 'literal' });
    expect(w.code).toBe(20000);
    expect(fs.readFileSync(path.join(onBoard('/home/user/meta'), name), 'utf8')).toBe('literal');
    const up = multipart({ applyId: h.applyId, path: '/home/user/meta' }, [
      { name: '$(rm -rf ~);b.txt', data: 'up' },
    ]);
    const res = await (lab.settle(), lab.t.app).inject({
      method: 'POST',
      url: '/api/device/uploadFile',
      payload: up.body,
      headers: { ...h.user.headers, ...up.headers, applyaccess: h.applyId },
    });
    expect(res.statusCode).toBe(200);
    expect(fs.readdirSync(onBoard('/home/user/meta')).sort()).toEqual(['$(rm -rf ~);b.txt', name].sort());
    expect(fs.existsSync(onBoard('/home/user/pwned'))).toBe(false);
    expect(fs.existsSync(onBoard('/pwned'))).toBe(false);
    expect(fs.existsSync(path.join(process.cwd(), 'pwned'))).toBe(false);
  });
}
