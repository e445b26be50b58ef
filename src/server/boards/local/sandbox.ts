// How a local board's sandbox is launched and entered. The chain that boots a board:
//
//   /bin/sh (joins the board's cgroups) → setpriv (the board's host uid range base, no groups)
//     → unshare --user (a new user namespace, still unmapped) → /bin/sh waits for "go" on stdin
//   the service writes uid_map/gid_map "0 <base> 65536" for it, then "go"
//     → bwrap (now uid 0 inside, nobody outside; own PID, UTS, IPC, network and mount namespaces,
//       the board's root bound as /, the host's /usr read-only, a clean environment)
//
// Every step execs the next, so the process the service spawned is bwrap itself. Processes that
// enter a running board (shells, the file server, plugins) join the same cgroups, then nsenter the
// board's user, mount, UTS, IPC, network and PID namespaces and drop to the board user with setpriv.
// Root inside keeps the capabilities a container runtime's default profile keeps (chown, kill,
// setuid, net_bind_service, ...) — all of them meaningful only inside the board's user namespace.
import fs from 'node:fs';

export const PATH_ENV = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Capabilities root keeps inside a board (the usual container default set, no sys_admin). */
export const ROOT_CAPS = [
  'chown',
  'dac_override',
  'fowner',
  'fsetid',
  'kill',
  'setgid',
  'setuid',
  'setpcap',
  'net_bind_service',
  'net_raw',
  'sys_chroot',
  'audit_write',
  'setfcap',
];

/**
 * Host top-level directories that are symlinks into /usr on merged-/usr systems, or real ones. A
 * symlink is made in the board's root only where the root has no such entry yet (bwrap refuses to
 * replace one, and the links made at an earlier boot persist); the lstat reads one entry directly
 * under the root the service mounted and follows nothing.
 */
function usrLinks(root: string): string[] {
  const args: string[] = [];
  for (const d of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    const p = `/${d}`;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(p);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) {
      if (!fs.lstatSync(`${root}${p}`, { throwIfNoEntry: false }))
        args.push('--symlink', fs.readlinkSync(p), p);
    } else if (st.isDirectory()) args.push('--ro-bind', p, p);
  }
  return args;
}

export interface BwrapInit {
  hostname: string;
  /**
   * The board's root as the launcher (the board's own uid) reaches it: `<runDir>/<slot>/root`, not a
   * path inside the service's private data directory.
   */
  root: string;
  /** The host's plugins directory as the launcher reaches it (a read-only bind beside the root), or null. */
  plugins: string | null;
  pluginsMount: string;
}

export function bwrapArgs(b: BwrapInit, userns: boolean): string[] {
  const args = [
    '--unshare-pid',
    '--unshare-uts',
    '--unshare-ipc',
    '--unshare-net',
    '--unshare-cgroup-try',
    '--hostname',
    b.hostname,
    '--bind',
    b.root,
    '/',
    '--ro-bind',
    '/usr',
    '/usr',
    ...usrLinks(b.root),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--clearenv',
    '--setenv',
    'PATH',
    PATH_ENV,
    '--setenv',
    'HOSTNAME',
    b.hostname,
  ];
  if (b.plugins !== null) args.push('--ro-bind', b.plugins, b.pluginsMount);
  args.push('--die-with-parent', '--new-session');
  // Without a user namespace (unsandboxed opt-in is handled elsewhere) nothing is granted either.
  if (!userns) args.push('--cap-drop', 'ALL');
  args.push('--info-fd', '3', '--', '/usr/bin/sleep', 'infinity');
  return args;
}

/** argv of the boot chain above; `cgPrefix` is the cgroup join prefix (may be empty). */
export function bootArgv(
  bwrap: string,
  base: number,
  cgPrefix: string[],
  args: string[],
): { file: string; args: string[] } {
  const chain = [
    '/usr/bin/setpriv',
    `--reuid=${base}`,
    `--regid=${base}`,
    '--clear-groups',
    '--',
    '/usr/bin/unshare',
    '--user',
    '--',
    '/bin/sh',
    '-c',
    'read go && [ "$go" = go ] && exec "$@"',
    'bianbu-boot',
    bwrap,
    ...args,
  ];
  const all = [...cgPrefix, ...chain];
  return { file: all[0], args: all.slice(1) };
}

/** Writes the user namespace maps of `pid` once it has unshared (its user namespace differs from ours). */
export async function mapUserNamespace(pid: number, base: number, timeoutMs: number): Promise<void> {
  const own = fs.readlinkSync('/proc/self/ns/user');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let ns: string;
    try {
      ns = fs.readlinkSync(`/proc/${pid}/ns/user`);
    } catch {
      throw new Error('the board launcher exited before its user namespace was ready');
    }
    if (ns !== own) break;
    if (Date.now() > deadline) throw new Error('the board launcher did not create its user namespace');
    await new Promise((r) => setTimeout(r, 2));
  }
  fs.writeFileSync(`/proc/${pid}/uid_map`, `0 ${base} 65536\n`);
  fs.writeFileSync(`/proc/${pid}/gid_map`, `0 ${base} 65536\n`);
}

export interface BoardUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** setpriv arguments that make the rest of argv run as `u` inside the board. */
export function privsFor(u: BoardUser, userns: boolean): string[] {
  if (u.uid === 0 && userns) {
    return [
      `--bounding-set=-all,${ROOT_CAPS.map((c) => `+${c}`).join(',')}`,
      '--inh-caps=-all',
      '--no-new-privs',
      '--',
    ];
  }
  return [
    ...(u.uid ? [`--reuid=${u.uid}`, `--regid=${u.gid}`, '--init-groups'] : []),
    '--bounding-set=-all',
    '--inh-caps=-all',
    '--no-new-privs',
    '--',
  ];
}

/**
 * argv prefix of every process the service starts into a board (the sandbox itself, shells, the file
 * server, relays): on the host, before anything of the board runs, it closes every descriptor above
 * `keepFds` that it inherited, joins the board's cgroups (`join`, from BoardCgroups.joinScript) and
 * gives the usual umask 022 instead of the service's private 077, then execs the rest.
 *
 * Closing matters because a board's root can read every descriptor its processes hold: a descriptor
 * the service holds without close-on-exec (a PTY master node-pty opened for another board's shell, a
 * pipe the service inherited from whoever started it) would otherwise follow the fork into this board
 * and let it type into, or read, something that is not its own. bash, not sh: dash cannot close a
 * descriptor above 9.
 */
export function entryPrefix(join: string, keepFds = 2): string[] {
  const close = `for f in /proc/$$/fd/*; do n=\${f##*/}; if [ "$n" -gt ${keepFds} ]; then exec {n}>&-; fi; done; `;
  // --norc: bash reads ~/.bashrc (the host root's) when its stdin is a socket, as our pipes are.
  // From /, with no PWD: the service's working directory would otherwise travel into the board in
  // the environment of its pid 1 and PTY host (readable there in /proc/<pid>/environ).
  return [
    '/bin/bash',
    '--norc',
    '--noprofile',
    '-c',
    `umask 022; cd / || exit 125; unset PWD OLDPWD; ${close}${join}exec "$@"`,
    'bianbu-enter',
  ];
}

/** argv prefix that runs a program inside the running board `initPid` as `u`, in `cwd`. */
export function enterArgv(
  initPid: number,
  u: BoardUser,
  cwd: string,
  cgPrefix: string[],
  userns: boolean,
): { file: string; args: string[] } {
  const all = [
    ...cgPrefix,
    '/usr/bin/nsenter',
    '-t',
    String(initPid),
    ...(userns ? ['-U'] : []),
    '-m',
    '-u',
    '-i',
    '-n',
    '-p',
    '-r',
    '-w',
    '--',
    '/usr/bin/env',
    '-C',
    cwd,
    '--',
    '/usr/bin/setpriv',
    ...privsFor(u, userns),
  ];
  return { file: all[0], args: all.slice(1) };
}
