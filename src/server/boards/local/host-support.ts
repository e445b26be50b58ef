// What this host offers local boards, found once at start. A local board is a namespace sandbox, not
// a VM: its guarantees come from the kernel features listed here, and each one that is missing is
// named at start with the reason, so an operator never believes in a limit that is not there.
//
//   identity  user namespace with a host uid/gid range of its own (needs root to write the maps)
//   memory    cgroup memory controller (v1 `memory` hierarchy, or v2 `memory`)
//   pids      cgroup pids controller
//   cpu       cgroup cpu controller (CFS quota)
//   disk      an ext4 image per board on a loop device (mkfs.ext4, losetup, mount)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface CgroupController {
  /** Host directory under which this service's board cgroups are made (its own cgroup). */
  base: string;
  version: 1 | 2;
}

export interface HostSupport {
  root: boolean;
  bwrap: string | null;
  /** Every board runs as its own host uid range in a user namespace. */
  userns: boolean;
  sftpServer: string | null;
  cgroups: { memory?: CgroupController; pids?: CgroupController; cpu?: CgroupController };
  loopDisk: boolean;
  /** One line per limit that is not enforced here, with the reason. */
  missing: string[];
}

const SFTP_SERVERS = ['/usr/lib/openssh/sftp-server', '/usr/libexec/openssh/sftp-server', '/usr/libexec/sftp-server', '/usr/lib/ssh/sftp-server'];

function which(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/bin', '/usr/sbin', '/bin', '/sbin'])) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {}
  }
  return null;
}

function writable(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** The cgroup directories of this process, per v1 controller and the v2 path. */
function ownCgroups(): { v1: Map<string, string>; v2: string | null } {
  const v1 = new Map<string, string>();
  let v2: string | null = null;
  let text = '';
  try {
    text = fs.readFileSync('/proc/self/cgroup', 'utf8');
  } catch {}
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === '0' && m[2] === '') v2 = m[3];
    else for (const c of m[2].split(',')) if (c) v1.set(c, m[3]);
  }
  return { v1, v2 };
}

function detectCgroups(missing: string[]): HostSupport['cgroups'] {
  const out: HostSupport['cgroups'] = {};
  const own = ownCgroups();
  const unified = fs.existsSync('/sys/fs/cgroup/cgroup.controllers');
  if (unified) {
    // Pure cgroup v2: board cgroups go under this service's own cgroup, which must delegate the
    // controllers to its children.
    const base = path.join('/sys/fs/cgroup', own.v2 ?? '/', 'bianbu-boards');
    let controllers: string[] = [];
    try {
      controllers = fs.readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8').trim().split(/\s+/);
    } catch {}
    for (const c of ['memory', 'pids', 'cpu'] as const) {
      if (!controllers.includes(c)) missing.push(`${c}: the cgroup v2 ${c} controller is not available`);
      else if (!writable(path.dirname(base))) missing.push(`${c}: ${path.dirname(base)} is not writable by the service`);
      else out[c] = { base, version: 2 };
    }
    return out;
  }
  for (const c of ['memory', 'pids', 'cpu'] as const) {
    const mount = path.join('/sys/fs/cgroup', c);
    const mine = own.v1.get(c) ?? '/';
    const base = path.join(mount, mine, 'bianbu-boards');
    if (!fs.existsSync(path.join(mount, 'cgroup.procs'))) missing.push(`${c}: no cgroup v1 ${c} hierarchy mounted at ${mount}`);
    else if (!writable(path.join(mount, mine))) missing.push(`${c}: ${path.join(mount, mine)} is not writable by the service`);
    else out[c] = { base, version: 1 };
  }
  return out;
}

function detectLoop(root: boolean, missing: string[]): boolean {
  if (!root) {
    missing.push('disk: per-board disk images need root (mount) — disk use is measured, not limited');
    return false;
  }
  for (const tool of ['mkfs.ext4', 'losetup', 'mount', 'umount']) {
    if (!which(tool)) {
      missing.push(`disk: ${tool} is missing (apt-get install e2fsprogs mount) — disk use is measured, not limited`);
      return false;
    }
  }
  if (!fs.existsSync('/dev/loop-control') && !fs.existsSync('/dev/loop0')) {
    missing.push('disk: no loop devices (/dev/loop-control) — disk use is measured, not limited');
    return false;
  }
  try {
    execFileSync(which('losetup') as string, ['-f'], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 5000 });
  } catch (err) {
    missing.push(`disk: no free loop device (${(err as Error).message.split('\n')[0]}) — disk use is measured, not limited`);
    return false;
  }
  return true;
}

let cached: HostSupport | null = null;

export function hostSupport(): HostSupport {
  if (cached) return cached;
  const missing: string[] = [];
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const bwrap = which('bwrap');
  const tools = ['setpriv', 'unshare', 'nsenter'].filter((t) => !which(t));
  let userns = Boolean(bwrap) && root && tools.length === 0;
  if (!bwrap) missing.push('identity: bubblewrap (bwrap) is missing (apt-get install bubblewrap)');
  else if (!root) missing.push('identity: the service is not root, so it cannot give each board its own host uid range');
  else if (tools.length) missing.push(`identity: ${tools.join(', ')} missing (apt-get install util-linux)`);
  if (userns) {
    try {
      const max = Number(fs.readFileSync('/proc/sys/user/max_user_namespaces', 'utf8').trim());
      if (max === 0) {
        userns = false;
        missing.push('identity: user namespaces are disabled (user.max_user_namespaces = 0)');
      }
    } catch {}
  }
  const sftpServer = SFTP_SERVERS.find((p) => fs.existsSync(p)) ?? null;
  if (!sftpServer) missing.push('files: OpenSSH sftp-server is missing (apt-get install openssh-sftp-server)');
  const cgroups = root ? detectCgroups(missing) : {};
  if (!root) missing.push('memory, pids, cpu: cgroups need root — limits are reported, not enforced');
  const loopDisk = detectLoop(root, missing);
  cached = { root, bwrap, userns, sftpServer, cgroups, loopDisk, missing };
  return cached;
}

/** Tests replace the detection (e.g. to run without loop devices). */
export function setHostSupportForTests(s: HostSupport | null): void {
  cached = s;
}
