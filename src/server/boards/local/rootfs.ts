// The writable tree of a local board: what the board sees as /, minus the host's /usr which the
// sandbox binds read-only over the empty `usr` mount point. The default image is generated here; a
// flashed image is unpacked by image.ts and completed with `ensureMountPoints`.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chmodDirIn, lstatIn, mkdirIn, writeFileIn } from './tree.ts';

/** Board users: root (without capabilities inside the sandbox) and an ordinary `user`. */
export const BOARD_USERS = [
  { name: 'root', uid: 0, gid: 0, home: '/root' },
  { name: 'user', uid: 1000, gid: 1000, home: '/home/user' },
] as const;

const MOUNT_POINTS = ['usr', 'proc', 'dev', 'tmp', 'run', 'etc', 'var/tmp', 'opt', 'root', 'home'];

/** /etc entries copied from the host so that programs of the host's /usr work inside the board. */
const HOST_ETC = [
  'profile.d',
  'bash.bashrc',
  'skel',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'localtime',
  'timezone',
  'terminfo',
  'environment',
  'login.defs',
];

// The service runs with umask 077 (its data is private), which would make a board's own files
// unreadable to its ordinary user: every directory and file written here gets its mode exactly.

/** mkdir -p, each directory it creates with exactly `mode`. */
export function mkdirExact(dir: string, mode = 0o755): void {
  const first = fs.mkdirSync(dir, { recursive: true });
  if (first === undefined) return;
  for (let d = dir; ; d = path.dirname(d)) {
    fs.chmodSync(d, mode);
    if (d === first || d === path.dirname(d)) break;
  }
}

/** A file written with exactly `mode`. */
export function writeExact(file: string, data: string, mode = 0o644): void {
  fs.writeFileSync(file, data);
  fs.chmodSync(file, mode);
}

/**
 * The directories the sandbox mounts over (and the sticky scratch ones) exist in `root`, a tree an
 * image or a board wrote. Done by descriptor walks (tree.ts): a mount point that is a link, or a
 * link on the way to one (`tmp -> /host/dir`, `var -> /elsewhere`), is refused, never followed.
 */
export function ensureMountPoints(root: string): void {
  for (const d of MOUNT_POINTS) mkdirIn(root, d);
  chmodDirIn(root, 'tmp', 0o1777);
  chmodDirIn(root, 'var/tmp', 0o1777);
}

/** Whether the tree holds a regular /etc/passwd, reached through real directories only. */
export function hasPasswd(root: string): boolean {
  return lstatIn(root, 'etc/passwd')?.isFile() ?? false;
}

export interface RootfsInfo {
  hostname: string;
  model: string;
  pluginsMount: string;
}

/** Writes a fresh default root into `root` (which must not exist yet). */
export function createDefaultRoot(root: string, info: RootfsInfo): void {
  mkdirExact(root);
  ensureMountPoints(root);
  for (const d of [
    'var/log',
    'var/lib',
    'var/cache',
    'srv',
    'mnt',
    path.dirname(info.pluginsMount).slice(1),
  ]) {
    mkdirExact(path.join(root, d));
  }
  mkdirExact(path.join(root, info.pluginsMount));
  const etc = path.join(root, 'etc');
  for (const name of HOST_ETC) {
    const src = path.join('/etc', name);
    if (!fs.existsSync(src)) continue;
    try {
      fs.cpSync(src, path.join(etc, name), { recursive: true, verbatimSymlinks: true, dereference: false });
    } catch {
      // An unreadable host file only means one less convenience inside the board.
    }
  }
  writeExact(
    path.join(etc, 'passwd'),
    `${BOARD_USERS.map((u) => `${u.name}:x:${u.uid}:${u.gid}:${u.name}:${u.home}:/bin/bash`).join('\n')}\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
  );
  writeExact(path.join(etc, 'group'), 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n');
  writeExact(path.join(etc, 'shadow'), 'root:*:19000:0:99999:7:::\nuser:*:19000:0:99999:7:::\n', 0o640);
  writeExact(path.join(etc, 'nsswitch.conf'), 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n');
  writeIdentity(root, info);
  writeExact(
    path.join(etc, 'os-release'),
    'PRETTY_NAME="Bianbu 2.0"\nNAME="Bianbu"\nVERSION_ID="2.0"\nID=bianbu\nID_LIKE=debian\nHOME_URL="https://bianbu.spacemit.com"\n',
  );
  writeExact(path.join(etc, 'issue'), 'Bianbu 2.0 \\n \\l\n\n');
  writeExact(path.join(etc, 'motd'), `\nWelcome to ${info.hostname} (${info.model || 'RISC-V board'}).\n\n`);
  writeShellStartup(etc);
  for (const u of BOARD_USERS) {
    const home = path.join(root, u.home);
    mkdirExact(path.dirname(home));
    mkdirExact(home);
    fs.chmodSync(home, u.uid === 0 ? 0o700 : 0o750); // /root is a mount point made 0755 above
    const skel = path.join(etc, 'skel');
    if (fs.existsSync(skel)) fs.cpSync(skel, home, { recursive: true, verbatimSymlinks: true });
    chownTree(home, u.uid, u.gid);
  }
}

// A login shell's start-up is on the way of every shell the console opens (its first byte is the
// prompt), and inside a board each process it starts costs 1.5–4 ms (measured on this machine kind):
// Debian's /etc/profile runs `id -u` and its ~/.bashrc `dircolors -b`, 3–7 ms of a 7 ms start. The
// default image's startup files do what Debian's do without starting a process: bash knows its EUID,
// and the colours `dircolors -b` prints are written once, when the image is made.

/** TERM the cached colours were made for (the console's terminals); others run dircolors. */
export const CACHED_COLORS_TERM = 'xterm-256color';

const PROFILE = `# /etc/profile of the Bianbu default image: run by login shells, sh and bash alike.
# bash knows its EUID; other shells ask id(1).
if [ "\${EUID:-$(id -u)}" -eq 0 ]; then
  PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
else
  PATH="/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"
fi
export PATH

if [ "\${PS1-}" ]; then
  if [ "\${BASH-}" ] && [ "$BASH" != "/bin/sh" ]; then
    if [ -f /etc/bash.bashrc ]; then
      . /etc/bash.bashrc
    fi
  elif [ "\${EUID:-$(id -u)}" -eq 0 ]; then
    PS1='# '
  else
    PS1='$ '
  fi
fi

if [ -d /etc/profile.d ]; then
  for i in /etc/profile.d/*.sh; do
    if [ -r "$i" ]; then
      . "$i"
    fi
  done
  unset i
fi
`;

const BASHRC = String.raw`# ~/.bashrc of the Bianbu default image: read by interactive shells (login shells through
# ~/.profile). It starts no process: ls colours come from /etc/bianbu/dircolors.sh, the output of
# dircolors -b saved when the image was made; a ~/.dircolors of your own is read as usual.

case $- in
  *i*) ;;
  *) return ;;
esac

HISTCONTROL=ignoreboth
HISTSIZE=1000
HISTFILESIZE=2000
shopt -s histappend checkwinsize

case "$TERM" in
  xterm-color | *-256color)
    PS1='\[\033[01;32m\]\u@\h\[\033[00m\]:\[\033[01;34m\]\w\[\033[00m\]\$ ' ;;
  *) PS1='\u@\h:\w\$ ' ;;
esac
case "$TERM" in
  xterm* | rxvt*) PS1="\[\e]0;\u@\h: \w\a\]$PS1" ;;
esac

if [ -x /usr/bin/dircolors ]; then
  if [ -r ~/.dircolors ]; then
    eval "$(dircolors -b ~/.dircolors)"
  elif [ "$TERM" = ${CACHED_COLORS_TERM} ] && [ -r /etc/bianbu/dircolors.sh ]; then
    . /etc/bianbu/dircolors.sh
  else
    eval "$(dircolors -b)"
  fi
  alias ls='ls --color=auto'
  alias grep='grep --color=auto'
fi
alias ll='ls -alF'
alias la='ls -A'
alias l='ls -CF'

if [ -f ~/.bash_aliases ]; then
  . ~/.bash_aliases
fi

if ! shopt -oq posix; then
  if [ -f /usr/share/bash-completion/bash_completion ]; then
    . /usr/share/bash-completion/bash_completion
  elif [ -f /etc/bash_completion ]; then
    . /etc/bash_completion
  fi
fi
`;

let colors: string | null | undefined;

/** `dircolors -b` of the host's /usr (the boards' own) for CACHED_COLORS_TERM, asked once. */
function dircolorsScript(): string | null {
  if (colors !== undefined) return colors;
  try {
    const out = execFileSync('/usr/bin/dircolors', ['-b'], {
      env: { PATH: '/usr/bin:/bin', TERM: CACHED_COLORS_TERM },
      encoding: 'utf8',
      timeout: 5000,
    });
    colors = /^LS_COLORS='[^']*';\s*export LS_COLORS\s*$/.test(out) ? out : null;
  } catch {
    colors = null; // no dircolors: the .bashrc skips colours as Debian's does
  }
  return colors;
}

/** The image's /etc/profile, skel .bashrc and cached colours (see above). */
function writeShellStartup(etc: string): void {
  writeExact(path.join(etc, 'profile'), PROFILE);
  mkdirExact(path.join(etc, 'skel'));
  writeExact(path.join(etc, 'skel', '.bashrc'), BASHRC);
  const script = dircolorsScript();
  if (script) {
    mkdirExact(path.join(etc, 'bianbu'));
    writeExact(
      path.join(etc, 'bianbu', 'dircolors.sh'),
      `# dircolors -b for TERM=${CACHED_COLORS_TERM}, saved when this image was made\n${script}`,
    );
  }
}

/** Hostname and hosts follow the board's name (also after a flash or a rename); links in the tree are refused. */
export function writeIdentity(root: string, info: Pick<RootfsInfo, 'hostname'>): void {
  mkdirIn(root, 'etc');
  writeFileIn(root, 'etc/hostname', `${info.hostname}\n`);
  writeFileIn(
    root,
    'etc/hosts',
    `127.0.0.1\tlocalhost\n127.0.1.1\t${info.hostname}\n::1\tlocalhost ip6-localhost\n`,
  );
}

function chownTree(dir: string, uid: number, gid: number): void {
  fs.lchownSync(dir, uid, gid);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) chownTree(p, uid, gid);
    else fs.lchownSync(p, uid, gid);
  }
}
