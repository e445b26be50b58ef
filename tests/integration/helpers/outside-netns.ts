// "The outside" for riscv64 boards' network tests and benches: a network namespace of the test's own
// with a veth pair to the host (TEST-NET-2, 198.51.100.0/24: the host's end .254, the outside's .1) and
// our HTTP server in it (outside-server.ts) serving a tiny Debian repository. Traffic to it stays on
// this machine. Names are fixed so that a run killed half way is cleaned up by the next
// (`removeOutside()` before and after).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

export const OUTSIDE = {
  ns: 'bianbu-nt-out',
  hostIf: 'bnt-host',
  outIf: 'bnt-out',
  /** The host's end of the veth pair. */
  hostAddr: '198.51.100.254',
  /** The outside server. */
  addr: '198.51.100.1',
  /** An address of the outside's subnet where nothing answers (allow lists that exclude the server). */
  nobody: '198.51.100.2',
  port: 80,
  suite: 'bianbu-test',
} as const;

const ip = (args: string[]) =>
  execFileSync('/usr/sbin/ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const quiet = (args: string[]) => {
  try {
    ip(args);
  } catch {}
};

/** Whether this machine can make the outside: root, iproute2, network namespaces. */
export function outsideMissing(): string | null {
  if (process.getuid?.() !== 0) return 'not root';
  if (!fs.existsSync('/usr/sbin/ip')) return 'iproute2 is not installed';
  return null;
}

/** Removes the namespace, the veth pair and what runs in the namespace (a previous run's too). */
export function removeOutside(): void {
  try {
    for (const pid of ip(['netns', 'pids', OUTSIDE.ns]).split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {}
    }
  } catch {}
  quiet(['link', 'del', OUTSIDE.hostIf]);
  quiet(['netns', 'del', OUTSIDE.ns]);
}

const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** A Debian repository with one small fake package, `bianbu-hello` 1.0 for riscv64. */
export function writeAptRepo(dir: string): void {
  const deb = Buffer.from('!<arch>\nnot a real package: the network test only lists it\n');
  const debPath = 'pool/main/b/bianbu-hello/bianbu-hello_1.0_riscv64.deb';
  fs.mkdirSync(path.join(dir, path.dirname(debPath)), { recursive: true });
  fs.writeFileSync(path.join(dir, debPath), deb);
  const packages = Buffer.from(
    [
      'Package: bianbu-hello',
      'Version: 1.0',
      'Architecture: riscv64',
      'Maintainer: Bianbu Cloud tests <tests@bianbu.invalid>',
      'Installed-Size: 1',
      `Filename: ${debPath}`,
      `Size: ${deb.length}`,
      `SHA256: ${sha256(deb)}`,
      'Description: a package of the board network test',
      '',
      '',
    ].join('\n'),
  );
  const gz = zlib.gzipSync(packages);
  const bin = path.join(dir, 'dists', OUTSIDE.suite, 'main', 'binary-riscv64');
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, 'Packages'), packages);
  fs.writeFileSync(path.join(bin, 'Packages.gz'), gz);
  const release = [
    'Origin: Bianbu test',
    'Label: Bianbu test',
    `Suite: ${OUTSIDE.suite}`,
    `Codename: ${OUTSIDE.suite}`,
    `Date: ${new Date().toUTCString()}`,
    'Architectures: riscv64',
    'Components: main',
    'SHA256:',
    ` ${sha256(packages)} ${packages.length} main/binary-riscv64/Packages`,
    ` ${sha256(gz)} ${gz.length} main/binary-riscv64/Packages.gz`,
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'dists', OUTSIDE.suite, 'Release'), release);
}

export interface Outside {
  url: string;
  /** One line per request the server answered (`req GET /dists/... 200 123`). */
  requests: string[];
  stop(): void;
}

/** The namespace, the veth pair, and the server on `dir`, answering once it listens. */
export async function startOutside(dir: string): Promise<Outside> {
  removeOutside();
  ip(['netns', 'add', OUTSIDE.ns]);
  ip(['link', 'add', OUTSIDE.hostIf, 'type', 'veth', 'peer', 'name', OUTSIDE.outIf, 'netns', OUTSIDE.ns]);
  ip(['addr', 'add', `${OUTSIDE.hostAddr}/24`, 'dev', OUTSIDE.hostIf]);
  ip(['link', 'set', OUTSIDE.hostIf, 'up']);
  ip(['-n', OUTSIDE.ns, 'addr', 'add', `${OUTSIDE.addr}/24`, 'dev', OUTSIDE.outIf]);
  ip(['-n', OUTSIDE.ns, 'link', 'set', OUTSIDE.outIf, 'up']);
  ip(['-n', OUTSIDE.ns, 'link', 'set', 'lo', 'up']);
  const script = path.join(path.dirname(new URL(import.meta.url).pathname), 'outside-server.ts');
  const server: ChildProcess = spawn(
    '/usr/sbin/ip',
    [
      'netns',
      'exec',
      OUTSIDE.ns,
      process.execPath,
      '--import',
      'tsx',
      script,
      dir,
      OUTSIDE.addr,
      String(OUTSIDE.port),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const requests: string[] = [];
  let buf = '';
  const listening = new Promise<void>((resolve, reject) => {
    server.once('exit', (code) => reject(new Error(`the outside server exited (${code})`)));
    server.stdout?.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) {
        if (l.startsWith('listening')) resolve();
        if (l.startsWith('req ')) requests.push(l);
      }
    });
  });
  await Promise.race([
    listening,
    new Promise((_, j) => setTimeout(() => j(new Error('the outside server did not listen')), 30_000)),
  ]);
  return {
    url: `http://${OUTSIDE.addr}/`,
    requests,
    stop: () => {
      server.kill('SIGKILL');
      removeOutside();
    },
  };
}
