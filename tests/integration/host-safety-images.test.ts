// A flash image is the attacker's: links, `..` and hard links planted in it must never make host
// root create, change or read a host file while the image is unpacked, completed (mount points,
// /etc/passwd) and verified. Host canaries sit outside the board; each hostile image either fails as
// `flash.image_invalid` with the board kept as it was, or is placed wholly inside the board's root.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalDriver } from '#server/boards/local/local-driver.ts';
import { localDriverOptions } from '#shared/boards.ts';

type Entry = {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link';
  linkname?: string;
  body?: string;
};

async function image(file: string, entries: Entry[]): Promise<string> {
  const pack = tar.pack();
  for (const e of entries) {
    if (e.type === 'symlink' || e.type === 'link')
      pack.entry({ name: e.name, type: e.type, linkname: e.linkname, mode: 0o777 });
    else if (e.type === 'directory') pack.entry({ name: e.name, type: 'directory', mode: 0o755 });
    else pack.entry({ name: e.name, mode: 0o644 }, e.body ?? 'x');
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  fs.writeFileSync(file, Buffer.concat(chunks));
  return file;
}

/** A host directory's mode, entries and a file's contents: what a canary must keep. */
function snapshot(dir: string): string {
  const st = fs.lstatSync(dir);
  const names = fs.readdirSync(dir).sort();
  return JSON.stringify({
    mode: (st.mode & 0o7777).toString(8),
    uid: st.uid,
    names,
    files: names.map((n) => {
      const p = path.join(dir, n);
      const s = fs.lstatSync(p);
      return s.isFile()
        ? `${(s.mode & 0o7777).toString(8)}:${fs.readFileSync(p, 'utf8')}`
        : s.isDirectory()
          ? 'dir'
          : 'other';
    }),
  });
}

const PASSWD = { name: 'etc/passwd', body: 'root:x:0:0:root:/root:/bin/sh\n' };

describe('a flash image planted with links against the host', () => {
  let work: string;
  let driver: LocalDriver;
  /** Host directories that play /etc, /root/.ssh, a database's data directory. */
  const canaries: Record<string, string> = {};
  let before: Record<string, string>;

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-hostile-image-'));
    for (const name of ['etc', 'ssh', 'pgdata']) {
      const dir = path.join(work, 'host', name);
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      fs.chmodSync(dir, 0o700);
      fs.writeFileSync(path.join(dir, 'passwd'), `host ${name}\n`, { mode: 0o600 });
      canaries[name] = dir;
    }
    driver = new LocalDriver({
      boardId: 'hostile',
      name: 'hostile-board',
      model: 'Test Board',
      options: localDriverOptions.parse({ diskQuotaMb: 128, memoryMb: 256 }),
      boardDir: path.join(work, 'data', 'boards', 'hostile'),
      pluginsDir: path.join(work, 'plugins'),
      sandboxed: true,
    });
    await driver.start();
    await driver.files.write('/root/kept.txt', 'the old root');
    before = Object.fromEntries(Object.entries(canaries).map(([k, v]) => [k, snapshot(v)]));
  }, 120_000);

  afterAll(async () => {
    await driver?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const canariesUntouched = () => {
    for (const [k, v] of Object.entries(canaries)) expect(snapshot(v), k).toBe(before[k]);
  };
  const boardKept = async () => {
    expect((await driver.files.read('/root/kept.txt')).toString()).toBe('the old root');
    await expect(driver.probe()).resolves.toBeUndefined();
  };

  /** Flashes an image of `entries`: refused as invalid, the host's canaries and the board as they were. */
  const refusedHostUntouched = async (what: string, entries: Entry[]) => {
    const file = await image(path.join(work, `${what.replace(/\W+/g, '-')}.tar`), entries);
    await expect(driver.flash(file, () => {})).rejects.toMatchObject({ key: 'flash.image_invalid' });
    canariesUntouched();
    await boardKept();
  };

  it.each([
    ['/tmp', (c: typeof canaries) => [PASSWD, { name: 'tmp', type: 'symlink', linkname: c.etc }]],
    [
      '/var (for /var/tmp)',
      (c: typeof canaries) => [PASSWD, { name: 'var', type: 'symlink', linkname: c.pgdata }],
    ],
    ['/root', (c: typeof canaries) => [PASSWD, { name: 'root', type: 'symlink', linkname: c.ssh }]],
    [
      '/home, /opt and /run',
      (c: typeof canaries) => [
        PASSWD,
        { name: 'home', type: 'symlink', linkname: c.ssh },
        { name: 'opt', type: 'symlink', linkname: c.etc },
        { name: 'run', type: 'symlink', linkname: c.pgdata },
      ],
    ],
    [
      '/etc itself (its passwd a host file)',
      (c: typeof canaries) => [{ name: 'etc', type: 'symlink', linkname: c.etc }],
    ],
    [
      '/etc/passwd',
      (c: typeof canaries) => [
        { name: 'etc', type: 'directory' },
        { name: 'etc/passwd', type: 'symlink', linkname: path.join(c.etc, 'passwd') },
      ],
    ],
  ] as [string, (c: typeof canaries) => Entry[]][])(
    'refuses an image whose %s is a link out, and touches nothing of the host',
    (what, entries) => refusedHostUntouched(what, entries(canaries)),
    60_000,
  );

  it(
    'refuses a hard link that climbs out of the image',
    () =>
      refusedHostUntouched('hardlink', [
        PASSWD,
        { name: 'stolen', type: 'link', linkname: `../../../../../../..${canaries.etc}/passwd` },
      ]),
    60_000,
  );

  it.each([
    [
      'a link to a host directory',
      (c: typeof canaries) => [
        PASSWD,
        { name: 'a', type: 'symlink', linkname: c.pgdata },
        { name: 'a/planted', body: 'written through the link' },
      ],
    ],
    [
      'a link that climbs above the root',
      () => [
        PASSWD,
        { name: 'b', type: 'symlink', linkname: '../../../../..' },
        { name: 'b/planted', body: 'written through the link' },
      ],
    ],
  ] as [string, (c: typeof canaries) => Entry[]][])(
    'refuses entries written through %s',
    (what, entries) => refusedHostUntouched(what, entries(canaries)),
    60_000,
  );

  it('places entries written through a link of the image inside the board, and verifies them there', async () => {
    // `a -> /srv` then `a/planted`: the board sees /srv/planted, so that is where it goes, and where
    // it is read back from (never through the link).
    const file = await image(path.join(work, 'through.tar'), [
      PASSWD,
      { name: 'srv', type: 'directory' },
      { name: 'a', type: 'symlink', linkname: '/srv' },
      { name: 'a/planted', body: 'inside the board' },
      { name: 'root/kept.txt', body: 'the new root' },
    ]);
    await driver.flash(file, () => {});
    canariesUntouched();
    expect((await driver.files.read('/srv/planted')).toString()).toBe('inside the board');
    expect((await driver.files.read('/a/planted')).toString()).toBe('inside the board');
    expect((await driver.files.read('/root/kept.txt')).toString()).toBe('the new root');
    // The board's own mount points were made, with the sticky scratch directories.
    expect((await driver.files.stat('/tmp')).type).toBe('dir');
    expect((await driver.files.stat('/var/tmp')).type).toBe('dir');
    await expect(driver.probe()).resolves.toBeUndefined();
  }, 90_000);
});
