// One driver suite, run against both drivers: a real bubblewrap sandbox (local) and a real OpenSSH
// server on loopback (ssh).
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BoardDriver, Capability, DriverError, type PtyHandle } from '#server/boards/driver.ts';
import { LocalDriver } from '#server/boards/local/local-driver.ts';
import { shQuote } from '#server/boards/ssh/quote.ts';
import { SshDriver } from '#server/boards/ssh/ssh-driver.ts';
import { localDriverOptions, sshDriverOptions } from '#shared/boards.ts';
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

/** Runs a command line in a shell and answers its output (between markers the typed echo cannot contain). */
async function runInShell(shell: PtyHandle, command: string, timeoutMs = 10_000): Promise<string> {
  const id = Math.random().toString(36).slice(2, 8);
  let out = '';
  const off = shell.onData((b) => {
    out += b.toString();
  });
  // One typed line (the PTY echoes it before any output); eval runs the command as its own line.
  shell.write(`echo "BEG""IN${id}"; eval ${shQuote(command)}; printf '\\nEN''D${id}\\n'\r`);
  const deadline = Date.now() + timeoutMs;
  while (!new RegExp(`\\nEND${id}`).test(out)) {
    if (Date.now() > deadline) throw new Error(`no answer to ${command}: ${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  off();
  const start = out.search(new RegExp(`BEGIN${id}\\r?\\n`));
  return out
    .slice(start)
    .replace(new RegExp(`^BEGIN${id}\\r?\\n`), '')
    .replace(new RegExp(`\\r?\\nEND${id}[\\s\\S]*$`), '')
    .replace(/\r/g, '')
    .replace(/\n+$/, '');
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

describe('a local board sandbox', () => {
  let dir: string;
  let driver: LocalDriver;
  let shell: PtyHandle;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-sbx-'));
    fs.mkdirSync(path.join(dir, 'plugins'));
    fs.writeFileSync(path.join(dir, 'plugins', 'echo-args'), '#!/bin/sh\nprintf "%s|" "$@"; hostname\n', {
      mode: 0o755,
    });
    driver = new LocalDriver({
      boardId: 'b2',
      name: 'board-t2',
      model: 'Test Board',
      options: localDriverOptions.parse({}),
      boardDir: path.join(dir, 'boards', 'b2'),
      pluginsDir: path.join(dir, 'plugins'),
      sandboxed: true,
    });
    await driver.start();
    shell = await driver.openShell({ cols: 120, rows: 30 });
  });
  afterAll(async () => {
    shell?.close();
    await driver?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('probes a board a command just ran in without forking the service', async () => {
    const dc = await import('node:diagnostics_channel');
    let spawned = 0;
    const count = () => {
      spawned++;
    };
    dc.subscribe('child_process', count);
    try {
      await driver.callPlugin('echo-args', 'x', 'n'); // a command that entered the board just now
      spawned = 0;
      for (let i = 0; i < 5; i++) await driver.probe(3000);
      expect(spawned).toBe(0);
    } finally {
      dc.unsubscribe('child_process', count);
    }
  });

  it('shows only the board processes, none of the host', async () => {
    const ps = await runInShell(shell, 'ps -eo pid,args');
    expect(ps).not.toContain('vitest');
    expect(ps).not.toMatch(/\bnode\b/);
    expect(ps.split('\n').length).toBeLessThan(12);
    expect(ps).toMatch(/^\s+1 \S*bwrap/m);
  });

  it('starts a login shell without a process of its start-up files, with the colours dircolors gives', async () => {
    // The board's own pid namespace: the last pid moves by one per process started in it. Debian's
    // /etc/profile and ~/.bashrc start two (`id -u`, `dircolors -b`), each 1.5–4 ms in a board.
    const login = 'bash -il -c \'alias ls; printf "%s\\n" "$LS_COLORS"\' </dev/null 2>/dev/null';
    const out = await runInShell(
      shell,
      `read -r _ _ _ _ a < /proc/loadavg; ${login}; read -r _ _ _ _ b < /proc/loadavg; echo "started $((b - a))"`,
    );
    const [alias, colors, started] = out.split('\n');
    expect(started).toBe('started 1');
    expect(alias).toBe("alias ls='ls --color=auto'");
    const fresh = await runInShell(
      shell,
      'eval "$(TERM=xterm-256color dircolors -b)"; printf "%s\\n" "$LS_COLORS"',
    );
    expect(colors).toMatch(/^rs=0:di=/);
    expect(colors).toBe(fresh);
    // A ~/.dircolors of the user's own is read as Debian's .bashrc reads it.
    const own = await runInShell(
      shell,
      `printf 'TERM xterm-256color\\nDIR 01;35\\n' > ~/.dircolors; ${login} | tail -1; rm ~/.dircolors`,
    );
    expect(own).toMatch(/di=01;35/);
    expect(await runInShell(shell, 'stat -c %a /root')).toBe('700');
  });

  it('has no network but loopback', async () => {
    const ifaces = await runInShell(shell, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
    expect(ifaces.trim().split('\n')).toEqual(['lo']);
    expect(
      await runInShell(shell, 'ping -c1 -W1 1.1.1.1 >/dev/null 2>&1 && echo reached || echo unreachable'),
    ).toBe('unreachable');
  });

  it("runs root with a container runtime's default capabilities, only inside its user namespace, and the host /usr read-only", async () => {
    // chown, dac_override, fowner, fsetid, kill, setgid, setuid, setpcap, net_bind_service, net_raw,
    // sys_chroot, audit_write, setfcap: no sys_admin, no sys_module, no sys_ptrace.
    expect(await runInShell(shell, "grep CapEff /proc/self/status | tr -d '\\t'")).toBe(
      'CapEff:00000000a00425fb',
    );
    expect(await runInShell(shell, "grep CapBnd /proc/self/status | tr -d '\\t'")).toBe(
      'CapBnd:00000000a00425fb',
    );
    expect(await runInShell(shell, 'cat /proc/self/uid_map | tr -s " "')).toMatch(/^ ?0 \d{10} 65536$/);
    expect(await runInShell(shell, 'touch /usr/x 2>&1 || true')).toContain('Read-only file system');
  });

  it('shows boot messages and a login prompt on the serial console, and logs in', async () => {
    const serial = await driver.openSerial({ cols: 100, rows: 30 });
    let out = '';
    serial.onData((b) => {
      out += b.toString();
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain('OpenSBI');
    expect(out).toMatch(/board-t2 login: $/);
    serial.write('nobody-here\r');
    await new Promise((r) => setTimeout(r, 200));
    expect(out).toContain('Login incorrect');
    serial.write('user\r');
    await new Promise((r) => setTimeout(r, 600));
    serial.write('echo "I""D=$(id -un) G""S=$(id -G) T""TY=$(tty) CAPS=$(grep CapEff /proc/self/status | cut -f2)"\r');
    const deadline = Date.now() + 5000;
    while (!/CAPS=\w+/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain('ID=user');
    // The user's own groups (none of root's), a terminal of the board's, no capability left.
    const groups = /GS=([\d ]+) TTY/.exec(out)?.[1].split(' ') ?? [];
    expect(groups[0]).toBe('1000');
    expect(groups).not.toContain('0');
    expect(out).toMatch(/TTY=\/dev\/pts\/\d+/);
    expect(out).toContain('CAPS=0000000000000000');
    await driver.powerReset();
    await new Promise((r) => setTimeout(r, 300));
    expect(out.split('OpenSBI').length).toBeGreaterThanOrEqual(3);
    expect(out).toMatch(/board-t2 login: $/);
    serial.close();
    shell = await driver.openShell({ cols: 120, rows: 30 });
  });

  it('calls plugins with topic, data and nodeId as arguments, never through a shell', async () => {
    const out = await driver.callPlugin('echo-args', '$(touch /tmp/pwned); rm -rf /', 'node-1');
    expect(out).toBe('echo-args|$(touch /tmp/pwned); rm -rf /|node-1|board-t2\n');
    await expect(driver.files.stat('/tmp/pwned')).rejects.toMatchObject({ key: 'path.not_found' });
  });

  it('connects to a TCP port inside the board', async () => {
    await runInShell(
      shell,
      `node -e "require('net').createServer(s=>s.end('hello from board')).listen(5901,'127.0.0.1')" & sleep 0.5`,
    );
    const sock = await driver.connectPort(5901);
    const got = await new Promise<string>((resolve) => {
      let t = '';
      sock.on('data', (b: Buffer) => {
        t += b.toString();
      });
      sock.on('end', () => resolve(t));
    });
    expect(got).toBe('hello from board');
    await expect(driver.connectPort(5999)).rejects.toMatchObject({ key: 'driver.failed' });
  });

  it('flashes a tar.gz image with progress, swapping the root and rebooting', async () => {
    const src = path.join(dir, 'img');
    fs.mkdirSync(path.join(src, 'etc'), { recursive: true });
    fs.mkdirSync(path.join(src, 'root'), { recursive: true });
    fs.writeFileSync(
      path.join(src, 'etc', 'passwd'),
      'root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n',
    );
    fs.writeFileSync(path.join(src, 'etc', 'group'), 'root:x:0:\n');
    fs.writeFileSync(path.join(src, 'root', 'flashed.txt'), 'from image');
    const image = path.join(dir, 'image.tar.gz');
    const { execFileSync } = await import('node:child_process');
    execFileSync('tar', ['-czf', image, '-C', src, '.']);
    await driver.files.write('/root/before.txt', 'old root');
    const phases: string[] = [];
    await driver.flash(image, (p) => phases.push(`${p.phase}:${p.percent}`));
    expect(phases[0]).toBe('preparing:0');
    expect(phases.at(-1)).toBe('done:100');
    expect(phases.some((p) => p.startsWith('writing'))).toBe(true);
    expect((await driver.files.read('/root/flashed.txt')).toString()).toBe('from image');
    await expect(driver.files.stat('/root/before.txt')).rejects.toMatchObject({ key: 'path.not_found' });
    const sh = await driver.openShell({ cols: 80, rows: 24 });
    expect(await runInShell(sh, 'cat /root/flashed.txt; echo; hostname')).toBe('from image\nboard-t2');
    sh.close();
  });

  it('refuses an image that escapes its root and keeps the board as it was', async () => {
    const evil = path.join(dir, 'evil.tar');
    const tar = (await import('tar-stream')).default;
    const pack = tar.pack();
    pack.entry({ name: '../../../../../../tmp/bianbu-evil-entry' }, 'x');
    pack.finalize();
    const chunks: Buffer[] = [];
    for await (const c of pack) chunks.push(c as Buffer);
    fs.writeFileSync(evil, Buffer.concat(chunks));
    await expect(driver.flash(evil, () => {})).rejects.toMatchObject({
      key: 'flash.image_invalid',
      message: expect.stringMatching(/outside|leaves|root/),
    });
    expect(fs.existsSync('/tmp/bianbu-evil-entry')).toBe(false);
    expect((await driver.files.read('/root/flashed.txt')).toString()).toBe('from image');
    await expect(driver.probe()).resolves.toBeUndefined();
  });

  it('restores the default image', async () => {
    await driver.restoreDefault();
    await expect(driver.files.stat('/root/flashed.txt')).rejects.toMatchObject({ key: 'path.not_found' });
    expect((await driver.files.read('/etc/os-release')).toString()).toContain('Bianbu');
    await expect(driver.probe()).resolves.toBeUndefined();
  });
});

describe('an ssh board', () => {
  let s: TestSshd;
  const opts = (o: Record<string, unknown> = {}) =>
    sshDriverOptions.parse({
      host: '127.0.0.1',
      port: s.port,
      user: 'root',
      privateKey: s.clientKey,
      hostKeyFingerprint: s.hostKeyFingerprint,
      rootDir: s.dir,
      timeoutMs: 3000,
      ...o,
    });
  beforeAll(async () => {
    s = await startSshd();
  });
  afterAll(() => s?.stop());

  it('refuses a host whose key is not the pinned one', async () => {
    const d = new SshDriver({
      boardId: 'x',
      name: 'x',
      options: opts({ hostKeyFingerprint: s.otherFingerprint }),
    });
    await d.start();
    await expect(d.probe()).rejects.toMatchObject({ key: 'ssh.host_key_mismatch' });
    await d.stop();
  });

  it('answers an unreachable board with an error within the timeout, never hanging', async () => {
    const { freePort } = await import('./helpers/sshd.ts');
    const closed = new SshDriver({ boardId: 'x', name: 'x', options: opts({ port: await freePort() }) });
    await expect(closed.probe()).rejects.toMatchObject({ key: 'ssh.unreachable' });
    // A silent address: nothing answers, the timeout ends the wait.
    const silent = new SshDriver({
      boardId: 'y',
      name: 'y',
      options: opts({ host: '10.255.255.1', timeoutMs: 1000 }),
    });
    const t0 = Date.now();
    const key = await silent.probe(1000).then(
      () => 'ok',
      (e: DriverError) => e.key,
    );
    expect(['ssh.unreachable', 'driver.timeout']).toContain(key);
    expect(Date.now() - t0).toBeLessThan(4000);
    await closed.stop();
    await silent.stop();
  });

  it('connects again after the connection drops', async () => {
    const d = new SshDriver({ boardId: 'z', name: 'z', options: opts() });
    await d.start();
    await d.probe();
    const { execFileSync } = await import('node:child_process');
    execFileSync('sh', s.resetCommand.slice(1));
    await new Promise((r) => setTimeout(r, 200));
    await expect(d.probe()).resolves.toBeUndefined();
    await d.stop();
  });

  it('flashes through the lab file command: uploads the image, logs the tool, follows its percent, fails with its output', async () => {
    const image = path.join(s.dir, '..', `ssh-flash-${process.pid}.img`);
    fs.writeFileSync(image, crypto.randomBytes(3 * 1024 * 1024));
    const script =
      'for p in 10 55 100; do printf "writing %s%%\\r" "$p"; done; echo; echo "verifying image"; echo "verify 100%"; cat "$1" > "$2/flashed.img"';
    const d = new SshDriver({
      boardId: 'f',
      name: 'f',
      options: opts({ commands: { flash: ['sh', '-c', script, 'flash', '{image}', s.dir] } }),
    });
    await d.start();
    const seen: string[] = [];
    const logs: string[] = [];
    await d.flash(image, (p) => {
      seen.push(`${p.phase}:${p.percent}`);
      if (p.log) logs.push(p.log);
    });
    expect(fs.readFileSync(path.join(s.dir, 'flashed.img')).equals(fs.readFileSync(image))).toBe(true);
    expect(seen).toContain('writing:50');
    expect(seen).toEqual(
      expect.arrayContaining([
        'writing:55',
        'writing:77',
        'writing:100',
        'verifying:100',
        'booting:0',
        'done:100',
      ]),
    );
    expect(seen.indexOf('verifying:100')).toBeGreaterThan(seen.indexOf('writing:100'));
    expect(logs).toEqual(
      expect.arrayContaining(['writing 10%', 'writing 100%', 'verifying image', 'verify 100%']),
    );
    await d.stop();
    const failing = new SshDriver({
      boardId: 'g',
      name: 'g',
      options: opts({ commands: { flash: ['sh', '-c', 'echo "bad block at 42" >&2; exit 3'] } }),
    });
    await failing.start();
    await expect(failing.flash(image, () => {})).rejects.toMatchObject({
      key: 'flash.tool_failed',
      message: expect.stringContaining('bad block at 42'),
    });
    await failing.stop();
    fs.rmSync(image, { force: true });
  });

  it('runs configured commands with hostile values quoted, and forwards ports', async () => {
    const d = new SshDriver({
      boardId: 'q',
      name: 'q',
      options: opts({
        commands: { plugin: ['printf', '%s|'], serial: ['sh', '-c', 'echo "serial of $0"', "it's me"] },
      }),
    });
    await d.start();
    const hostile = `'; touch ${s.dir}/pwned; echo '$(id)\`id\``;
    expect(await d.callPlugin('topic', hostile, 'n;1')).toBe(`topic|${hostile}|n;1|`);
    expect(fs.existsSync(path.join(s.dir, 'pwned'))).toBe(false);
    const serial = await d.openSerial({ cols: 80, rows: 24 });
    let out = '';
    serial.onData((b) => {
      out += b.toString();
    });
    await new Promise((r) => serial.onExit(r));
    expect(out).toContain("serial of it's me");
    const net = await import('node:net');
    const server = net.createServer((c) => c.end('vnc hello')).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const sock = await d.connectPort((server.address() as import('node:net').AddressInfo).port);
    const got = await new Promise<string>((resolve) => {
      let t = '';
      sock.on('data', (b: Buffer) => {
        t += b.toString();
      });
      sock.on('end', () => resolve(t));
    });
    expect(got).toBe('vnc hello');
    server.close();
    await d.stop();
  });

  it('reaches the desktop and code-server at the ports the lab declares, starting code-server with its command once', async () => {
    const net = await import('node:net');
    const read = (sock: import('node:stream').Duplex) =>
      new Promise<string>((resolve) => {
        let t = '';
        sock.on('data', (b: Buffer) => {
          t += b.toString();
        });
        sock.on('end', () => resolve(t));
      });
    const vnc = net.createServer((c) => c.end('RFB 003.008')).listen(0, '127.0.0.1');
    await new Promise((r) => vnc.once('listening', r));
    // A free port for the code-server the start command brings up on the "board" (this host over ssh).
    const probe = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => probe.once('listening', r));
    const codePort = (probe.address() as import('node:net').AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const marker = path.join(s.dir, 'code-starts');
    const server = `require('net').createServer((c) => c.end('code hello')).listen(${codePort}, '127.0.0.1')`;
    const d = new SshDriver({
      boardId: 'ports',
      name: 'ports',
      options: opts({
        vncPort: (vnc.address() as import('node:net').AddressInfo).port,
        codeServerPort: codePort,
        commands: {
          codeServer: ['sh', '-c', `echo x >> ${marker}; (${process.execPath} -e "${server}" >/dev/null 2>&1 &)`],
        },
      }),
    });
    await d.start();
    expect(d.capabilities().has(Capability.vnc)).toBe(true);
    expect(await read(await d.connectVnc())).toBe('RFB 003.008');
    // Nothing answers yet: three callers at once start it once, and all reach it.
    const got = await Promise.all([d.connectCode(), d.connectCode(), d.connectCode()].map(async (p) => read(await p)));
    expect(got).toEqual(['code hello', 'code hello', 'code hello']);
    expect(await read(await d.connectCode())).toBe('code hello');
    expect(fs.readFileSync(marker, 'utf8')).toBe('x\n');
    await d.stop();
    vnc.close();
    spawnSync('pkill', ['-f', `listen\\(${codePort}`]);

    // A board that declares neither has neither capability, and says so.
    const none = new SshDriver({ boardId: 'none', name: 'none', options: opts({ vncPort: null, codeServerPort: null }) });
    await none.start();
    expect(none.capabilities().has(Capability.vnc)).toBe(false);
    expect(none.capabilities().has(Capability.codeServer)).toBe(false);
    await expect(none.connectVnc()).rejects.toMatchObject({ key: 'capability.unsupported' });
    await expect(none.connectCode()).rejects.toMatchObject({ key: 'capability.unsupported' });
    // Declared without a start command: nothing answering is a plain refusal.
    const bare = new SshDriver({ boardId: 'bare', name: 'bare', options: opts({ codeServerPort: codePort }) });
    await bare.start();
    await expect(bare.connectCode()).rejects.toMatchObject({ key: 'driver.failed' });
    await none.stop();
    await bare.stop();
  });
});
