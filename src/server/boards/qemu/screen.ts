// A riscv64 board's own screen: the virtio GPU's framebuffer (fbcon's console login on tty1, or X if the
// image runs one) as QEMU's VNC server serves it, reached by the desktop pane's bridge (vnc-bridge.ts).
//
// Where QEMU's VNC server listens, and how the service gets there without ever resolving a path the
// board controls: QEMU runs in bubblewrap's network namespace, which holds a loopback and nothing else
// (the guest's own network, when it has one, goes through a user-mode stack outside it). QEMU listens
// on TCP 127.0.0.1:5900 *inside* that namespace, with no password: only this relay reaches it. When
// the machine starts, the service takes a handle on that namespace (`openNetns`, below: the child of
// the board's bubblewrap, checked to be it while our own child cannot have been reaped); for each
// viewer it starts screen-relay.c, which joins that namespace only (not its mount, pid or user
// namespace), connects to the fixed address, drops to nobody and copies bytes over its stdio. The relay
// ends when either side ends; the bridge sees it as a Duplex. Several viewers are several relays and
// several VNC clients of QEMU (share=force-shared: none can push the others off).
//
// Weighed and not taken:
// - A unix socket made by QEMU (`-vnc unix:...`): its path lives in a directory the board's QEMU
//   writes, so the service would connect to whatever the board put there.
// - QEMU connecting out to a listener of the service (`reverse=on`, as serial.sock does): QEMU makes
//   that one connection at start-up and never again, so a second viewer, or a viewer after the first
//   left, would find no screen.
// - QMP `add_client` with a socketpair end passed by SCM_RIGHTS (no network at all): Node cannot send
//   descriptors over a unix socket, so it would need a helper holding the monitor: more moving parts
//   for the same guarantee.
// - bubblewrap's `--info-fd` for the child's pid: it says the same as the host's
//   /proc/<bubblewrap>/task/<bubblewrap>/children, but takes a descriptor of the spawn's, whose numbers
//   the disk's and the NIC's already take; the kernel's list needs nothing of the launch.
import fs from 'node:fs';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { DriverError } from '../driver.ts';
import { spawnRelay } from '../local/desktop.ts';
import { compileProgram } from '../local/pty-host/compile.ts';

/** Where QEMU's VNC server listens, inside the board's own network namespace (display 0: port 5900). */
export const SCREEN_VNC = '127.0.0.1:0';
/** How long a relay may take to say it is connected. */
const RELAY_CONNECT_MS = 5000;

let program: Promise<number> | undefined;

function relayProgram(): Promise<number> {
  program ??= compileProgram(
    path.join(path.dirname(fileURLToPath(import.meta.url)), 'screen-relay.c'),
    'bianbu-screen-relay',
    "the board screen's relay",
  );
  // A compiler that failed is tried again at the next viewer.
  program.catch(() => {
    program = undefined;
  });
  return program;
}

/**
 * A handle on the network namespace of the machine whose bubblewrap (the service's own child) is
 * `bwrapPid`, or null while bubblewrap has not made its sandbox yet. Synchronous on purpose: our child
 * cannot be reaped while this runs, so its pid is not reused, and a process whose parent it is, is its
 * sandbox (bubblewrap makes one child). The namespace is taken first and the parent checked after: a
 * pid reused in between would have another parent.
 */
export function openNetns(bwrapPid: number): number | null {
  let children: string[];
  try {
    children = fs.readFileSync(`/proc/${bwrapPid}/task/${bwrapPid}/children`, 'utf8').trim().split(/\s+/);
  } catch {
    return null;
  }
  const child = Number(children[0]);
  if (children.length !== 1 || !Number.isInteger(child) || child <= 0) return null;
  let fd: number;
  try {
    fd = fs.openSync(`/proc/${child}/ns/net`, 'r');
  } catch {
    return null;
  }
  try {
    const ppid = /^PPid:\s*(\d+)$/m.exec(fs.readFileSync(`/proc/${child}/status`, 'utf8'))?.[1];
    if (Number(ppid) !== bwrapPid) throw new Error('not the sandbox');
    // The sandbox's namespace, never the host's (bubblewrap without --unshare-net would share it).
    if (fs.fstatSync(fd).ino === fs.statSync('/proc/self/ns/net').ino) throw new Error('the host network');
    return fd;
  } catch {
    fs.closeSync(fd);
    return null;
  }
}

/** A stream to QEMU's VNC server in the namespace `netnsFd`, through a relay of its own. */
export async function connectScreen(netnsFd: number): Promise<Duplex> {
  let fd: number;
  try {
    fd = await relayProgram();
  } catch (err) {
    throw new DriverError('driver.failed', (err as Error).message);
  }
  return spawnRelay({ file: '/proc/self/fd/3', args: [] }, {}, RELAY_CONNECT_MS, "the board's screen", [
    fd,
    netnsFd,
  ]);
}
