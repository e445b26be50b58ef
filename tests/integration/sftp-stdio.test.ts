// The shared SFTP file implementation over a plain pipe: OpenSSH's sftp-server run on the host with
// a temporary directory as its working directory (the board's root here), spoken to over its
// stdin/stdout with ssh2's SFTP client through openSftpOverStdio, and driven through sftpFiles — the
// same code a sandboxed local board runs with the server inside its sandbox. Also: the pipelined
// streams against a fake server that answers out of order and short, and the upload journal's sweep
// after a crash.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { SFTPWrapper } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BoardDriver, DriverError } from '#server/boards/driver.ts';
import { sftpFiles } from '#server/boards/sftp/sftp-files.ts';
import { SftpReadStream, SftpWriteStream } from '#server/boards/sftp/sftp-streams.ts';
import { bulkOf, openSftpOverStdio } from '#server/boards/sftp/stdio-sftp.ts';
import { isTempName, TempJournal } from '#server/boards/sftp/temp-journal.ts';

const SFTP_SERVER = '/usr/lib/openssh/sftp-server';
const isRoot = process.getuid?.() === 0;

async function errorKey(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof DriverError) return err.key;
    throw err;
  }
  return 'no error';
}

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const temps = (dir: string) => fs.readdirSync(dir).filter(isTempName);

/** sftp-servers on the host, one at a time, a new one when the last ended (as a driver would). */
function serverPool(cwd: string) {
  let current: { child: ChildProcess; session: Promise<SFTPWrapper> } | null = null;
  const children: ChildProcess[] = [];
  let pipeFull = 0;
  let writesWhileFull = 0;
  const spawnOne = () => {
    const child = spawn(SFTP_SERVER, ['-e'], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(child);
    // Counts the times the pipe to the server was full (the adapter must then hold packets back). A
    // packet written in pieces under cork() counts as begun when its first piece went.
    const stdin = child.stdin as Writable;
    const write = stdin.write.bind(stdin) as (chunk: Buffer) => boolean;
    const cork = stdin.cork.bind(stdin);
    const uncork = stdin.uncork.bind(stdin);
    let full = false;
    let corked: { fullAtStart: boolean } | null = null;
    stdin.on('drain', () => {
      full = false;
    });
    stdin.cork = () => {
      corked = { fullAtStart: full };
      cork();
    };
    stdin.uncork = () => {
      corked = null;
      uncork();
    };
    stdin.write = ((chunk: Buffer) => {
      if (corked ? corked.fullAtStart : full) writesWhileFull++;
      const more = write(chunk);
      if (!more) {
        pipeFull++;
        full = true;
      }
      return more;
    }) as Writable['write'];
    const session = openSftpOverStdio({
      stdin: child.stdin as Writable,
      stdout: child.stdout as Readable,
      stderr: child.stderr,
      kill: () => child.kill('SIGKILL'),
    });
    const entry = { child, session };
    current = entry;
    const forget = () => {
      if (current === entry) current = null;
    };
    session.then((s) => s.once('close', forget), forget);
    return entry;
  };
  return {
    sftp: () => (current ?? spawnOne()).session,
    /** The server of the session in use, killed as a crash or a reset would. */
    crash: () => current?.child.kill('SIGKILL'),
    close: () => {
      for (const c of children) c.kill('SIGKILL');
    },
    spawned: () => children.length,
    pipeFull: () => pipeFull,
    writesWhileFull: () => writesWhileFull,
  };
}

describe('sftp files over a host-run sftp-server', () => {
  let work: string;
  let root: string;
  let outside: string;
  let pool: ReturnType<typeof serverPool>;
  let files: BoardDriver['files'];
  let journal: TempJournal;
  const onRoot = (p: string) => path.join(root, p);

  beforeAll(() => {
    work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-sftp-')));
    root = path.join(work, 'board');
    outside = path.join(work, 'outside');
    fs.mkdirSync(root);
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'secret'), 'host secret');
    pool = serverPool(root);
    journal = new TempJournal(path.join(work, 'uploads.journal'));
    files = sftpFiles({ sftp: pool.sftp, rootDir: root, timeoutMs: 15_000, journal });
  });
  afterAll(() => {
    pool?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('completes the handshake with OpenSSH’s extensions and 255 KiB reads and writes', async () => {
    const s = (await pool.sftp()) as unknown as {
      _extensions: Record<string, string>;
      _maxWriteLen: number;
      _maxReadLen: number;
    };
    expect(s._extensions['posix-rename@openssh.com']).toBe('1');
    expect(s._extensions['statvfs@openssh.com']).toBeDefined();
    // From limits@openssh.com: 256 KiB messages less 1 KiB of header room.
    expect(s._maxWriteLen).toBe(261120);
    expect(s._maxReadLen).toBe(261120);
  });

  it('lists, stats, reads, writes, renames, reads links and removes', async () => {
    fs.mkdirSync(onRoot('a/z-dir'), { recursive: true });
    fs.writeFileSync(onRoot('a/b.txt'), 'hello');
    fs.chmodSync(onRoot('a/b.txt'), 0o640);
    fs.symlinkSync('b.txt', onRoot('a/link'));
    const list = await files.list('/a');
    expect(list.map((e) => [e.name, e.type])).toEqual([
      ['z-dir', 'dir'],
      ['b.txt', 'file'],
      ['link', 'symlink'],
    ]);
    expect(list[1]).toMatchObject({ path: '/a/b.txt', size: 5 });
    expect(list[1].mode & 0o777).toBe(0o640);
    expect(await files.stat('/a/link')).toMatchObject({ type: 'symlink', path: '/a/link' });
    expect((await files.stat('/')).type).toBe('dir');
    expect((await files.read('/a/b.txt')).toString()).toBe('hello');
    expect((await files.read('/a/link')).toString()).toBe('hello');
    expect(await files.readlink('/a/link')).toBe('b.txt');
    expect(await errorKey(files.readlink('/a/b.txt'))).toBe('path.invalid');

    await files.write('/a/b.txt', 'replaced');
    expect(fs.readFileSync(onRoot('a/b.txt'), 'utf8')).toBe('replaced');
    expect(fs.statSync(onRoot('a/b.txt')).mode & 0o777).toBe(0o640);
    // A write through a symlink lands on its target, which stays a file; the link stays a link.
    await files.write('/a/link', 'via link');
    expect(fs.readFileSync(onRoot('a/b.txt'), 'utf8')).toBe('via link');
    expect(fs.lstatSync(onRoot('a/link')).isSymbolicLink()).toBe(true);
    await files.write('/a/new.txt', Buffer.from([0, 1, 2]));
    expect([...fs.readFileSync(onRoot('a/new.txt'))]).toEqual([0, 1, 2]);
    expect(fs.statSync(onRoot('a/new.txt')).mode & 0o777).toBe(0o644);

    await files.mkdir('/a/made');
    expect(fs.statSync(onRoot('a/made')).isDirectory()).toBe(true);
    await files.rename('/a/new.txt', '/a/made/moved.txt');
    expect(fs.readFileSync(onRoot('a/made/moved.txt')).length).toBe(3);
    // A rename replaces an existing file in one step.
    await files.rename('/a/made/moved.txt', '/a/b.txt');
    expect(fs.readFileSync(onRoot('a/b.txt')).length).toBe(3);

    fs.writeFileSync(onRoot('a/made/deep.txt'), 'x');
    await files.remove('/a/link');
    expect(fs.existsSync(onRoot('a/b.txt'))).toBe(true);
    await files.remove('/a', { recursive: true });
    expect(fs.existsSync(onRoot('a'))).toBe(false);
    expect(temps(root)).toEqual([]);
    expect(await journal.entries()).toEqual([]);
  });

  it('answers the same error keys as the host-side implementation', async () => {
    fs.mkdirSync(onRoot('e/full'), { recursive: true });
    fs.writeFileSync(onRoot('e/full/x'), 'x');
    fs.writeFileSync(onRoot('e/file'), 'f');
    fs.symlinkSync('loop2', onRoot('e/loop1'));
    fs.symlinkSync('loop1', onRoot('e/loop2'));
    fs.symlinkSync(outside, onRoot('e/out'));
    expect(await errorKey(files.read('/e/missing'))).toBe('path.not_found');
    expect(await errorKey(files.stat('/e/missing/deeper'))).toBe('path.not_found');
    expect(await errorKey(files.list('/e/missing'))).toBe('path.not_found');
    expect(await errorKey(files.remove('/e/missing'))).toBe('path.not_found');
    expect(await errorKey(files.write('/e/missing/a.txt', 'x'))).toBe('path.not_found');
    expect(await errorKey(files.stat('/e/file/x'))).toBe('path.not_a_directory');
    expect(await errorKey(files.list('/e/file'))).toBe('path.not_a_directory');
    expect(await errorKey(files.write('/e/file/x', 'x'))).toBe('path.not_a_directory');
    expect(await errorKey(files.mkdir('/e/full'))).toBe('path.exists');
    expect(await errorKey(files.remove('/e/full'))).toBe('path.exists');
    expect(await errorKey(files.rename('/e/file', '/e/full'))).toBe('path.is_a_directory');
    expect(await errorKey(files.rename('/e/full', '/e/file'))).toBe('path.not_a_directory');
    fs.mkdirSync(onRoot('e/other/sub'), { recursive: true });
    expect(await errorKey(files.rename('/e/other', '/e/full'))).toBe('path.exists');
    expect(await errorKey(files.write('/e/full', 'x'))).toBe('path.is_a_directory');
    expect(await errorKey(files.read('/e/full'))).toBe('path.is_a_directory');
    expect(await errorKey(files.createReadStream('/e/full'))).toBe('path.is_a_directory');
    expect(await errorKey(files.read('/e/loop1'))).toBe('path.invalid');
    expect(await errorKey(files.read('/e/out/secret'))).toBe('path.outside_root');
    expect(await errorKey(files.list('/e/out'))).toBe('path.outside_root');
    expect(await errorKey(files.read('../outside/secret'))).toBe('path.outside_root');
    expect(await errorKey(files.read('/e/file', 0))).toBe('file.too_large');
    // A FIFO with no writer would hold the server in open(): refused, and the session goes on.
    execFileSync('mkfifo', [onRoot('e/fifo')]);
    expect(await errorKey(files.read('/e/fifo'))).toBe('path.invalid');
    expect(await errorKey(files.createReadStream('/e/fifo'))).toBe('path.invalid');
    expect((await files.read('/e/file')).toString()).toBe('f');
    expect(fs.readFileSync(path.join(outside, 'secret'), 'utf8')).toBe('host secret');
    expect(temps(onRoot('e'))).toEqual([]);
  });

  it('streams: a committed write stream replaces the file, an aborted one leaves the old file and no temp', async () => {
    fs.mkdirSync(onRoot('s'));
    fs.writeFileSync(onRoot('s/t.bin'), 'old');
    const sink = await files.createWriteStream('/s/t.bin');
    expect(temps(onRoot('s'))).toHaveLength(1);
    expect(await journal.entries()).toHaveLength(1);
    await pipeline(async function* () {
      yield Buffer.from('new ');
      yield Buffer.from('content');
    }, sink.stream);
    expect(fs.readFileSync(onRoot('s/t.bin'), 'utf8')).toBe('old');
    await sink.commit();
    expect(fs.readFileSync(onRoot('s/t.bin'), 'utf8')).toBe('new content');
    expect(temps(onRoot('s'))).toEqual([]);
    expect(await journal.entries()).toEqual([]);

    const aborted = await files.createWriteStream('/s/t.bin');
    aborted.stream.write(Buffer.alloc(3 * 1024 * 1024, 7));
    await aborted.abort();
    expect(fs.readFileSync(onRoot('s/t.bin'), 'utf8')).toBe('new content');
    expect(temps(onRoot('s'))).toEqual([]);
    expect(await journal.entries()).toEqual([]);

    let read = '';
    for await (const c of await files.createReadStream('/s/t.bin')) read += c;
    expect(read).toBe('new content');
    // An empty file ends at once.
    fs.writeFileSync(onRoot('s/empty'), '');
    const chunks: Buffer[] = [];
    for await (const c of await files.createReadStream('/s/empty')) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).length).toBe(0);
  });

  it('round-trips 64 MiB through the streams with the same sha256, with backpressure on the writer', async () => {
    fs.mkdirSync(onRoot('big'));
    const data = crypto.randomBytes(64 * 1024 * 1024 + 12345);
    const sink = await files.createWriteStream('/big/blob');
    const pipeFullBefore = pool.pipeFull();
    let refused = 0;
    for (let off = 0; off < data.length; off += 64 * 1024) {
      if (!sink.stream.write(data.subarray(off, off + 64 * 1024))) {
        refused++;
        await new Promise((r) => sink.stream.once('drain', r));
      }
    }
    await sink.commit();
    // Backpressure all the way: from the pipe (the adapter shut its window) to this writer.
    expect(pool.pipeFull()).toBeGreaterThan(pipeFullBefore);
    expect(pool.writesWhileFull()).toBe(0);
    expect(refused).toBeGreaterThan(0);
    expect(sha(fs.readFileSync(onRoot('big/blob')))).toBe(sha(data));
    const h = crypto.createHash('sha256');
    let n = 0;
    for await (const c of await files.createReadStream('/big/blob')) {
      h.update(c as Buffer);
      n += (c as Buffer).length;
    }
    expect(n).toBe(data.length);
    expect(h.digest('hex')).toBe(sha(data));
    await files.remove('/big', { recursive: true });
  });

  it.skipIf(!isRoot)(
    'asks the free space every time and reports a full disk as path.no_space, leaving no temp',
    async () => {
      const small = onRoot('small');
      fs.mkdirSync(small);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', small]);
      try {
        const before = await files.freeSpace('/small');
        expect(before).toBeGreaterThan(3 * 1024 * 1024);
        expect(before).toBeLessThanOrEqual(4 * 1024 * 1024);
        fs.writeFileSync(path.join(small, 'filler'), Buffer.alloc(2 * 1024 * 1024));
        expect(await files.freeSpace('/small')).toBeLessThanOrEqual(before - 2 * 1024 * 1024);
        fs.writeFileSync(path.join(small, 'target'), 'old bytes');
        const sink = await files.createWriteStream('/small/target');
        const failed = pipeline(async function* () {
          for (let i = 0; i < 24; i++) yield Buffer.alloc(256 * 1024, i);
        }, sink.stream).then(
          () => sink.commit(),
          async (err) => {
            await sink.abort();
            throw err;
          },
        );
        expect(await errorKey(failed)).toBe('path.no_space');
        expect(await errorKey(files.write('/small/other', Buffer.alloc(3 * 1024 * 1024)))).toBe(
          'path.no_space',
        );
        expect(fs.readdirSync(small).sort()).toEqual(['filler', 'target']);
        expect(fs.readFileSync(path.join(small, 'target'), 'utf8')).toBe('old bytes');
      } finally {
        execFileSync('umount', ['-l', small]);
      }
    },
  );

  it('removes the temp file on abort even when the server died mid-upload, on a fresh session', async () => {
    fs.mkdirSync(onRoot('drop'));
    fs.writeFileSync(onRoot('drop/t.bin'), 'kept');
    const sink = await files.createWriteStream('/drop/t.bin');
    sink.stream.write(Buffer.alloc(1024 * 1024, 1));
    await sleep(50);
    const spawned = pool.spawned();
    pool.crash();
    await sleep(100);
    sink.stream.write(Buffer.alloc(1024 * 1024, 2));
    await sink.abort();
    expect(pool.spawned()).toBe(spawned + 1);
    expect(fs.readdirSync(onRoot('drop'))).toEqual(['t.bin']);
    expect(fs.readFileSync(onRoot('drop/t.bin'), 'utf8')).toBe('kept');
    expect(await journal.entries()).toEqual([]);
    // The new session serves calls as before.
    expect((await files.read('/drop/t.bin')).toString()).toBe('kept');
  });

  it('sweeps the temp files of a crashed run and touches nothing else', async () => {
    const dir = onRoot('crash');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'up.bin'), 'the old upload');
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'not ours');
    const file = path.join(work, 'crash.journal');
    const runOne = new TempJournal(file);
    const crashPool = serverPool(root);
    const crashFiles = sftpFiles({ sftp: crashPool.sftp, rootDir: root, timeoutMs: 15_000, journal: runOne });
    const uploads = [];
    for (const name of ['up.bin', 'swapped.bin', 'made-dir.bin']) {
      const u = await crashFiles.createWriteStream(`/crash/${name}`);
      u.stream.write(Buffer.alloc(300 * 1024, 9));
      uploads.push(u);
    }
    await sleep(100);
    // A path that is no temp name, journalled by mistake: never removed.
    await runOne.add(path.join(dir, 'notes.txt'));
    const [tmpUp, tmpSwapped, tmpDir] = (await runOne.entries()).slice(0, 3);
    expect([tmpUp, tmpSwapped, tmpDir].every((p) => isTempName(path.basename(p)) && fs.existsSync(p))).toBe(
      true,
    );
    // The service dies: no commit, no abort; its sftp-server goes with it.
    crashPool.crash();
    crashPool.close();
    await sleep(100);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    // Meanwhile the board's user swaps one temp for a link to a host file, another for a directory.
    fs.rmSync(tmpSwapped);
    fs.symlinkSync(path.join(outside, 'secret'), tmpSwapped);
    fs.rmSync(tmpDir);
    fs.mkdirSync(tmpDir);

    const next = new TempJournal(file);
    expect((await next.entries()).sort()).toEqual(
      [tmpUp, tmpSwapped, tmpDir, path.join(dir, 'notes.txt')].sort(),
    );
    const sweepPool = serverPool(root);
    try {
      const result = await next.sweep(await sweepPool.sftp());
      expect(result.removed).toEqual([tmpUp]);
      expect(result.skipped.sort()).toEqual([tmpSwapped, tmpDir, path.join(dir, 'notes.txt')].sort());
    } finally {
      sweepPool.close();
    }
    expect(fs.existsSync(tmpUp)).toBe(false);
    expect(fs.lstatSync(tmpSwapped).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(path.join(outside, 'secret'), 'utf8')).toBe('host secret');
    expect(fs.statSync(tmpDir).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'up.bin'), 'utf8')).toBe('the old upload');
    expect(fs.readFileSync(path.join(dir, 'notes.txt'), 'utf8')).toBe('not ours');
    expect(await next.entries()).toEqual([]);
    expect(await new TempJournal(file).entries()).toEqual([]);
  });

  it('takes the copy-free read and write path and stays whole when the answers arrive cut at any byte', async () => {
    // The server's output re-cut into pieces of 1 to 40 bytes, and now and then a large one, so every
    // packet header and every DATA answer straddles reads.
    const child = spawn(SFTP_SERVER, ['-e'], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
    const cut = new PassThrough();
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    (child.stdout as Readable).on('data', (b: Buffer) => {
      for (let p = 0; p < b.length; ) {
        const n = rand() % 9 === 0 ? 70_000 : 1 + (rand() % 40);
        cut.write(b.subarray(p, p + n));
        p += n;
      }
    });
    (child.stdout as Readable).on('end', () => cut.end());
    const s = await openSftpOverStdio({
      stdin: child.stdin as Writable,
      stdout: cut,
      kill: () => child.kill('SIGKILL'),
    });
    try {
      expect(bulkOf(s)).toBeDefined();
      const cutFiles = sftpFiles({ sftp: async () => s, rootDir: root, timeoutMs: 15_000 });
      fs.mkdirSync(onRoot('cut'));
      const data = crypto.randomBytes(3 * 1024 * 1024 + 4321);
      const sink = await cutFiles.createWriteStream('/cut/blob');
      // Writes of odd sizes: requests are made of slices of several of them.
      await pipeline(async function* () {
        for (let off = 0; off < data.length; off += 10_007) yield data.subarray(off, off + 10_007);
      }, sink.stream);
      await sink.commit();
      expect(sha(fs.readFileSync(onRoot('cut/blob')))).toBe(sha(data));
      const parts: Buffer[] = [];
      for await (const c of await cutFiles.createReadStream('/cut/blob')) parts.push(c as Buffer);
      expect(sha(Buffer.concat(parts))).toBe(sha(data));
      // Other calls between and after, through ssh2's own parser on the same cut stream.
      expect((await cutFiles.list('/cut')).map((e) => e.name)).toEqual(['blob']);
      expect(await errorKey(cutFiles.createReadStream('/cut/none'))).toBe('path.not_found');
      await cutFiles.remove('/cut', { recursive: true });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('fails a read whose answer the server never finished, and the stream with it', async () => {
    fs.mkdirSync(onRoot('half'));
    fs.writeFileSync(onRoot('half/blob'), crypto.randomBytes(4 * 1024 * 1024));
    const child = spawn(SFTP_SERVER, ['-e'], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
    // The server's output stops in the middle of the first DATA answer, then the server dies.
    const out = new PassThrough();
    let passed = 0;
    let stop = Number.POSITIVE_INFINITY;
    (child.stdout as Readable).on('data', (b: Buffer) => {
      const room = stop - passed;
      if (room <= 0) return;
      out.write(room >= b.length ? b : b.subarray(0, room));
      passed += Math.min(room, b.length);
      if (passed >= stop) child.kill('SIGKILL');
    });
    (child.stdout as Readable).on('end', () => out.end());
    const s = await openSftpOverStdio({
      stdin: child.stdin as Writable,
      stdout: out,
      kill: () => child.kill('SIGKILL'),
    });
    const halfFiles = sftpFiles({ sftp: async () => s, rootDir: root, timeoutMs: 15_000 });
    const stream = await halfFiles.createReadStream('/half/blob');
    stop = passed + 100_000;
    const failed = await (async () => {
      for await (const _ of stream) {
        // drained
      }
    })().then(
      () => null,
      (e: Error) => e,
    );
    expect(failed).toBeInstanceOf(Error);
    fs.rmSync(onRoot('half'), { recursive: true });
  });

  it('fails calls at once, not forever, after the server ended, and the handshake when it never answers', async () => {
    const child = spawn(SFTP_SERVER, ['-e'], { cwd: root });
    const s = await openSftpOverStdio({
      stdin: child.stdin,
      stdout: child.stdout,
      kill: () => child.kill('SIGKILL'),
    });
    const closed = new Promise((r) => s.once('close', r));
    // Stopped first, so the request below cannot be answered before the server dies.
    child.kill('SIGSTOP');
    const pending = new Promise<Error | undefined>((r) => s.stat(root, (err) => r(err)));
    await sleep(20);
    child.kill('SIGKILL');
    await closed;
    expect(await pending).toBeInstanceOf(Error);
    const started = Date.now();
    const late = await new Promise<Error | undefined>((r) => s.stat(root, (err) => r(err)));
    expect(late?.message).toMatch(/no response/i);
    expect(Date.now() - started).toBeLessThan(1000);

    // A process that never speaks SFTP: the handshake times out and the process is killed.
    const mute = spawn('sleep', ['30']);
    const muteIo = new PassThrough();
    let killed = false;
    const t0 = Date.now();
    const err = await openSftpOverStdio(
      {
        stdin: mute.stdin,
        stdout: muteIo,
        kill: () => {
          killed = true;
          mute.kill('SIGKILL');
          muteIo.end();
        },
      },
      { handshakeTimeoutMs: 300 },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(DriverError);
    expect(err.key).toBe('driver.timeout');
    expect(killed).toBe(true);
    expect(Date.now() - t0).toBeLessThan(3000);

    // A process that exits at once: driver.failed, with what it said on stderr.
    const gone = spawn('/bin/sh', ['-c', 'echo cannot start >&2; exit 3']);
    const failed = await openSftpOverStdio({
      stdin: gone.stdin,
      stdout: gone.stdout,
      stderr: gone.stderr,
      kill: () => gone.kill(),
    }).catch((e) => e);
    expect(failed).toBeInstanceOf(DriverError);
    expect(failed.key).toBe('driver.failed');
  });
});

/** A fake SFTP session over a buffer: answers after random delays, reads short at random. */
function fakeSftp(file: Buffer, opts: { shortReads: boolean }) {
  const written = Buffer.alloc(file.length);
  let maxOffset = 0;
  let inFlight = 0;
  let peak = 0;
  const later = (fn: () => void) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    setTimeout(
      () => {
        inFlight--;
        fn();
      },
      Math.floor(Math.random() * 4),
    );
  };
  const sftp = {
    _maxReadLen: 64 * 1024,
    _maxWriteLen: 64 * 1024,
    read(
      _h: Buffer,
      buf: Buffer,
      off: number,
      len: number,
      pos: number,
      cb: (err: Error | undefined, nb: number) => void,
    ) {
      later(() => {
        const avail = Math.max(0, Math.min(len, file.length - pos));
        const nb =
          opts.shortReads && avail > 1 && Math.random() < 0.3
            ? 1 + Math.floor(Math.random() * (avail - 1))
            : avail;
        if (nb > 0) file.copy(buf, off, pos, pos + nb);
        cb(undefined, nb);
      });
    },
    write(_h: Buffer, buf: Buffer, off: number, len: number, pos: number, cb: (err?: Error) => void) {
      const copy = Buffer.from(buf.subarray(off, off + len));
      later(() => {
        copy.copy(written, pos);
        maxOffset = Math.max(maxOffset, pos + len);
        cb();
      });
    },
    close(_h: Buffer, cb: (err?: Error) => void) {
      later(() => cb());
    },
  };
  return { sftp: sftp as unknown as SFTPWrapper, written, stats: () => ({ peak, maxOffset }) };
}

describe('pipelined SFTP streams', () => {
  const options = { settleMs: 1000, mapError: async (e: Error) => e };

  it('deliver a file in order with several reads in flight, however short and late the answers', async () => {
    const data = crypto.randomBytes(3 * 1024 * 1024 + 777);
    const fake = fakeSftp(data, { shortReads: true });
    const chunks: Buffer[] = [];
    for await (const c of new SftpReadStream(fake.sftp, Buffer.from('h'), options)) chunks.push(c as Buffer);
    expect(sha(Buffer.concat(chunks))).toBe(sha(data));
    expect(fake.stats().peak).toBeGreaterThan(4);
  });

  it('write every byte at its offset with several writes in flight', async () => {
    const data = crypto.randomBytes(2 * 1024 * 1024 + 333);
    const fake = fakeSftp(Buffer.alloc(data.length), { shortReads: false });
    const stream = new SftpWriteStream(fake.sftp, Buffer.from('h'), options);
    await pipeline(async function* () {
      for (let off = 0; off < data.length; off += 10_000) yield data.subarray(off, off + 10_000);
    }, stream);
    expect(fake.stats().maxOffset).toBe(data.length);
    expect(sha(fake.written)).toBe(sha(data));
    expect(fake.stats().peak).toBeGreaterThan(4);
  });
});
