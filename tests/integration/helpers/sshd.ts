// A real OpenSSH server on loopback for the ssh driver's tests: generated host and client keys, a
// generated sshd_config, a random port, everything under one temporary directory. With `user`, it
// also knows an unprivileged login user of the test's making (no account is added to the host:
// the server runs in a mount namespace of its own where /etc/passwd and /etc/group name it).
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface TestSshd {
  port: number;
  dir: string;
  /** `SHA256:...` of the server's host key. */
  hostKeyFingerprint: string;
  /** The fingerprint of another key: a board configured with it must be refused. */
  otherFingerprint: string;
  clientKey: string;
  /** argv of a "power reset": ends every SSH session and the processes in it, as a power cycle would. */
  resetCommand: string[];
  stop(): Promise<void>;
}

function keygen(file: string): string {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'bianbu-test', '-f', file]);
  const line = execFileSync('ssh-keygen', ['-l', '-f', `${file}.pub`], { encoding: 'utf8' });
  return line.split(' ')[1];
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.once('data', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`sshd did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** An unprivileged login user only this sshd knows. */
export interface SshdUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** Runs argv as `user` on this host (as the board's user would act): its output, or the failure. */
export function runAs(user: Pick<SshdUser, 'uid' | 'gid'>, argv: string[]): string {
  return execFileSync(
    'setpriv',
    [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', ...argv],
    { encoding: 'utf8', cwd: '/' },
  );
}

export async function startSshd(opts: { user?: SshdUser } = {}): Promise<TestSshd> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-sshd-'));
  const hostKeyFingerprint = keygen(path.join(dir, 'host_ed25519'));
  const otherFingerprint = keygen(path.join(dir, 'other_ed25519'));
  keygen(path.join(dir, 'client'));
  fs.copyFileSync(path.join(dir, 'client.pub'), path.join(dir, 'authorized_keys'));
  const port = await freePort();
  const config = path.join(dir, 'sshd_config');
  fs.writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${path.join(dir, 'host_ed25519')}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'MaxSessions 20',
      'AcceptEnv LANG TERM',
      'Subsystem sftp internal-sftp',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  let argv = ['/usr/sbin/sshd', '-D', '-e', '-f', config];
  const u = opts.user;
  if (u) {
    // The user reads its authorized keys itself: the folder is passable, the key list readable.
    fs.chmodSync(dir, 0o711);
    fs.chmodSync(path.join(dir, 'authorized_keys'), 0o644);
    const passwd = path.join(dir, 'passwd');
    const group = path.join(dir, 'group');
    fs.writeFileSync(
      passwd,
      `${fs.readFileSync('/etc/passwd', 'utf8').trimEnd()}\n${u.name}:x:${u.uid}:${u.gid}::${u.home}:/bin/sh\n`,
    );
    fs.writeFileSync(group, `${fs.readFileSync('/etc/group', 'utf8').trimEnd()}\n${u.name}:x:${u.gid}:\n`);
    fs.chmodSync(passwd, 0o644);
    fs.chmodSync(group, 0o644);
    argv = [
      'unshare',
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      'mount --bind "$1" /etc/passwd && mount --bind "$2" /etc/group && shift 2 && exec "$@"',
      'sshd-as-board',
      passwd,
      group,
      ...argv,
    ];
  }
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  try {
    await waitForPort(port, 10_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}: ${stderr}`);
  }
  // Power reset of this "board": every per-connection sshd dies, and with it the sessions' processes.
  const reset = path.join(dir, 'power-reset.sh');
  fs.writeFileSync(reset, `#!/bin/sh\npkill -KILL -P ${child.pid} || true\n`, { mode: 0o755 });
  return {
    port,
    dir,
    hostKeyFingerprint,
    otherFingerprint,
    clientKey: fs.readFileSync(path.join(dir, 'client'), 'utf8'),
    resetCommand: ['/bin/sh', reset],
    stop: async () => {
      // Sessions first (their processes), then the listener.
      try {
        execFileSync('pkill', ['-KILL', '-P', String(child.pid)]);
      } catch {}
      child.kill('SIGKILL');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
