// Machines for the board-hosts cluster test, on one machine: network namespaces joined by a bridge
// (10.77.0.0/24; the host side is 10.77.0.1), processes started in them with `nsenter --net` (their
// mounts and cgroups stay the host's, as on a real machine), and TCP forwarders that let them reach
// the host's PostgreSQL and Redis, which listen on loopback only. A TLS certificate for the
// instances' addresses is made with openssl; hosts and clients trust it.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const BRIDGE = 'bhbr0';
export const GATEWAY = '10.77.0.1';

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

export function clusterMissing(): string | null {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces)';
  for (const tool of ['ip', 'nsenter', 'openssl'])
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `needs ${tool}`;
    }
  return null;
}

export interface Machine {
  ns: string;
  addr: string;
  /** The bridge side of its cable: down cuts the machine off (a partition), up joins it again. */
  cable: string;
}

export function removeCluster(names: string[]): void {
  for (const n of names) {
    try {
      ip('netns', 'del', n);
    } catch {}
    try {
      ip('link', 'del', `v-${n}`);
    } catch {}
  }
  try {
    ip('link', 'del', BRIDGE);
  } catch {}
}

export function makeCluster(machines: { ns: string; addr: string }[]): Machine[] {
  removeCluster(machines.map((m) => m.ns));
  ip('link', 'add', BRIDGE, 'type', 'bridge');
  ip('addr', 'add', `${GATEWAY}/24`, 'dev', BRIDGE);
  ip('link', 'set', BRIDGE, 'up');
  return machines.map((m) => {
    const cable = `v-${m.ns}`;
    ip('netns', 'add', m.ns);
    ip('link', 'add', cable, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', m.ns);
    ip('link', 'set', cable, 'master', BRIDGE, 'up');
    ip('-n', m.ns, 'addr', 'add', `${m.addr}/24`, 'dev', 'eth0');
    ip('-n', m.ns, 'link', 'set', 'eth0', 'up');
    ip('-n', m.ns, 'link', 'set', 'lo', 'up');
    return { ...m, cable };
  });
}

export function setCable(m: Machine, up: boolean): void {
  ip('link', 'set', m.cable, up ? 'up' : 'down');
}

/** Listens on the bridge's address and forwards each connection to a loopback port of the host. */
export function forward(port: number): Promise<net.Server> {
  const server = net.createServer((c) => {
    const up = net.connect(port, '127.0.0.1');
    c.pipe(up).pipe(c);
    const end = () => {
      c.destroy();
      up.destroy();
    };
    c.on('error', end);
    up.on('error', end);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, GATEWAY, () => resolve(server));
  });
}

/** A certificate for the instances' addresses (its own CA): cert.pem, key.pem. */
export function makeCert(dir: string, addrs: string[]): { cert: string; key: string } {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=bianbu-cluster-test',
      '-addext',
      `subjectAltName=${addrs.map((a) => `IP:${a}`).join(',')}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
    ],
    { stdio: 'ignore' },
  );
  fs.chmodSync(key, 0o600);
  return { cert, key };
}

export interface Proc {
  proc: ChildProcess;
  log(): string;
  kill9(): Promise<void>;
  stop(): Promise<void>;
  /** Lines written to stdout so far, and a way to wait for one. */
  lines: string[];
  waitLine(pred: (l: string) => boolean, ms?: number): Promise<string>;
  write(line: string): void;
}

/** `node --import tsx <entry>` in a machine's network namespace. */
export function spawnIn(ns: string, entry: string, env: Record<string, string>, stdin = false): Proc {
  const proc = spawn(
    'nsenter',
    [
      `--net=/run/netns/${ns}`,
      process.execPath,
      '--no-memory-reducer',
      '--import',
      'tsx',
      path.resolve(entry),
    ],
    {
      cwd: path.resolve('.'),
      env: { ...process.env, ...env },
      stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const lines: string[] = [];
  let partial = '';
  const waiters: Array<{ pred: (l: string) => boolean; resolve: (l: string) => void }> = [];
  proc.stdout?.on('data', (d: Buffer) => {
    out += d;
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) {
      lines.push(l);
      for (const w of [...waiters])
        if (w.pred(l)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(l);
        }
    }
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const alive = () => proc.exitCode === null && proc.signalCode === null;
  return {
    proc,
    lines,
    log: () => out,
    write: (line) => proc.stdin?.write(`${line}\n`),
    waitLine: (pred, ms = 60_000) => {
      const seen = lines.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const t = setTimeout(
          () => reject(new Error(`no such line in ${ms} ms; log: ${out.slice(-1500)}`)),
          ms,
        );
        waiters.push({
          pred,
          resolve: (l) => {
            clearTimeout(t);
            resolve(l);
          },
        });
      });
    },
    kill9: async () => {
      if (alive()) proc.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      if (alive()) proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 12_000))]);
      if (alive()) {
        proc.kill('SIGKILL');
        await exited;
      }
    },
  };
}
