// A local board attacked from inside, as its root user would: the board's root is not the host's,
// nothing of the service's environment reaches it, planted links and rename races never make the
// service touch a host file, and its memory, process, CPU and disk limits hold. Real bubblewrap
// sandboxes in user namespaces, real cgroups, a real ext4 image on a loop device.
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DriverError, type PtyHandle } from '#server/boards/driver.ts';
import { hostSupport } from '#server/boards/local/host-support.ts';
import { LocalDriver } from '#server/boards/local/local-driver.ts';
import { namespaceOf, pidsByNamespace } from '#server/boards/local/procfs.ts';
import { UID_BASE } from '#server/boards/local/uid-slots.ts';
import { localDriverOptions } from '#shared/boards.ts';

const host = hostSupport();
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-iso-'));
// After every board of the file has stopped (the suites' own afterAll hooks run first).
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

function makeBoard(
  id: string,
  opts: Partial<{ memoryMb: number; diskQuotaMb: number; maxProcesses: number; cores: number }> = {},
) {
  return new LocalDriver({
    boardId: id,
    name: `iso-${id}`,
    model: 'Test Board',
    cores: opts.cores,
    options: localDriverOptions.parse({
      memoryMb: opts.memoryMb ?? 256,
      diskQuotaMb: opts.diskQuotaMb ?? 128,
      maxProcesses: opts.maxProcesses ?? 256,
    }),
    boardDir: path.join(work, 'data', 'boards', id),
    pluginsDir: path.join(work, 'plugins'),
    sandboxed: true,
  });
}

/** Runs a command line in a board shell and answers its output and exit status. */
async function sh(
  board: LocalDriver,
  command: string,
  timeoutMs = 30_000,
): Promise<{ out: string; code: number }> {
  const p: PtyHandle = await board.openShell({ cols: 200, rows: 50 });
  const tag = crypto.randomBytes(4).toString('hex');
  let text = '';
  const done = new Promise<{ out: string; code: number }>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`timed out: ${command}\n${text.slice(-2000)}`)),
      timeoutMs,
    );
    p.onData((b) => {
      text += b.toString('utf8');
      const m = new RegExp(`<<${tag}:(\\d+)>>\\r?\\n`).exec(text);
      const start = text.indexOf(`<<${tag}-start>>\r\n`);
      if (m && start >= 0) {
        clearTimeout(timer);
        resolve({ out: text.slice(start + tag.length + 12, m.index), code: Number(m[1]) });
      }
    });
  });
  // The markers are printed by the shell (split strings), so the echoed command line never matches.
  p.write(`stty -echo; echo "<<${tag}""-start>>"; ( ${command} ) 2>&1; echo "<<${tag}:$?"">>"\n`);
  try {
    return await done;
  } finally {
    p.close();
  }
}

// No skipping: a host that cannot isolate boards (or enforce a limit) fails here with the reason.

const enforced = (what: string, ok: boolean) => {
  if (!ok) throw new Error(`${what} is not enforced on this host: ${host.missing.join('; ')}`);
};

describe('a local board is not the host', () => {
  let a: LocalDriver;
  let b: LocalDriver;
  const savedEnv = { ...process.env };

  beforeAll(async () => {
    enforced('board isolation', host.userns);
    // Secrets in the service's environment, as a real deployment has them.
    process.env.BIANBU_ADMIN_PASSWORD = 'admin-secret-4b7c';
    process.env.DATABASE_URL = 'postgres://svc:db-secret-91ea@127.0.0.1/prod';
    a = makeBoard('a');
    b = makeBoard('b');
    await Promise.all([a.start(), b.start()]);
  });
  afterAll(async () => {
    process.env = savedEnv;
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('runs root inside as a host uid of its own range, never host root', async () => {
    const r = await sh(a, 'id -u; touch /root/mine; echo ok');
    expect(r.out).toContain('0\r\n');
    const st = fs.statSync(path.join(a.rootPath, 'root', 'mine'));
    expect(st.uid).toBeGreaterThanOrEqual(UID_BASE);
    expect(st.uid).toBe(a.hostUid);
    expect(b.hostUid).not.toBe(a.hostUid);
    // Board processes get the usual umask, not the service's private one.
    expect(st.mode & 0o777).toBe(0o644);
    expect(Math.abs((b.hostUid ?? 0) - (a.hostUid ?? 0))).toBeGreaterThanOrEqual(65536);
  });

  it('refuses host-wide kernel settings from inside the board', async () => {
    const before = fs.readFileSync('/proc/sys/kernel/core_pattern', 'utf8');
    const r = await sh(
      a,
      'echo "|/tmp/pwn" > /proc/sys/kernel/core_pattern; echo 1 > /proc/sys/fs/file-max; echo done',
    );
    expect(r.out).toMatch(/Permission denied|Read-only file system/);
    expect(fs.readFileSync('/proc/sys/kernel/core_pattern', 'utf8')).toBe(before);
  });

  it('a setuid program planted in a board gives no host user root', async () => {
    await sh(a, 'cp /usr/bin/id /tmp/s && chmod 4755 /tmp/s && ls -ln /tmp/s');
    const planted = path.join(a.rootPath, 'tmp', 's');
    const st = fs.statSync(planted);
    expect(st.uid).not.toBe(0);
    expect(st.uid).toBe(a.hostUid);
    // A host user who reaches the file: the board directory does not let it through, and the
    // board's file system is mounted nosuid in any case.
    let out = '';
    try {
      out = execFileSync(
        '/usr/bin/setpriv',
        ['--reuid=65534', '--regid=65534', '--clear-groups', planted, '-u'],
        { encoding: 'utf8', stdio: 'pipe' },
      );
    } catch (err) {
      out = String((err as { stderr?: string }).stderr ?? '');
    }
    expect(out.trim()).not.toBe('0');
    if (host.loopDisk)
      expect(fs.readFileSync('/proc/self/mountinfo', 'utf8')).toMatch(
        new RegExp(`${fs.realpathSync(a.rootPath)} \\S*nosuid`),
      );
  });

  it('sees neither the service, nor the host network, nor the other board', async () => {
    const r = await sh(
      a,
      `ls /proc | grep -c '^[0-9]'; kill -0 ${process.pid} && echo SEEN; (echo > /dev/tcp/127.0.0.1/5432) 2>/dev/null && echo PG_REACHED; echo end`,
    );
    const count = Number(r.out.split('\r\n')[0]);
    expect(count).toBeGreaterThan(0);
    expect(count).toBeLessThan(20);
    expect(r.out).not.toContain('PG_REACHED');
    const inB = await sh(b, 'sleep 300 & echo $!');
    const pidInB = Number(inB.out.trim().split('\r\n').pop());
    const r2 = await sh(a, `kill -9 ${pidInB} 2>&1; ps -e -o comm= | grep -c sleep`);
    expect(r2.out).not.toContain('killed');
    expect((await sh(b, 'pgrep -c -x sleep')).out.trim()).not.toBe('0');
  });

  it('starts with a clean environment: no service secret reaches the board', async () => {
    const r = await sh(
      a,
      "tr '\\0' '\\n' < /proc/1/environ; env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
    );
    expect(r.out).toContain('PATH=');
    expect(r.out).not.toContain('admin-secret-4b7c');
    expect(r.out).not.toContain('db-secret-91ea');
    expect(r.out).not.toContain('BIANBU_');
  });

  it("holds no descriptor of the service's: it cannot type into another board's shell", async () => {
    // A shell of board B stays open: the descriptor of its terminal is the service's, and node-pty
    // opens it without close-on-exec. (The board's own terminals and devpts are the board's: its PTY
    // host holds path handles on /dev/pts and /dev/pts/ptmx.)
    const victim = await b.openShell({ cols: 80, rows: 24 });
    let victimText = '';
    victim.onData((d) => {
      victimText += d.toString();
    });
    try {
      await new Promise((res) => setTimeout(res, 300));
      // Board A's root looks at every descriptor its processes hold beyond stdio, and writes a command
      // into each one its own shell holds (through /proc, a terminal would be opened anew).
      const probe = await sh(
        a,
        'for p in /proc/[0-9]*; do [ "$p" = /proc/$$ ] && continue; read -r _ _ _ pp _ < $p/stat; [ "$pp" = $$ ] && continue; ' +
          'for f in $p/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] || continue; ' +
          'l=$(readlink "$f" 2>/dev/null) || continue; case "$l" in /dev/pts|/dev/pts/*|/proc/*|/dev/null|anon_inode:*) continue;; esac; ' +
          'echo "HELD $(cat $p/comm) ${p#/proc/} $n $l"; done; done; ' +
          'for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && [ "$n" != 255 ] && printf "echo INJECTED-\\$(hostname)\\r" >&$n; done 2>/dev/null; echo scanned',
      );
      expect(probe.out).toContain('scanned');
      victim.write('echo victim-"alive"\r');
      await new Promise((res) => setTimeout(res, 800));
      expect(victimText).toContain('victim-alive');
      expect(victimText).not.toContain('INJECTED-');
      // Nothing of the host in any process of the board (beyond the probe's own shell and its
      // subshells): no PTY master (/dev/ptmx), pipe, socket or file of the service's.
      // A pipe whose two ends one process holds is its own (Node's internal wake-up pipes).
      const held = probe.out.split('\r\n').filter((l) => l.startsWith('HELD'));
      const own = (l: string) => {
        const [, , pid, , link] = l.split(' ');
        return (
          link.startsWith('pipe:') &&
          held.filter((h) => h.split(' ')[2] === pid && h.endsWith(` ${link}`)).length === 2
        );
      };
      expect(held.filter((l) => !own(l))).toEqual([]);
    } finally {
      victim.close();
    }
  });

  it('a folder with more names than a listing answers is listed up to the bound and removed in batches (the board chooses the sizes of its folders)', async () => {
    // 25,000 names: more than a listing answers (20,000) and many removal batches.
    await sh(a, 'mkdir -p /root/many && cd /root/many && seq 1 25000 | xargs touch', 120_000);
    const list = await a.files.list('/root/many');
    expect(list).toHaveLength(20_000);
    await a.files.remove('/root/many', { recursive: true });
    await expect(a.files.stat('/root/many')).rejects.toMatchObject({ key: 'path.not_found' });
  }, 180_000);

  it('power reset never follows links the board planted', async () => {
    const hostFile = path.join(work, `host-file-${crypto.randomBytes(3).toString('hex')}`);
    const hostNew = path.join(work, `host-new-${crypto.randomBytes(3).toString('hex')}`);
    const hostDir = path.join(work, `host-dir-${crypto.randomBytes(3).toString('hex')}`);
    fs.writeFileSync(hostFile, 'original host content\n', { mode: 0o644 });
    fs.mkdirSync(hostDir, { mode: 0o755 });
    fs.chmodSync(hostDir, 0o755);
    await sh(
      a,
      `ln -sf ${hostFile} /etc/hostname && ln -sf ${hostNew} /etc/hosts && mv /var/tmp /var/tmp.o && ln -s ${hostDir} /var/tmp && ln -s ${hostDir} /tmp.l && echo planted`,
    );
    await a.powerReset();
    expect(fs.readFileSync(hostFile, 'utf8')).toBe('original host content\n');
    expect(fs.statSync(hostFile).mode & 0o7777).toBe(0o644);
    expect(fs.existsSync(hostNew)).toBe(false);
    expect(fs.statSync(hostDir).mode & 0o7777).toBe(0o755);
    // The board came back and its hostname is its own.
    expect((await sh(a, 'hostname')).out).toContain('iso-a');
  });

  it('file calls racing with rename swaps inside the board never reach a host file', async () => {
    const hostDir = path.join(work, `race-host-${crypto.randomBytes(3).toString('hex')}`);
    fs.mkdirSync(hostDir);
    const hostFiles = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [`victim${i}`, `host data ${i}\n`]),
    );
    for (const [n, c] of Object.entries(hostFiles)) fs.writeFileSync(path.join(hostDir, n), c);
    fs.writeFileSync(path.join(hostDir, 'HOST-MARKER'), 'marker');
    // renameat2(AT_FDCWD, d, AT_FDCWD, l, RENAME_EXCHANGE) in a loop: /root/race/d flips between a
    // directory and a symlink to the host directory's path.
    const nr = os.arch() === 'x64' ? 316 : 276;
    await sh(
      a,
      `mkdir -p /root/race/d && for i in $(seq 0 19); do echo board > /root/race/d/victim$i; done && ln -sfn ${hostDir} /root/race/l && ` +
        `(nohup perl -e 'while (1) { syscall(${nr}, -100, "/root/race/d", -100, "/root/race/l", 2) }' >/dev/null 2>&1 &) && echo started`,
    );
    const calls: Array<() => Promise<unknown>> = [
      () => a.files.list('/root/race/d'),
      () => a.files.read('/root/race/d/victim3'),
      () => a.files.stat('/root/race/d/victim4'),
      () => a.files.remove(`/root/race/d/victim${Math.floor(Math.random() * 20)}`),
      () =>
        a.files.rename(
          `/root/race/d/victim${Math.floor(Math.random() * 20)}`,
          `/root/race/d/moved${Math.floor(Math.random() * 20)}`,
        ),
      () => a.files.write(`/root/race/d/written${Math.floor(Math.random() * 20)}`, 'from the service'),
      () => a.files.mkdir(`/root/race/d/dir${Math.floor(Math.random() * 20)}`),
      () => a.files.readlink('/root/race/d'),
    ];
    let n = 0;
    let foreign = 0;
    const deadline = Date.now() + 20_000;
    const listings: string[] = [];
    while (n < 3000 && Date.now() < deadline) {
      const call = calls[n % calls.length];
      try {
        const v = await call();
        if (Array.isArray(v)) listings.push(...v.map((e) => (e as { name: string }).name));
      } catch (err) {
        if (!(err instanceof DriverError)) foreign++;
      }
      n++;
    }
    await sh(a, 'pkill -f syscall; echo stopped');
    expect(n).toBeGreaterThan(500);
    expect(foreign).toBe(0);
    expect(listings).not.toContain('HOST-MARKER');
    expect(fs.readdirSync(hostDir).sort()).toEqual([...Object.keys(hostFiles), 'HOST-MARKER'].sort());
    for (const [name, content] of Object.entries(hostFiles))
      expect(fs.readFileSync(path.join(hostDir, name), 'utf8')).toBe(content);
  }, 60_000);
});

describe('a local board lives within its limits', () => {
  let board: LocalDriver;
  beforeAll(async () => {
    board = makeBoard('lim', { memoryMb: 128, diskQuotaMb: 96, maxProcesses: 64, cores: 1 });
    await board.start();
  });
  afterAll(async () => {
    await board?.stop();
  });

  it('gets ENOSPC at its disk quota, and the host disk grows by at most the quota', async () => {
    enforced('disk', host.loopDisk);
    const r = await sh(
      board,
      'fallocate -l 1G /root/big; echo "rc=$?"; dd if=/dev/zero of=/root/fill bs=1M count=200 2>&1 | tail -1; df -k / | tail -1',
    );
    expect(r.out).toMatch(/No space left on device/);
    const image = fs.statSync(path.join(work, 'data', 'boards', 'lim', 'disk.img'));
    expect(image.blocks * 512).toBeLessThanOrEqual(96 * 1024 * 1024);
    // The file API meets the same wall, and leaves no partial file behind.
    await sh(board, 'rm -f /root/big /root/fill');
    const w = await board.files.createWriteStream('/root/upload.bin');
    const chunk = Buffer.alloc(1024 * 1024, 7);
    let failed: unknown = null;
    w.stream.on('error', () => {});
    try {
      for (let i = 0; i < 200 && !w.stream.destroyed; i++) {
        if (!w.stream.write(chunk) && !w.stream.destroyed)
          await new Promise<void>((res) => w.stream.once('drain', () => res()).once('close', () => res()));
      }
      await w.commit();
    } catch (err) {
      failed = err;
      await w.abort();
    }
    expect(failed).toBeInstanceOf(DriverError);
    expect((failed as DriverError).key).toBe('path.no_space');
    const left = (await board.files.list('/root')).map((e) => e.name);
    expect(left.filter((n) => n.includes('upload'))).toEqual([]);
  });

  it('an allocation beyond its memory is killed inside the board, which stays up', async () => {
    enforced('memory', Boolean(host.cgroups.memory));
    const r = await sh(board, 'head -c 400M /dev/zero | tail -c 400M > /dev/null; echo "rc=$?"');
    expect(r.out).toMatch(/rc=(137|1)/);
    expect(r.out).not.toContain('rc=0');
    await board.probe(5000);
    expect((await sh(board, 'echo alive')).out).toContain('alive');
  });

  it('a fork bomb stops at its process limit', async () => {
    enforced('pids', Boolean(host.cgroups.pids));
    // Forks sleeping children until fork fails, then reports how many it made and why it stopped.
    const bomb =
      'my @k; while (@k < 500) { my $p = fork(); if (!defined $p) { print "stopped after ", scalar(@k), ": $!\\n"; last } ' +
      'if ($p == 0) { sleep 60; exit 0 } push @k, $p } kill 9, @k; waitpid($_, 0) for @k;';
    const r = await sh(board, `perl -e '${bomb}'`);
    const m = /stopped after (\d+): (.*)/.exec(r.out);
    expect(m, r.out).not.toBeNull();
    expect(m?.[2]).toMatch(/Resource temporarily unavailable/);
    expect(Number(m?.[1])).toBeGreaterThan(10);
    expect(Number(m?.[1])).toBeLessThan(64);
    expect((await sh(board, 'echo alive')).out).toContain('alive');
  });

  it('two busy loops of a one-core board get about one core', async () => {
    enforced('cpu', Boolean(host.cgroups.cpu));
    const r = await sh(
      board,
      '(timeout 3 sh -c "while :; do :; done" &) ; (timeout 3 sh -c "while :; do :; done" &) ; sleep 0.3; echo started',
    );
    expect(r.out).toContain('started');
    const t0 = Date.now();
    const busy = () =>
      execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes('while :; do :; done') && !l.includes('timeout'))
        .map((l) => Number(l.trim().split(/\s+/)[0]));
    const ticks = (pids: number[]) =>
      pids.reduce((s, p) => {
        try {
          const f = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
          const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
          return s + Number(rest[11]) + Number(rest[12]);
        } catch {
          return s;
        }
      }, 0);
    const pids = busy();
    expect(pids.length).toBe(2);
    const before = ticks(pids);
    await new Promise((r2) => setTimeout(r2, 2000));
    const used = (ticks(pids) - before) / 100;
    const wall = (Date.now() - t0 - 0) / 1000;
    // Unlimited, two loops on this 2-core machine would use close to 2 s per second.
    expect(used / wall).toBeLessThan(1.3);
  });
});

describe('a local board’s processes, as its load graph counts them', () => {
  let board: LocalDriver;
  beforeAll(async () => {
    board = makeBoard('members');
    await board.start();
  });
  afterAll(async () => {
    await board?.stop();
  });

  it('come from its own cgroup, and are those of its PID namespace', async () => {
    enforced('pids', Boolean(host.cgroups.pids));
    // A process the board's root started in the background, and one it moved to a new session.
    const r = await sh(board, '(sleep 30 &) ; setsid sleep 31 < /dev/null > /dev/null 2>&1 & echo started');
    expect(r.out).toContain('started');
    const ns = (pid: number) => namespaceOf(pid);
    await expect
      .poll(() => {
        const members = board.members();
        const sleeps = members.filter((p) => {
          try {
            return fs.readFileSync(`/proc/${p}/cmdline`, 'latin1').startsWith('sleep\u000031');
          } catch {
            return false;
          }
        });
        return sleeps.length;
      })
      .toBe(1);
    const members = board.members();
    expect(members.length).toBeGreaterThan(1);
    // Every one is the board's (its PID namespace), and the namespace holds no process the cgroup misses.
    const boardNs = ns(members[0]);
    expect(boardNs).not.toBeNull();
    expect(members.every((p) => ns(p) === boardNs || !fs.existsSync(`/proc/${p}`))).toBe(true);
    const inNs = pidsByNamespace(0).get(boardNs!) ?? [];
    expect(inNs.filter((p) => fs.existsSync(`/proc/${p}`) && !members.includes(p))).toEqual([]);
    // The service's own process is never counted as the board's.
    expect(members).not.toContain(process.pid);
    // What the read costs against a scan of the host's processes (reported, not asserted).
    const cost = (fn: () => unknown) => {
      const t0 = performance.now();
      for (let i = 0; i < 50; i++) fn();
      return ((performance.now() - t0) / 50).toFixed(3);
    };
    console.log(
      `board processes: ${members.length} of ${fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length} on the host; ` +
        `from the cgroup ${cost(() => board.members())} ms, by scanning /proc ${cost(() => pidsByNamespace(0))} ms`,
    );
  });
});

describe('an upload interrupted by a crash of the service', () => {
  it('leaves no temporary file once the board is started again', async () => {
    const id = 'crash';
    const opts = { memoryMb: 256, diskQuotaMb: 128, maxProcesses: 256 };
    const env = {
      ...process.env,
      BIANBU_CRASH_BOARD: JSON.stringify({
        id,
        name: `iso-${id}`,
        options: opts,
        boardDir: path.join(work, 'data', 'boards', id),
        pluginsDir: path.join(work, 'plugins'),
        target: '/root/partial.bin',
      }),
    };
    const helper = path.join(import.meta.dirname, 'helpers', 'upload-then-hang.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', helper], {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('the crashing service never started its upload')), 45_000);
      child.stdout.on('data', (b: Buffer) => {
        if (b.toString().includes('WRITING')) {
          clearTimeout(t);
          resolve();
        }
      });
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const board = makeBoard(id);
    // The sandbox of the killed service died with it (--die-with-parent); the disk stays mounted.
    await board.start();
    try {
      const names = (await board.files.list('/root')).map((e) => e.name);
      expect(names.some((n) => n.includes('partial'))).toBe(false);
      const hostNames = fs.readdirSync(path.join(board.rootPath, 'root'));
      expect(hostNames.some((n) => n.includes('partial'))).toBe(false);
    } finally {
      await board.stop();
    }
  }, 90_000);
});
