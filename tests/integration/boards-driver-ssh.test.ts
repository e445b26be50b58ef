// What only the ssh driver does, against a real OpenSSH server on loopback: the pinned host key, an
// unreachable board, reconnecting, flashing and commands through the lab file, ports, the desktop
// and code-server. The contract both drivers keep is boards-driver.test.ts.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Capability, type DriverError } from '#server/boards/driver.ts';
import { SshDriver } from '#server/boards/ssh/ssh-driver.ts';
import { sshDriverOptions } from '#shared/boards.ts';
import { startSshd, type TestSshd } from './helpers/sshd.ts';

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
          codeServer: [
            'sh',
            '-c',
            `echo x >> ${marker}; (${process.execPath} -e "${server}" >/dev/null 2>&1 &)`,
          ],
        },
      }),
    });
    await d.start();
    expect(d.capabilities().has(Capability.vnc)).toBe(true);
    expect(await read(await d.connectVnc())).toBe('RFB 003.008');
    // Nothing answers yet: three callers at once start it once, and all reach it.
    const got = await Promise.all(
      [d.connectCode(), d.connectCode(), d.connectCode()].map(async (p) => read(await p)),
    );
    expect(got).toEqual(['code hello', 'code hello', 'code hello']);
    expect(await read(await d.connectCode())).toBe('code hello');
    expect(fs.readFileSync(marker, 'utf8')).toBe('x\n');
    await d.stop();
    vnc.close();
    spawnSync('pkill', ['-f', `listen\\(${codePort}`]);

    // A board that declares neither has neither capability, and says so.
    const none = new SshDriver({
      boardId: 'none',
      name: 'none',
      options: opts({ vncPort: null, codeServerPort: null }),
    });
    await none.start();
    expect(none.capabilities().has(Capability.vnc)).toBe(false);
    expect(none.capabilities().has(Capability.codeServer)).toBe(false);
    await expect(none.connectVnc()).rejects.toMatchObject({ key: 'capability.unsupported' });
    await expect(none.connectCode()).rejects.toMatchObject({ key: 'capability.unsupported' });
    // Declared without a start command: nothing answering is a plain refusal.
    const bare = new SshDriver({
      boardId: 'bare',
      name: 'bare',
      options: opts({ codeServerPort: codePort }),
    });
    await bare.start();
    await expect(bare.connectCode()).rejects.toMatchObject({ key: 'driver.failed' });
    await none.stop();
    await bare.stop();
  });
});
