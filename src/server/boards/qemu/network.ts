// A riscv64 board's NIC backend: a user-mode network stack (passt) outside the machine, in the host's
// network namespace, as the board's own host uid, under the board's rules (firewall.ts).
//
// Lifecycle: `prepare()` (board start) applies the board's rules, or decides the board gets no NIC
// backend (the rules cannot be applied, or passt is missing: never an unfiltered network). Each
// power-on of the machine asks `open()` for a fresh connected pair of unix stream sockets (Node has
// no socketpair: the service listens on a private socket in the board's root-owned run directory,
// connects, accepts, then unlinks it): QEMU gets one end (`-netdev stream,addr.type=fd`), and
// `launch()` starts passt on the other (`-F`) in the same turn of the event loop as QEMU's spawn, so
// the service never reads a byte of the frames between them. passt runs with `--one-off`: it ends when
// QEMU's end closes; `close()` (the machine's exit) ends it anyway. `setPolicy()` replaces the rules
// live; `remove()` (board stop) ends passt and only then removes the rules.
//
// Confinement of passt: started through setpriv as the board's uid (never root), no capabilities,
// no_new_privs, in the board's cgroups; passt adds its own namespaces and seccomp filter. It forwards
// no port in (`-t none -u none`) and maps no address to the host (`--no-map-gw`: the gateway's address
// is the real gateway, not the host's loopback). The rules are what keeps the host out, whatever passt
// does: they key on the socket owner, the board's uid.
import { type ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  Egress,
  NetworkErrorKey,
  type NetworkPolicy,
  NetworkState,
  type NetworkState as State,
} from '#shared/board-network.ts';
import { withTimeout } from '../util.ts';
import type { Firewall } from './firewall.ts';

export const PASST_BINARY = '/usr/bin/passt';

/** What a machine's power-on gets: QEMU's end of the pair, and the start of the stack on the other. */
export interface NicAttachment {
  /** The socket QEMU inherits (its `-netdev stream` descriptor). */
  guestEnd: net.Socket;
  /** Starts the stack on the other end and closes the service's copies: call right after QEMU's spawn. */
  launch(): void;
  /** QEMU did not start: the pair is closed, nothing is launched. */
  abandon(): void;
}

/** The machine's view of its NIC backend (machine.ts knows nothing of passt or rules). */
export interface NicBackend {
  /** A fresh pair for this power-on, or null: the machine gets no NIC. */
  open(): Promise<NicAttachment | null>;
  /** The machine ended: its stack ends too. */
  close(): Promise<void>;
}

/**
 * A connected pair of unix stream sockets, made in `dir` (root's, not writable by the board): listen
 * on a random name, connect, accept, unlink. The client proves the accepted end is its own peer with a
 * random token (only root may connect to the socket, but the proof costs nothing).
 */
export async function socketPair(dir: string, timeoutMs = 5000): Promise<[net.Socket, net.Socket]> {
  const file = path.join(dir, `nic-${crypto.randomBytes(8).toString('hex')}.sock`);
  const token = crypto.randomBytes(16);
  const server = net.createServer();
  server.maxConnections = 1;
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  let client: net.Socket | null = null;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ path: file, backlog: 1 }, () => resolve());
    });
    fs.chmodSync(file, 0o600);
    const c = net.connect(file);
    client = c;
    c.on('error', () => {});
    await withTimeout(
      new Promise<void>((resolve, reject) => c.once('connect', resolve).once('error', reject)),
      timeoutMs,
      'NIC socket pair',
    );
    c.write(token);
    const peer = await withTimeout(accepted, timeoutMs, 'NIC socket pair');
    peer.on('error', () => {});
    const got = await withTimeout(readExactly(peer, token.length), timeoutMs, 'NIC socket pair');
    if (!got.equals(token)) {
      peer.destroy();
      throw new Error('the NIC socket pair was not its own');
    }
    return [c, peer];
  } catch (err) {
    client?.destroy();
    throw err;
  } finally {
    server.close();
    fs.rmSync(file, { force: true });
  }
}

function readExactly(s: net.Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const onReadable = () => {
      for (;;) {
        const c = s.read(n - have) as Buffer | null;
        if (!c) break;
        chunks.push(c);
        have += c.length;
        if (have >= n) {
          s.off('readable', onReadable);
          s.off('close', onClose);
          resolve(Buffer.concat(chunks));
          return;
        }
      }
    };
    const onClose = () => reject(new Error('closed before the token'));
    s.on('readable', onReadable);
    s.once('close', onClose);
  });
}

/** passt's argv after the privilege drop: foreground, quiet, one client, no ports in, no host mapping. */
export function passtArgs(fd: number): string[] {
  return [PASST_BINARY, '-f', '-q', '--one-off', '-F', String(fd), '-t', 'none', '-u', 'none', '--no-map-gw'];
}

/**
 * Clears O_NONBLOCK on descriptor `fd`. The pair comes from Node, whose sockets are non-blocking, and
 * the flag belongs to the open socket, so passt would inherit it; passt's `-F` descriptor must block:
 * it completes a frame the socket took only part of (a full send buffer, a slow guest) with a
 * blocking send or recv, and on a non-blocking socket that gets EAGAIN, the length-prefixed stream
 * loses its framing and QEMU drops the link (seen under load: apt-get stalled, passt ended). Perl is
 * Debian's essential perl-base.
 */
function blockingFd(fd: number): string {
  return `/usr/bin/perl -MFcntl -e 'open(my $s, "+<&=${fd}") or exit 1; fcntl($s, F_SETFL, fcntl($s, F_GETFL, 0) & ~O_NONBLOCK) or exit 1' || exit 125; `;
}

/** The whole argv: cgroups joined, passt's socket made blocking, the board's uid without capabilities, then passt. */
export function passtArgv(uid: number, cgroupJoin: string, fd: number): string[] {
  const id = String(uid);
  return [
    '/bin/sh',
    '-c',
    `cd / || exit 125; ${cgroupJoin}${blockingFd(fd)}exec "$@"`,
    'bianbu-passt',
    '/usr/bin/setpriv',
    `--reuid=${id}`,
    `--regid=${id}`,
    '--clear-groups',
    '--bounding-set=-all',
    '--inh-caps=-all',
    '--no-new-privs',
    '--',
    ...passtArgs(fd),
  ];
}

export interface BoardNetworkInit {
  boardId: string;
  /** The board's host uid: passt runs as it, the rules key on it. */
  uid: number;
  /** The board's run directory (root's, 0711): the pair's listening socket lives there for an instant. */
  runDir: string;
  cgroupJoin: string;
  policy: NetworkPolicy;
  firewall: Firewall;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
  /** Each change of what the board has (`on` / `off` / `stopped`), for the catalogue. */
  onChange?: (s: { state: State; reason: string | null; policy: NetworkPolicy }) => void;
}

export class BoardNetwork implements NicBackend {
  private policy: NetworkPolicy;
  private state: State = NetworkState.stopped;
  private reason: string | null = null;
  /** The board may have a NIC backend: its rules are applied (prepare succeeded). */
  private filtered = false;
  private passt: ChildProcess | null = null;
  private stderr = '';

  constructor(private readonly init: BoardNetworkInit) {
    this.policy = init.policy;
  }

  status(): { policy: NetworkPolicy; state: State; reason: string | null } {
    return { policy: this.policy, state: this.state, reason: this.reason };
  }

  private set(state: State, reason: string | null): void {
    if (state === this.state && reason === this.reason) return;
    this.state = state;
    this.reason = reason;
    this.init.onChange?.({ state, reason, policy: this.policy });
  }

  /** Board start: the rules first; without them (or without passt) the board gets no NIC backend. */
  async prepare(): Promise<void> {
    this.filtered = false;
    if (!fs.existsSync(PASST_BINARY)) {
      this.init.log?.('board network off: passt is not installed (apt-get install passt)');
      this.set(NetworkState.off, NetworkErrorKey.stackMissing);
      return;
    }
    const why = await this.init.firewall.unavailable();
    if (why) {
      this.init.log?.(`board network off: the rules that keep the host out cannot be applied: ${why}`);
      this.set(NetworkState.off, NetworkErrorKey.firewallUnavailable);
      return;
    }
    try {
      await this.init.firewall.apply(this.init.uid, this.policy);
      this.filtered = true;
      this.set(NetworkState.stopped, null);
    } catch (err) {
      this.init.log?.('board network off: its rules were refused', { err: (err as Error).message });
      this.set(NetworkState.off, NetworkErrorKey.firewallUnavailable);
    }
  }

  async open(): Promise<NicAttachment | null> {
    await this.close();
    if (!this.filtered) return null;
    const [guestEnd, stackEnd] = await socketPair(this.init.runDir);
    let settled = false;
    const settle = () => {
      settled = true;
      guestEnd.destroy();
      stackEnd.destroy();
    };
    return {
      guestEnd,
      launch: () => {
        if (settled) return;
        try {
          this.spawnPasst(stackEnd);
        } finally {
          settle();
        }
      },
      abandon: () => {
        if (!settled) settle();
      },
    };
  }

  /** Synchronous: passt inherits `end` as its descriptor 3 before the service closes its copy. */
  private spawnPasst(end: net.Socket): void {
    const argv = passtArgv(this.init.uid, this.init.cgroupJoin, 3);
    const p = spawn(argv[0], argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe', end],
      env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
    });
    this.passt = p;
    this.stderr = '';
    p.on('error', () => {});
    p.stderr?.setEncoding('utf8');
    p.stderr?.on('data', (d: string) => {
      // Without a syslog socket passt says so for every line it logs: only its own words are kept.
      const lines = d.split('\n').filter((l) => l && !l.startsWith('Failed to send'));
      if (this.stderr.length < 4096 && lines.length) this.stderr += `${lines.join('\n')}\n`;
    });
    p.once('exit', (code, signal) => {
      if (this.passt !== p) return;
      this.passt = null;
      // QEMU closing its end makes passt (`--one-off`) exit 0: the machine ended, nothing to say.
      // Anything else is a failure: the NIC has no backend until the next power-on.
      if (code === 0) {
        this.set(NetworkState.stopped, null);
        return;
      }
      this.init.log?.('board network stack ended', {
        code,
        signal,
        stderr: this.stderr.trim().slice(-300),
      });
      this.set(NetworkState.off, NetworkErrorKey.stackExited);
    });
    this.set(NetworkState.on, null);
  }

  /** Ends passt (the machine ended, or a new power-on replaces it) and waits for it to be gone. */
  async close(): Promise<void> {
    const p = this.passt;
    this.passt = null;
    if (p && p.exitCode === null && p.signalCode === null) {
      const gone = new Promise<void>((r) => p.once('exit', () => r()));
      p.kill('SIGKILL');
      await withTimeout(gone, 5000, 'passt exit').catch(() => {});
    }
    if (this.filtered) this.set(NetworkState.stopped, null);
  }

  /** Whether a stack is running now. */
  get running(): boolean {
    return this.passt !== null;
  }

  /** Whether the board's rules are in force, so that a stack may run (at the next power-on). */
  get canRun(): boolean {
    return this.filtered;
  }

  /**
   * A new policy, applied live: the board's chain is replaced in one transaction. Rules that cannot be
   * replaced leave the old ones in force; if even those are in doubt the stack is ended (no NIC
   * backend) rather than left unfiltered.
   */
  async setPolicy(policy: NetworkPolicy): Promise<void> {
    const before = this.policy;
    this.policy = policy;
    if (!this.filtered) {
      this.init.onChange?.({ state: this.state, reason: this.reason, policy });
      return;
    }
    try {
      await this.init.firewall.apply(this.init.uid, policy);
      this.init.log?.('board network policy applied', {
        egress: policy.egress,
        allow: policy.allow.length,
        was: before.egress,
      });
      this.init.onChange?.({ state: this.state, reason: this.reason, policy });
    } catch (err) {
      this.init.log?.('board network policy refused by nft: the stack is stopped', {
        err: (err as Error).message,
      });
      await this.close();
      await this.init.firewall.apply(this.init.uid, { egress: Egress.none, allow: [] }).catch(() => {});
      this.filtered = false;
      this.set(NetworkState.off, NetworkErrorKey.firewallUnavailable);
    }
  }

  /** Board stop: passt ends first; the rules go only once it is gone. */
  async remove(): Promise<void> {
    const p = this.passt;
    await this.close();
    if (p && p.exitCode === null && p.signalCode === null) {
      this.init.log?.('board network stack did not end: its rules stay');
      return;
    }
    if (this.filtered) await this.init.firewall.remove(this.init.uid).catch(() => {});
    this.filtered = false;
    this.set(NetworkState.stopped, null);
  }
}
