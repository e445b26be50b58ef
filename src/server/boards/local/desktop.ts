// A local board's graphical desktop: TigerVNC's Xvnc (X server and VNC server in one), openbox and an
// xterm, all from the host's /usr (which every board sees read-only), running inside the board as its
// unprivileged `user`. Lifecycle: nothing runs until the first VNC connection; `connectVnc()` then
// finds no socket, prepares the board's /run/vnc (as the board's root), starts the desktop (as the
// board's user) and connects again. A desktop that died (the user killed it, a power reset, the OOM
// killer inside the board's cgroup) is started again by the next connection in the same way.
//
// The RFB socket is a unix socket at /run/vnc/rfb.sock *inside* the board: never a host port, never a
// host path. The service reaches it through a relay that runs inside the board's namespaces (user,
// mount, network, PID), as the board's user, in its cgroups — so whatever the board does to /run/vnc
// (a link to a host path, a fake socket, a program that floods) resolves and runs within the board
// only. The host side only reads the relay's stdout, through a bounded bridge.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import fs from 'node:fs';
import { Duplex } from 'node:stream';
import { DriverError } from '../driver.ts';
import { withTimeout } from '../util.ts';

export const VNC_DIR = '/run/vnc';
export const VNC_SOCKET = `${VNC_DIR}/rfb.sock`;
export const DESKTOP_DISPLAY = ':1';
export const DESKTOP_GEOMETRY = '1280x800';

/** The X server, window manager and terminal of the host's /usr, or null when the host has no Xvnc. */
export interface HostDesktop {
  xvnc: string;
  wm: string | null;
  term: string | null;
}

function executable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Looked up under /usr only: that is the tree every board sees (bound read-only from the host), so a
 * program found here runs inside the board. `Xtigervnc` rather than the `Xvnc` alternative: the
 * alternative's link lives in /etc, which is the board's own.
 */
export function hostDesktop(): HostDesktop | null {
  const xvnc = ['/usr/bin/Xtigervnc'].find(executable);
  if (!xvnc) return null;
  return {
    xvnc,
    wm: ['/usr/bin/openbox'].find(executable) ?? null,
    term: ['/usr/bin/xterm'].find(executable) ?? null,
  };
}

/** The host's node, when the board can run it (under /usr); the relay runs it inside the board. */
export function boardNode(): string | null {
  return process.execPath.startsWith('/usr/') && executable(process.execPath) ? process.execPath : null;
}

/**
 * Run inside the board as its root. /run/vnc becomes a directory of the board's user (whatever the
 * board put there — a link, a file — is replaced); the X socket directory is sticky and shared; a
 * minimal fontconfig file is written when the board has none (its /etc is its own). Everything here
 * resolves inside the board.
 */
export const DESKTOP_PREPARE = [
  `d=${VNC_DIR}`,
  'if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then rm -f "$d"; fi',
  'mkdir -p "$d" /tmp/.X11-unix /home/user || exit 1',
  'chown user:user "$d" /home/user 2>/dev/null; chmod 700 "$d"',
  'chmod 1777 /tmp/.X11-unix',
  '[ -e /etc/fonts/fonts.conf ] || { mkdir -p /etc/fonts && printf \'<?xml version="1.0"?>\\n<fontconfig><dir>/usr/share/fonts</dir><cachedir>/tmp/.fontconfig</cachedir></fontconfig>\\n\' > /etc/fonts/fonts.conf; } 2>/dev/null',
  'exit 0',
].join('\n');

/**
 * Run inside the board as its user: stops a desktop that no longer answers, starts Xvnc on the unix
 * socket (no TCP listener at all, no VNC password: the service authorises every connection), then the
 * window manager and a terminal once both its RFB and X sockets exist (a client started before the X
 * socket is there fails to open the display); answers "ready". $1 Xvnc, $2 wm, $3 terminal,
 * $4 the desktop's name.
 */
export const DESKTOP_START = [
  `export DISPLAY=${DESKTOP_DISPLAY} HOME=/home/user`,
  'pkill -u "$(id -u)" -x Xtigervnc 2>/dev/null; sleep 0.2',
  `rm -f ${VNC_SOCKET} /tmp/.X${DESKTOP_DISPLAY.slice(1)}-lock /tmp/.X11-unix/X${DESKTOP_DISPLAY.slice(1)}`,
  'cd /home/user 2>/dev/null || cd /',
  `(setsid "$1" ${DESKTOP_DISPLAY} -rfbunixpath ${VNC_SOCKET} -rfbunixmode 0600 -rfbport -1 -SecurityTypes None -nolisten tcp -AlwaysShared -geometry ${DESKTOP_GEOMETRY} -depth 24 -desktop "$4" >/tmp/.bianbu-desktop.log 2>&1 </dev/null &)`,
  `i=0; while [ ! -S ${VNC_SOCKET} ] || [ ! -S /tmp/.X11-unix/X${DESKTOP_DISPLAY.slice(1)} ]; do i=$((i+1)); [ $i -gt 100 ] && { echo "no socket"; tail -5 /tmp/.bianbu-desktop.log; exit 1; }; sleep 0.05; done`,
  // The terminal: a window manager starts it itself once it manages windows (openbox --startup): a
  // terminal mapped while openbox is still starting has its map request dropped and never shows
  // (seen on 1 in 4 starts on an idle host). Without a window manager the terminal starts alone. One
  // that cannot open the display yet is started again, up to 5 s; one the user closes (exit 0) stays
  // closed. Its complaints go to a log in the board's /tmp.
  `loop='n=0; until "$0" -geometry 100x30+40+40; do n=$((n+1)); [ $n -ge 20 ] && exit 1; sleep 0.25; done >/tmp/.bianbu-terminal.log 2>&1'`,
  `if [ -n "$2" ] && [ -n "$3" ]; then (setsid "$2" --startup "sh -c '$loop' $3" >/dev/null 2>&1 </dev/null &)`,
  `elif [ -n "$2" ]; then (setsid "$2" >/dev/null 2>&1 </dev/null &)`,
  `elif [ -n "$3" ]; then (setsid sh -c "$loop" "$3" >/dev/null 2>&1 </dev/null &); fi`,
  'echo ready',
].join('\n');

/** Connects to a unix socket inside the board and relays it over stdio; "ok" on stderr once connected. */
export const UNIX_RELAY =
  "const s=require('net').connect(process.argv[1]);" +
  "s.on('connect',()=>{process.stderr.write('ok\\n');process.stdin.pipe(s);s.pipe(process.stdout);});" +
  "s.on('error',e=>{process.stderr.write('err '+e.code+'\\n');process.exit(1)});" +
  "s.on('close',()=>process.exit(0));process.stdin.on('end',()=>s.end());";

/**
 * Spawns a relay (argv: a program inside the board that writes "ok\n" to stderr once connected, then
 * relays stdio) and answers its stdio as one stream. A relay that says anything else, exits, or stays
 * silent past `timeoutMs` is killed and refused with `driver.failed` / `driver.timeout`. `fds` are
 * descriptors of the service's handed to the relay as its 3, 4, ...
 */
export async function spawnRelay(
  argv: { file: string; args: string[] },
  env: Record<string, string>,
  timeoutMs: number,
  what: string,
  fds: number[] = [],
): Promise<Duplex> {
  const child = spawn(argv.file, argv.args, {
    stdio: ['pipe', 'pipe', 'pipe', ...fds],
    env,
  }) as ChildProcessWithoutNullStreams;
  child.stdin.on('error', () => {});
  await withTimeout(
    new Promise<void>((resolve, reject) => {
      let err = '';
      const onData = (b: Buffer) => {
        err = (err + b.toString()).slice(0, 4096);
        if (err.startsWith('ok\n')) {
          child.stderr.off('data', onData);
          // Whatever the relay writes to stderr afterwards is read and dropped, so it never blocks.
          child.stderr.resume();
          resolve();
        } else if (err.includes('\n') || err.length >= 4096)
          reject(new DriverError('driver.failed', `${what} refused: ${err.split('\n')[0].slice(0, 200)}`));
      };
      child.stderr.on('data', onData);
      child.once('error', (e) => reject(new DriverError('driver.failed', `${what}: ${e.message}`)));
      child.once('exit', () => reject(new DriverError('driver.failed', `${what} is closed`)));
    }),
    timeoutMs,
    what,
    () => child.kill('SIGKILL'),
  ).catch((e) => {
    child.kill('SIGKILL');
    throw e;
  });
  const duplex = Duplex.from({ readable: child.stdout, writable: child.stdin });
  duplex.once('close', () => child.kill('SIGKILL'));
  duplex.on('error', () => duplex.destroy());
  child.once('exit', () => setImmediate(() => duplex.destroy()));
  return duplex;
}
