// One driver suite, run against both drivers: a real bubblewrap sandbox (local) and a real OpenSSH
// server on loopback (ssh). What only the local sandbox does is in boards-driver-local.test.ts, what
// only an ssh board does in boards-driver-ssh.test.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BoardDriver, DriverError, type PtyHandle } from '#server/boards/driver.ts';
import { LocalDriver } from '#server/boards/local/local-driver.ts';
import { SshDriver } from '#server/boards/ssh/ssh-driver.ts';
import { localDriverOptions, sshDriverOptions } from '#shared/boards.ts';
import { runInShell } from './helpers/board-shell.ts';
import { startSshd, type TestSshd } from './helpers/sshd.ts';

interface Fixture {
  driver: BoardDriver;
  /** The hostname a shell of this board reports. */
  hostname: string;
  /** Host directory that is the board's root for file operations. */
  rootHost: string;
  /** A host file outside the root, in a sibling directory whose name extends the root's. */
  siblingSecret: string;
  cleanup(): Promise<void>;
}

const SECRET = 'host-secret-7d1f';

async function makeLocal(): Promise<Fixture> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-drv-'));
  const boardDir = path.join(dir, 'boards', 'b1');
  const driver = new LocalDriver({
    boardId: 'b1',
    name: 'board-t1',
    model: 'Test Board',
    options: localDriverOptions.parse({}),
    boardDir,
    pluginsDir: path.join(dir, 'plugins'),
    sandboxed: true,
  });
  await driver.start();
  const rootHost = fs.realpathSync(driver.rootPath);
  const sibling = `${rootHost}0`;
  fs.mkdirSync(sibling, { recursive: true });
  fs.writeFileSync(path.join(sibling, 'secret'), SECRET);
  return {
    driver,
    hostname: 'board-t1',
    rootHost,
    siblingSecret: path.join(sibling, 'secret'),
    cleanup: async () => {
      await driver.stop();
      fs.rmSync(sibling, { recursive: true, force: true });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let sshd: TestSshd | null = null;
async function makeSsh(): Promise<Fixture> {
  sshd = await startSshd();
  const rootHost = path.join(sshd.dir, 'board1');
  fs.mkdirSync(rootHost);
  fs.mkdirSync(`${rootHost}0`);
  fs.writeFileSync(path.join(`${rootHost}0`, 'secret'), SECRET);
  const driver = new SshDriver({
    boardId: 's1',
    name: 'ssh-1',
    options: sshDriverOptions.parse({
      host: '127.0.0.1',
      port: sshd.port,
      user: 'root',
      privateKey: sshd.clientKey,
      hostKeyFingerprint: sshd.hostKeyFingerprint,
      rootDir: rootHost,
      timeoutMs: 5000,
      commands: { powerReset: sshd.resetCommand },
    }),
  });
  await driver.start();
  return {
    driver,
    hostname: os.hostname(),
    rootHost,
    siblingSecret: path.join(`${rootHost}0`, 'secret'),
    cleanup: async () => {
      await driver.stop();
      await sshd?.stop();
    },
  };
}

async function errorKey(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof DriverError) return err.key;
    throw err;
  }
  return 'no error';
}

describe.each([
  ['local', makeLocal],
  ['ssh', makeSsh],
] as const)('the %s board driver', (kind, make) => {
  let f: Fixture;
  let shell: PtyHandle;
  beforeAll(async () => {
    f = await make();
    shell = await f.driver.openShell({ cols: 120, rows: 30 });
  });
  afterAll(async () => {
    shell?.close();
    await f?.cleanup();
  });
  const p = (name: string) => (kind === 'ssh' ? name : `/root/${name}`);

  it('runs commands in a PTY shell and answers their output', async () => {
    expect(await runInShell(shell, 'echo $((6*7)); tty')).toMatch(/^42\n\/dev\/pts\/\d+/);
  });

  it('reports the board hostname inside the shell', async () => {
    expect((await runInShell(shell, 'hostname')).trim()).toBe(f.hostname);
  });

  it('shares processes between shells of the same board', async () => {
    await runInShell(shell, 'sleep 7771 &');
    const other = await f.driver.openShell({ cols: 80, rows: 24 });
    try {
      expect(await runInShell(other, 'ps -eo args')).toContain('sleep 7771');
    } finally {
      other.close();
    }
  });

  it('resizes the PTY', async () => {
    shell.resize({ cols: 101, rows: 33 });
    await new Promise((r) => setTimeout(r, 100));
    expect((await runInShell(shell, 'stty size')).trim()).toBe('33 101');
  });

  it('writes, reads, lists, renames and removes files', async () => {
    const fs_ = f.driver.files;
    await fs_.mkdir(p('work'));
    await fs_.write(p('work/a.txt'), 'hello board');
    expect((await fs_.read(p('work/a.txt'))).toString()).toBe('hello board');
    const list = await fs_.list(p('work'));
    expect(list.map((e) => [e.name, e.type, e.size])).toEqual([['a.txt', 'file', 11]]);
    await fs_.rename(p('work/a.txt'), p('work/b.txt'));
    expect((await fs_.stat(p('work/b.txt'))).type).toBe('file');
    expect(await errorKey(fs_.stat(p('work/a.txt')))).toBe('path.not_found');
    expect(await errorKey(fs_.remove(p('work')))).toBe('path.exists');
    await fs_.remove(p('work'), { recursive: true });
    expect(await errorKey(fs_.list(p('work')))).toBe('path.not_found');
  });

  it('sees in files what the shell wrote, and the shell sees what files wrote', async () => {
    const dir = kind === 'ssh' ? f.rootHost : '/root';
    await runInShell(shell, `printf 'from shell' > ${dir}/shell.txt`);
    expect((await f.driver.files.read(p('shell.txt'))).toString()).toBe('from shell');
    await f.driver.files.write(p('files.txt'), 'from files');
    expect(await runInShell(shell, `cat ${dir}/files.txt`)).toBe('from files');
  });

  it('writes atomically: readers see old or new content, never a part, and no temp file stays', async () => {
    const big = 'x'.repeat(2_000_000);
    await f.driver.files.write(p('atomic.txt'), 'old');
    const reads: string[] = [];
    const writer = f.driver.files.write(p('atomic.txt'), big);
    for (let i = 0; i < 10; i++) reads.push((await f.driver.files.read(p('atomic.txt'))).toString());
    await writer;
    reads.push((await f.driver.files.read(p('atomic.txt'))).toString());
    for (const r of reads) expect(r === 'old' || r === big).toBe(true);
    expect(reads.at(-1)).toBe(big);
    const names = (await f.driver.files.list(kind === 'ssh' ? '/' : '/root')).map((e) => e.name);
    expect(names.filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses paths that climb out of the board root', async () => {
    for (const bad of [
      '../etc/passwd',
      '/../../etc/passwd',
      `${p('a')}/../../../../../..${f.siblingSecret}`,
    ]) {
      expect(await errorKey(f.driver.files.read(bad))).toBe('path.outside_root');
      expect(await errorKey(f.driver.files.write(bad, 'x'))).toBe('path.outside_root');
    }
    expect(
      await errorKey(f.driver.files.read(`../${path.basename(path.dirname(f.siblingSecret))}/secret`)),
    ).toBe('path.outside_root');
  });

  it('refuses NUL bytes, names over 255 bytes and paths over 4096 bytes', async () => {
    expect(await errorKey(f.driver.files.read('a\0b'))).toBe('path.invalid');
    expect(await errorKey(f.driver.files.write(`/${'n'.repeat(256)}`, 'x'))).toBe('path.name_too_long');
    expect(await errorKey(f.driver.files.read(`/${'d/'.repeat(2100)}`))).toBe('path.too_long');
  });

  it('never reaches a host file through a symlink planted inside the board', async () => {
    const dir = kind === 'ssh' ? f.rootHost : '/root';
    const climb = '../'.repeat(30);
    await runInShell(
      shell,
      `ln -sf ${climb}${f.siblingSecret.slice(1)} ${dir}/rel-link; ln -sf ${f.siblingSecret} ${dir}/abs-link; ln -sf /etc/passwd ${dir}/pw-link; ln -sfn ${climb}tmp ${dir}/dir-link`,
    );
    const hostPasswd = fs.readFileSync('/etc/passwd', 'utf8');
    for (const link of ['rel-link', 'abs-link', 'pw-link']) {
      const got = await f.driver.files.read(p(link)).then(
        (b) => b.toString(),
        (err: DriverError) => err.key,
      );
      expect(got).not.toContain(SECRET);
      expect(got).not.toBe(hostPasswd);
      // ssh: the service resolves links and refuses those leaving the root. local: the board's own file
      // server resolves them inside the board, where the host file does not exist.
      if (kind === 'ssh') expect(got).toBe('path.outside_root');
      else if (link !== 'pw-link') expect(got).toBe('path.not_found');
      // A board may write its own /etc/passwd; links that point at host files must fail.
      if (link !== 'pw-link')
        expect(await errorKey(f.driver.files.write(p(link), 'pwned'))).not.toBe('no error');
    }
    expect(fs.readFileSync(f.siblingSecret, 'utf8')).toBe(SECRET);
    if (kind === 'ssh')
      expect(await errorKey(f.driver.files.write(p('dir-link/escaped'), 'x'))).toBe('path.outside_root');
    else {
      // The climb ends at the board's own /tmp: the write lands there, inside the board.
      await f.driver.files.write(p('dir-link/escaped'), 'x');
      expect(fs.readFileSync(path.join(f.rootHost, 'tmp', 'escaped'), 'utf8')).toBe('x');
    }
    expect(fs.existsSync('/tmp/escaped')).toBe(false);
    // The link itself is the board's: it can be looked at and removed.
    expect((await f.driver.files.stat(p('rel-link'))).type).toBe('symlink');
    await f.driver.files.remove(p('rel-link'));
  });

  it('reads a symlink’s target text without following it, wherever it points', async () => {
    const dir = kind === 'ssh' ? f.rootHost : '/root';
    const climb = '../'.repeat(30);
    await runInShell(
      shell,
      `mkdir -p ${dir}/links; ln -sfn notes.txt ${dir}/links/near; ln -sfn ${f.siblingSecret} ${dir}/links/abs-out; ln -sfn ${climb}${f.siblingSecret.slice(1)} ${dir}/links/rel-out; ln -sfn ${climb}tmp ${dir}/links/dir-out; echo plain > ${dir}/links/plain.txt`,
    );
    const rl = (name: string) => f.driver.files.readlink(p(`links/${name}`));
    expect(await rl('near')).toBe('notes.txt');
    expect(await rl('abs-out')).toBe(f.siblingSecret);
    expect(await rl('rel-out')).toBe(`${climb}${f.siblingSecret.slice(1)}`);
    expect(await rl('dir-out')).toBe(`${climb}tmp`);
    // Only the last component is left unfollowed: a parent that leaves the root is refused (ssh), or
    // resolves inside the board, where the climb ends at its own /tmp (local).
    expect(await errorKey(f.driver.files.readlink(p('links/dir-out/anything')))).toBe(
      kind === 'ssh' ? 'path.outside_root' : 'path.not_found',
    );
    expect(
      await errorKey(f.driver.files.readlink(`../${path.basename(path.dirname(f.siblingSecret))}/secret`)),
    ).toBe('path.outside_root');
    expect(await errorKey(rl('plain.txt'))).toBe('path.invalid');
    expect(await errorKey(rl('missing'))).toBe('path.not_found');
    expect(
      (await f.driver.files.list(p('links'))).filter((e) => e.type === 'symlink').map((e) => e.name),
    ).toEqual(['abs-out', 'dir-out', 'near', 'rel-out']);
    await f.driver.files.remove(p('links'), { recursive: true });
    expect(fs.readFileSync(f.siblingSecret, 'utf8')).toBe(SECRET);
  });

  it('samples metrics with sane figures', async () => {
    await f.driver.sampleMetrics();
    await runInShell(shell, 'timeout 1 sh -c "while :; do :; done"');
    const m = await f.driver.sampleMetrics();
    expect(m.cpuPercent).toBeGreaterThan(5);
    expect(m.cpuPercent).toBeLessThanOrEqual(100);
    expect(m.memUsed).toBeGreaterThan(0);
    expect(m.memUsed).toBeLessThan(m.memTotal);
    expect(m.diskUsed).toBeGreaterThan(0);
    expect(m.diskUsed).toBeLessThan(m.diskTotal);
    expect(m.netRx).toBeGreaterThanOrEqual(0);
    expect(m.netTx).toBeGreaterThanOrEqual(0);
  });

  it('passes a health probe', async () => {
    await expect(f.driver.probe(3000)).resolves.toBeUndefined();
  });

  it('power reset ends every process and keeps the files', async () => {
    await f.driver.files.write(p('kept.txt'), 'still here');
    await runInShell(shell, 'sleep 7772 &');
    const exited = new Promise((r) => shell.onExit(r));
    await f.driver.powerReset();
    await exited;
    shell = await f.driver.openShell({ cols: 120, rows: 30 });
    const ps = await runInShell(shell, 'ps -eo args');
    expect(ps).not.toContain('sleep 7772');
    expect(ps).not.toContain('sleep 7771');
    expect((await f.driver.files.read(p('kept.txt'))).toString()).toBe('still here');
  });

  it('reports a missing capability as a clear error', async () => {
    if (kind === 'ssh') {
      expect(f.driver.capabilities().has('plugin')).toBe(false);
      expect(await errorKey(f.driver.callPlugin('x', 'y', 'z'))).toBe('capability.unsupported');
      expect(await errorKey(f.driver.openSerial({ cols: 80, rows: 24 }))).toBe('capability.unsupported');
    } else {
      expect(f.driver.capabilities().has('plugin')).toBe(true);
      expect(await errorKey(f.driver.callPlugin('no-such-plugin', 'y', 'z'))).toBe('plugin.unknown');
      expect(await errorKey(f.driver.callPlugin('../../bin/sh', 'y', 'z'))).toBe('plugin.unknown');
    }
  });
});
