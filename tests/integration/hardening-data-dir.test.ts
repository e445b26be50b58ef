// The service's own files are private: started on a data dir full of world-readable files, the app
// leaves every file 0600 and every directory 0700 (the data dir and <data>/boards 0711), does not
// touch anything below <data>/boards/, never changes a file through a symbolic link, and the files
// it creates itself (the PGlite database, avatars) end up private too.
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '#server/app.ts';
import { testConfig } from '#server/config.ts';
import { identityFeature } from '#server/identity/identity.routes.ts';
import { secureDataDir } from '#server/system/data-dir.ts';
import { systemFeature } from '#server/system/system.routes.ts';
import { makeUser } from './helpers/users.ts';

const modeOf = (p: string) => fs.lstatSync(p).mode & 0o7777;
const octal = (m: number) => `0${m.toString(8)}`;

function write(p: string, mode: number, text = 'secret') {
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, text);
  fs.chmodSync(p, mode);
}

/** Every entry below `root` (links not followed), except those below `except`. */
function entries(root: string, except: string[] = []): { path: string; st: fs.Stats }[] {
  const out: { path: string; st: fs.Stats }[] = [];
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir)) {
      const p = path.join(dir, name);
      if (except.includes(p)) continue;
      const st = fs.lstatSync(p);
      out.push({ path: p, st });
      if (st.isDirectory()) walk(p);
    }
  };
  walk(root);
  return out;
}

// A real PNG of the given size, for the avatar upload (signature, IHDR, IDAT, IEND).
function png(size: number): Buffer {
  const table = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = table[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(size * 3, 0x40)]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(Buffer.concat(Array.from({ length: size }, () => row)))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

describe('the data directory is private to the service', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  function scratch(): { data: string; outside: string } {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-datadir-'));
    cleanup.push(() => fs.rmSync(base, { recursive: true, force: true }));
    const data = path.join(base, 'data');
    const outside = path.join(base, 'outside');
    fs.mkdirSync(data);
    fs.mkdirSync(outside);
    return { data, outside };
  }

  it('fixes the modes of what it finds at start, leaving links and board sandboxes alone', async () => {
    const { data, outside } = scratch();
    fs.chmodSync(data, 0o777);
    write(path.join(data, 'keys.pem'), 0o666);
    write(path.join(data, 'tool.sh'), 0o777);
    write(path.join(data, 'old', 'deep', 'nested.log'), 0o666);
    fs.chmodSync(path.join(data, 'old', 'deep'), 0o777);
    fs.chmodSync(path.join(data, 'old'), 0o755);
    write(path.join(data, 'odd-bits'), 0o6644);
    // A link to a file outside, and a link to a directory outside: neither target may change.
    write(path.join(outside, 'target.txt'), 0o644);
    write(path.join(outside, 'dir', 'inside.txt'), 0o666);
    fs.chmodSync(path.join(outside, 'dir'), 0o777);
    fs.symlinkSync(path.join(outside, 'target.txt'), path.join(data, 'link-to-file'));
    fs.symlinkSync(path.join(outside, 'dir'), path.join(data, 'old', 'link-to-dir'));
    // The boards' own files are the sandbox code's business.
    write(path.join(data, 'boards', 'b1', 'root', 'etc', 'passwd'), 0o644);
    write(path.join(data, 'boards', 'b1', 'shared'), 0o666);
    fs.chmodSync(path.join(data, 'boards', 'b1'), 0o755);
    fs.chmodSync(path.join(data, 'boards'), 0o777);
    const boardsBefore = entries(path.join(data, 'boards')).map((e) => [e.path, e.st.mode]);

    const app: FastifyInstance = await buildApp({
      config: testConfig({ BIANBU_DATA_DIR: data, BIANBU_ADMIN_PASSWORD: 'Adm1n-secret!' }),
      features: [systemFeature, identityFeature],
      logger: false,
    });
    cleanup.push(() => app.close());
    await app.ready();

    expect(octal(modeOf(data))).toBe('0711');
    expect(octal(modeOf(path.join(data, 'boards')))).toBe('0711');
    expect(octal(modeOf(path.join(data, 'keys.pem')))).toBe('0600');
    expect(octal(modeOf(path.join(data, 'tool.sh')))).toBe('0700');
    expect(octal(modeOf(path.join(data, 'odd-bits')))).toBe('0600');
    expect(octal(modeOf(path.join(data, 'old')))).toBe('0700');
    expect(octal(modeOf(path.join(data, 'old', 'deep')))).toBe('0700');
    expect(octal(modeOf(path.join(data, 'old', 'deep', 'nested.log')))).toBe('0600');
    expect(fs.lstatSync(path.join(data, 'link-to-file')).isSymbolicLink()).toBe(true);
    expect(octal(modeOf(path.join(outside, 'target.txt')))).toBe('0644');
    expect(octal(modeOf(path.join(outside, 'dir')))).toBe('0777');
    expect(octal(modeOf(path.join(outside, 'dir', 'inside.txt')))).toBe('0666');
    expect(entries(path.join(data, 'boards')).map((e) => [e.path, e.st.mode])).toEqual(boardsBefore);

    // The database the app opened (PGlite writes its files 0666) is private as well.
    const pglite = path.join(data, 'pglite');
    const db = entries(pglite);
    expect(db.length).toBeGreaterThan(100);
    const open = db
      .filter((e) => !e.st.isSymbolicLink() && (e.st.mode & 0o077) !== 0)
      .map((e) => `${e.path} ${octal(e.st.mode & 0o7777)}`);
    expect(open).toEqual([]);

    // So is an avatar it stores.
    const u = await makeUser(app);
    const boundary = `----bianbu${crypto.randomBytes(6).toString('hex')}`;
    const payload = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="avatar"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
      ),
      png(160),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const res = await app.inject({
      method: 'POST',
      url: '/api/user/avatar',
      headers: { ...u.headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
    });
    expect(res.json().code, res.body).toBe(20000);
    const avatars = path.join(data, 'avatars');
    expect(octal(modeOf(avatars))).toBe('0700');
    for (const f of fs.readdirSync(avatars)) expect(octal(modeOf(path.join(avatars, f))), f).toBe('0600');

    // Everything outside boards/ (and the plugins folder the boards run from) is private.
    const leaks = entries(data, [path.join(data, 'boards'), path.join(data, 'plugins')])
      .filter((e) => !e.st.isSymbolicLink() && (e.st.mode & 0o077) !== 0)
      .map((e) => `${e.path} ${octal(e.st.mode & 0o7777)}`);
    expect(leaks).toEqual([]);
  }, 120_000);

  it('never follows a link, not even one in place of boards/ or a directory', () => {
    const { data, outside } = scratch();
    write(path.join(outside, 'boards-elsewhere', 'x'), 0o666);
    fs.chmodSync(path.join(outside, 'boards-elsewhere'), 0o777);
    fs.symlinkSync(path.join(outside, 'boards-elsewhere'), path.join(data, 'boards'));
    fs.symlinkSync('/etc/hostname', path.join(data, 'hostname-link'));
    fs.symlinkSync(path.join(outside, 'missing'), path.join(data, 'dangling'));
    const before = modeOf('/etc/hostname');
    secureDataDir(data);
    expect(octal(modeOf(path.join(outside, 'boards-elsewhere')))).toBe('0777');
    expect(octal(modeOf(path.join(outside, 'boards-elsewhere', 'x')))).toBe('0666');
    expect(modeOf('/etc/hostname')).toBe(before);
    expect(octal(modeOf(data))).toBe('0711');
  });

  it('leaves a file with several hard links as it is', () => {
    const { data, outside } = scratch();
    write(path.join(outside, 'shared.txt'), 0o644);
    fs.linkSync(path.join(outside, 'shared.txt'), path.join(data, 'hardlink.txt'));
    secureDataDir(data);
    expect(octal(modeOf(path.join(outside, 'shared.txt')))).toBe('0644');
  });

  it('runs the service with umask 077 from its entry point', async () => {
    const { data } = scratch();
    const lab = path.join(path.dirname(data), 'lab.yaml');
    fs.writeFileSync(lab, 'boards: []\n');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      BIANBU_DATA_DIR: data,
      BIANBU_LAB_FILE: lab,
      BIANBU_LEASE_TICK_MS: '0',
      BIANBU_ADMIN_PASSWORD: 'Adm1n-secret!',
      LOG_LEVEL: 'warn',
    };
    // The embedded database in the data dir is what this checks.
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    );
    let out = '';
    child.stderr.on('data', (b) => {
      out += b;
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`service did not start: ${out}`)), 100_000);
      child.stdout.on('data', (b) => {
        out += b;
        if (out.includes('Bianbu Cloud console:')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`service exited ${code}: ${out}`));
      });
    });
    const umask = execFileSync('sh', ['-c', `grep -i '^umask' /proc/${child.pid}/status`]).toString();
    expect(umask).toMatch(/Umask:\s+0077/);
    // Directories PGlite made while running follow the umask; its files are fixed after opening.
    const leaks = entries(data, [path.join(data, 'boards'), path.join(data, 'plugins')])
      .filter((e) => !e.st.isSymbolicLink() && (e.st.mode & 0o077) !== 0)
      .map((e) => `${e.path} ${octal(e.st.mode & 0o7777)}`);
    expect(leaks).toEqual([]);
  }, 120_000);
});
