// An ssh board attacked from inside, and the service killed mid-upload to one. The board is a real
// OpenSSH server on loopback; the attacker is the board's own login user.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { boardsFeature } from '#server/boards/boards.routes.ts';
import { DriverError } from '#server/boards/driver.ts';
import { SshDriver } from '#server/boards/ssh/ssh-driver.ts';
import { systemFeature } from '#server/system/system.routes.ts';
import { sshDriverOptions } from '#shared/boards.ts';
import { makeTestApp } from './helpers/app.ts';
import { runAs, type SshdUser, startSshd, type TestSshd } from './helpers/sshd.ts';

describe('an upload to an ssh board interrupted by a crash of the service', () => {
  let sshd: TestSshd;
  let work: string;
  beforeAll(async () => {
    sshd = await startSshd();
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-ssh-crash-'));
  });
  afterAll(async () => {
    await sshd?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('leaves no temporary file once the lab starts the board again', async () => {
    const rootDir = path.join(sshd.dir, 'crash-board');
    fs.mkdirSync(rootDir);
    const dataDir = path.join(work, 'data');
    const labFile = path.join(work, 'lab.yaml');
    const boardId = 'crash-ssh';
    fs.writeFileSync(
      labFile,
      YAML.stringify({
        boards: [
          {
            id: boardId,
            name: boardId,
            driver: 'ssh',
            options: {
              host: '127.0.0.1',
              port: sshd.port,
              user: 'root',
              privateKey: sshd.clientKey,
              hostKeyFingerprint: sshd.hostKeyFingerprint,
              rootDir,
              timeoutMs: 10_000,
            },
          },
        ],
      }),
    );
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      BIANBU_CRASH_SSH: JSON.stringify({ dataDir, labFile, boardId, target: '/partial.bin' }),
    };
    // The crashing service keeps its database in memory: nothing of it must outlive the kill.
    delete env.DATABASE_URL;
    const helper = path.join(import.meta.dirname, 'helpers', 'ssh-upload-then-hang.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', helper], {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(
          () => reject(new Error('the crashing service never started its upload')),
          45_000,
        );
        child.stdout.on('data', (b: Buffer) => {
          if (b.toString().includes('WRITING')) {
            clearTimeout(t);
            resolve();
          }
        });
        child.once('exit', (code) => reject(new Error(`the crashing service exited early (${code})`)));
      });
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((r) =>
      child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r),
    );
    const temps = () => fs.readdirSync(rootDir).filter((n) => n.includes('partial'));
    // The crash left the temporary file on the board, and the service's journal names it.
    expect(temps()).toHaveLength(1);
    expect(temps()[0]).toMatch(/^\.partial\.bin\.[0-9a-f]{12}\.tmp$/);
    const journal = path.join(dataDir, 'boards', boardId, 'uploads.journal');
    expect(fs.readFileSync(journal, 'utf8')).toContain(temps()[0]);
    expect(fs.statSync(path.dirname(journal)).mode & 0o777).toBe(0o700);

    const t = await makeTestApp({
      env: {
        BIANBU_DATA_DIR: dataDir,
        BIANBU_LAB_FILE: labFile,
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      } as never,
      features: [systemFeature, boardsFeature],
    });
    try {
      const names = (await t.app.boards.driver(boardId).files.list('/')).map((e) => e.name);
      expect(names.some((n) => n.includes('partial'))).toBe(false);
      expect(temps()).toEqual([]);
      expect(JSON.parse(fs.readFileSync(journal, 'utf8')).temps).toEqual([]);
    } finally {
      await t.close();
    }
  }, 90_000);
});

/** The board's login user: unprivileged, known only to the test's sshd. */
const uidOf = () => 1_900_000_000 + crypto.randomInt(100_000);
const nr = os.arch() === 'x64' ? 316 : 276; // renameat2

describe('an ssh board attacked by its own login user', () => {
  let sshd: TestSshd;
  let work: string;
  let d: SshDriver;
  let user: SshdUser;
  let rootDir: string;
  let hostDir: string;
  let otherBoard: string;
  let image: string;
  const host: Record<string, string> = {};
  const loops: ChildProcess[] = [];
  const SECRET = 'service host secret 51c0';
  const OTHER = 'another board’s data 9e2a';

  /** A background loop of the board's user (perl, as the board would run it). */
  const loop = (script: string) => {
    const c = spawn(
      'setpriv',
      [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', 'perl', '-e', script],
      {
        stdio: 'ignore',
        cwd: '/',
      },
    );
    loops.push(c);
    return c;
  };
  const stopLoops = async () => {
    for (const c of loops.splice(0)) {
      c.kill('SIGKILL');
      if (c.exitCode === null && c.signalCode === null) await new Promise((r) => c.once('exit', r));
    }
  };
  /** The host tree outside the board, as it must stay. */
  const snapshot = (dir: string) =>
    Object.fromEntries(
      fs
        .readdirSync(dir)
        .sort()
        .map((n) => {
          const st = fs.lstatSync(path.join(dir, n));
          return [
            n,
            `${st.mode.toString(8)} ${st.uid} ${st.isFile() ? fs.readFileSync(path.join(dir, n), 'utf8') : ''}`,
          ];
        }),
    );

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-ssh-attack-'));
    fs.chmodSync(work, 0o755);
    const uid = uidOf();
    user = { name: `bianbu-t${uid}`, uid, gid: uid, home: path.join(work, 'home-a') };
    rootDir = path.join(user.home, 'files');
    fs.mkdirSync(rootDir, { recursive: true });
    fs.chownSync(user.home, uid, uid);
    fs.chownSync(rootDir, uid, uid);
    // The service host's own files, and another board's, beside the board's tree.
    hostDir = path.join(work, 'host');
    fs.mkdirSync(hostDir, { mode: 0o755 });
    for (let i = 0; i < 10; i++)
      fs.writeFileSync(path.join(hostDir, `victim${i}`), `host data ${i}\n`, { mode: 0o644 });
    fs.writeFileSync(path.join(hostDir, 'secret'), SECRET, { mode: 0o600 });
    fs.writeFileSync(path.join(hostDir, 'HOST-MARKER'), 'marker', { mode: 0o644 });
    otherBoard = path.join(work, 'home-b');
    fs.mkdirSync(otherBoard, { mode: 0o700 });
    fs.writeFileSync(path.join(otherBoard, 'b-data'), OTHER);
    fs.chownSync(otherBoard, uid + 1, uid + 1);
    fs.chownSync(path.join(otherBoard, 'b-data'), uid + 1, uid + 1);
    image = path.join(work, 'image.bin');
    fs.writeFileSync(image, crypto.randomBytes(64 * 1024 * 1024), { mode: 0o600 });
    Object.assign(host, {
      hostDir: JSON.stringify(snapshot(hostDir)),
      otherBoard: JSON.stringify(snapshot(otherBoard)),
    });

    sshd = await startSshd({ user });
    d = new SshDriver({
      boardId: 'attacked',
      name: 'attacked',
      boardDir: path.join(work, 'data', 'boards', 'attacked'),
      options: sshDriverOptions.parse({
        host: '127.0.0.1',
        port: sshd.port,
        user: user.name,
        privateKey: sshd.clientKey,
        hostKeyFingerprint: sshd.hostKeyFingerprint,
        rootDir,
        timeoutMs: 3000,
        commands: {
          flash: [
            '/bin/sh',
            '-c',
            'stat -c "%a %u" "$1" > "$2/flash-seen" && cat "$1" > "$2/flashed.img"',
            'flash',
            '{image}',
            rootDir,
          ],
          plugin: ['sort'],
        },
      }),
    });
    await d.start();
    await d.probe();
  }, 60_000);
  afterAll(async () => {
    await stopLoops();
    await d?.stop();
    await sshd?.stop();
    if (user) spawnSync('pkill', ['-KILL', '-u', String(user.uid)]);
    fs.rmSync(work, { recursive: true, force: true });
  });

  afterEach(async () => {
    await stopLoops();
    // Nothing of the service host's or the other board's changed.
    expect(JSON.stringify(snapshot(hostDir))).toBe(host.hostDir);
    expect(JSON.stringify(snapshot(otherBoard))).toBe(host.otherBoard);
  });

  it('runs as the unprivileged login user', async () => {
    const r = await d.exec('id -u; echo "$HOME"');
    expect(r.stdout.trim().split('\n')).toEqual([String(user.uid), user.home]);
  });

  it('never follows a link planted in the board to a host file or another board’s', async () => {
    const links: Record<string, string> = {
      'victim-link': path.join(hostDir, 'victim0'),
      'secret-link': path.join(hostDir, 'secret'),
      'other-link': path.join(otherBoard, 'b-data'),
      'host-dir': hostDir,
      'other-dir': otherBoard,
    };
    for (const [name, to] of Object.entries(links)) runAs(user, ['ln', '-sfn', to, path.join(rootDir, name)]);
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['read secret', () => d.files.read('/secret-link')],
      ['read victim', () => d.files.read('/victim-link')],
      ['read other', () => d.files.read('/other-link')],
      ['download secret', () => d.files.createReadStream('/secret-link')],
      ['write victim', () => d.files.write('/victim-link', 'from the service')],
      ['write other', () => d.files.write('/other-link', 'from the service')],
      ['write into host dir', () => d.files.write('/host-dir/new', 'from the service')],
      ['write into other board', () => d.files.write('/other-dir/new', 'from the service')],
      ['mkdir in host dir', () => d.files.mkdir('/host-dir/d')],
      ['remove host file', () => d.files.remove('/host-dir/victim1')],
      ['rename host file in', () => d.files.rename('/host-dir/victim2', '/moved')],
      ['list host dir', () => d.files.list('/host-dir')],
      ['list other board', () => d.files.list('/other-dir')],
      [
        'upload over victim',
        async () => {
          const w = await d.files.createWriteStream('/victim-link');
          w.stream.end('uploaded');
          await w.commit();
        },
      ],
    ];
    for (const [what, attempt] of attempts) {
      const key = await attempt().then(
        () => 'succeeded',
        (e) => (e instanceof DriverError ? e.key : `foreign: ${(e as Error).message}`),
      );
      // Refused: outside the board's root, or not even resolvable by the board's user.
      expect(['path.outside_root', 'path.denied'], `${what}: ${key}`).toContain(key);
    }
    // The links are the board's own business: still there, still links.
    for (const name of Object.keys(links))
      expect(fs.lstatSync(path.join(rootDir, name)).isSymbolicLink()).toBe(true);
  });

  it('file calls and uploads racing with rename swaps and planted temporary names reach nothing but what the board user could write', async () => {
    const race = path.join(rootDir, 'race');
    runAs(user, ['mkdir', '-p', `${race}/d`]);
    for (let i = 0; i < 10; i++) runAs(user, ['sh', '-c', `echo board > ${race}/d/victim${i}`]);
    runAs(user, ['ln', '-sfn', hostDir, `${race}/host`]);
    runAs(user, ['ln', '-sfn', otherBoard, `${race}/other`]);
    // race/d flips between the board's directory and links to the host's and the other board's.
    loop(
      `while (1) { syscall(${nr}, -100, "${race}/d", -100, "${race}/host", 2); syscall(${nr}, -100, "${race}/d", -100, "${race}/other", 2) }`,
    );
    // Every temporary file of a write is swapped, as soon as it is seen, for a link to a host file.
    loop(
      `while (1) { for my $dir ("${race}/d", "${race}/host", "${race}/other") { opendir(my $h, $dir) or next; ` +
        `for my $n (readdir $h) { next unless $n =~ /\\.tmp$/; symlink("${hostDir}/victim3", "$dir/.x"); rename("$dir/.x", "$dir/$n") } closedir $h } }`,
    );
    const pick = () => Math.floor(Math.random() * 10);
    const calls: Array<() => Promise<unknown>> = [
      () => d.files.list('/race/d'),
      () => d.files.read(`/race/d/victim${pick()}`),
      () => d.files.stat(`/race/d/victim${pick()}`),
      () => d.files.write(`/race/d/written${pick()}`, 'from the service'),
      async () => {
        const w = await d.files.createWriteStream(`/race/d/upload${pick()}`);
        w.stream.write(Buffer.alloc(300_000, 7));
        w.stream.end();
        await w.commit();
      },
      () => d.files.remove(`/race/d/victim${pick()}`),
      () => d.files.rename(`/race/d/victim${pick()}`, `/race/d/moved${pick()}`),
      () => d.files.mkdir(`/race/d/dir${pick()}`),
    ];
    let n = 0;
    const foreign: string[] = [];
    const seen: string[] = [];
    const deadline = Date.now() + 15_000;
    while (n < 1500 && Date.now() < deadline) {
      try {
        const v = await calls[n % calls.length]();
        if (Array.isArray(v)) seen.push(...v.map((e) => (e as { name: string }).name));
        if (Buffer.isBuffer(v)) seen.push(v.toString());
      } catch (err) {
        if (!(err instanceof DriverError)) foreign.push((err as Error).message);
      }
      n++;
    }
    await stopLoops();
    expect(n).toBeGreaterThan(200);
    expect(foreign).toEqual([]);
    expect(seen.join('\n')).not.toMatch(/HOST-MARKER|b-data|host data|another board/);
    // The service's own journal forgets every temporary file it made, swapped or not.
    expect(await d.files.list('/')).toBeDefined();
    const journal = JSON.parse(
      fs.readFileSync(path.join(work, 'data', 'boards', 'attacked', 'uploads.journal'), 'utf8'),
    );
    expect(journal.temps).toEqual([]);
  }, 60_000);

  it('flashes from a file in /tmp created afresh and private to the login user', async () => {
    const phases: string[] = [];
    await d.flash(image, (p) => phases.push(p.phase));
    expect(phases.at(-1)).toBe('done');
    expect(fs.readFileSync(path.join(rootDir, 'flash-seen'), 'utf8').trim()).toBe(`600 ${user.uid}`);
    expect(fs.statSync(path.join(rootDir, 'flashed.img')).size).toBe(fs.statSync(image).size);
    const left = fs
      .readdirSync('/tmp')
      .filter((n) => n.startsWith('bianbu-flash-') && fs.lstatSync(path.join('/tmp', n)).uid === user.uid);
    expect(left).toEqual([]);
  }, 60_000);

  it('fails a flash whose upload the board stalls, within the call timeout, instead of hanging', async () => {
    let stopped = false;
    const t0 = Date.now();
    const result = d
      .flash(image, (p) => {
        if (p.phase === 'writing' && !stopped) {
          stopped = true;
          // The board user stops every process of theirs, the SSH session serving the upload with them.
          spawnSync('pkill', ['-STOP', '-u', String(user.uid)]);
        }
      })
      .then(
        () => 'flashed',
        (e) => (e instanceof DriverError ? e.key : String(e)),
      );
    const outcome = await Promise.race([
      result,
      new Promise((r) => setTimeout(() => r('still hanging'), 20_000)),
    ]);
    spawnSync('pkill', ['-CONT', '-u', String(user.uid)]);
    expect(stopped).toBe(true);
    expect(outcome).toBe('driver.timeout');
    expect(Date.now() - t0).toBeLessThan(12_000);
    // The board is usable again.
    await expect(d.probe()).resolves.toBeUndefined();
  }, 60_000);

  it('passes plugin topics and node ids as names, never as options of the configured command', async () => {
    const injected = path.join(user.home, 'injected');
    const key = (p: Promise<unknown>) =>
      p.then(
        () => 'succeeded',
        (e) => (e instanceof DriverError ? e.key : String(e)),
      );
    expect(await key(d.callPlugin(`-o${injected}`, '/dev/null', '/dev/null'))).toBe('plugin.unknown');
    expect(await key(d.callPlugin('topic', '/dev/null', `-o${injected}`))).toBe('plugin.unknown');
    expect(fs.existsSync(injected)).toBe(false);
  });
});
