// What only the local driver's board sandbox does (bubblewrap, user namespaces): its processes and
// network, root's capabilities, the serial console, plugins, ports and flashing a root image. The
// contract both drivers keep is boards-driver.test.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyHandle } from '#server/boards/driver.ts';
import { LocalDriver } from '#server/boards/local/local-driver.ts';
import { localDriverOptions } from '#shared/boards.ts';
import { runInShell } from './helpers/board-shell.ts';

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
    serial.write(
      'echo "I""D=$(id -un) G""S=$(id -G) T""TY=$(tty) CAPS=$(grep CapEff /proc/self/status | cut -f2)"\r',
    );
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
