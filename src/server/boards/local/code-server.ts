// A local board's code-server (VS Code in the browser), shown in the console's code window through the
// /code/ proxy. It comes from the host's /usr — scripts/install-code-server.sh puts it under
// /usr/local/lib/bianbu-code-server, and every board sees the host's /usr read-only — and runs inside
// the board as its unprivileged `user`, in the board's namespaces and cgroups, like the desktop
// (desktop.ts). Lifecycle: nothing runs until the code window first reaches the board's code port;
// `connect()` then finds nothing answering on 127.0.0.1:8080 *inside the board's network namespace*,
// prepares the user's home (as the board's root), starts code-server (as the user), waits until it
// listens and connects again. One that died (the user killed it, the OOM killer inside the board's
// cgroup) is started again by the next connection; a power reset or a flash ends it with every other
// process of the board. Whatever else answers on that port (the user's own web app) is shown instead
// and nothing is started.
//
// No host port and no host path: code-server binds the board's own loopback, reached through the
// driver's port relay; its data (settings, extensions, its log) lives in /home/user inside the board.
// The host only decides *whether* to start it (from its own /usr) and reads the start script's stdout.
// `--auth none`: the proxy authorises every request (a ticket, the session cookie, the apply).
import fs from 'node:fs';
import type { Duplex } from 'node:stream';
import { VNC_LIMITS } from '#shared/desktop.ts';
import { DriverError } from '../driver.ts';
import { boardNode } from './desktop.ts';

/** Where scripts/install-code-server.sh installs by default (BIANBU_CODE_SERVER_DIR). */
export const DEFAULT_CODE_SERVER_DIR = '/usr/local/lib/bianbu-code-server';
/** The folder code-server opens: the home of the board user it runs as (it can write there). */
export const CODE_FOLDER = '/home/user';
/** How long a start may take before the connection that asked for it is refused. */
export const CODE_START_TIMEOUT_MS = 45_000;

/** An installed code-server under the host's /usr, as the boards see it. */
export interface HostCodeServer {
  dir: string;
  /** The program boards run with the host's node: `<dir>/node_modules/code-server/out/node/entry.js`. */
  entry: string;
  node: string;
  version: string;
}

/**
 * The host's install in `dir`, or null when there is none: not under /usr (boards would not see it),
 * no marker (an install that did not finish), no entry point, or a node that boards cannot run.
 */
export function hostCodeServer(dir: string | null | undefined): HostCodeServer | null {
  if (!dir || !dir.startsWith('/usr/') || dir.includes('/../')) return null;
  const node = boardNode();
  if (!node) return null;
  try {
    const version = fs.readFileSync(`${dir}/.bianbu-installed`, 'utf8').trim();
    const entry = `${dir}/node_modules/code-server/out/node/entry.js`;
    if (!version || !fs.statSync(entry).isFile()) return null;
    return { dir, entry, node, version };
  } catch {
    return null;
  }
}

/**
 * Run inside the board as its root: the user's home exists and is the user's (whatever the board put
 * there resolves inside the board), and so are code-server's data directories under it.
 */
export const CODE_PREPARE = [
  `h=${CODE_FOLDER}`,
  'if [ -L "$h" ] || { [ -e "$h" ] && [ ! -d "$h" ]; }; then rm -f "$h"; fi',
  'mkdir -p "$h" || exit 1',
  'chown user:user "$h" 2>/dev/null',
  'exit 0',
].join('\n');

/**
 * Run inside the board as its user. Stops the code-server this script started before (its process
 * group, from the pid file in the user's data directory) when it no longer answers, starts a new one
 * on the board's loopback, and answers "ready" once it listens. $1 node, $2 code-server's entry point,
 * $3 the port, $4 the folder to open. No telemetry, no update check, no workspace-trust prompt, no
 * "getting started" override: nothing that reaches out or stands in front of the files.
 */
export const CODE_START = [
  'export HOME=/home/user',
  'data="$HOME/.local/share/code-server"; log="$data/bianbu.log"',
  'mkdir -p "$data" "$HOME/.config/code-server" || { echo "no data directory"; exit 1; }',
  // Only when that pid is still a code-server: after a reset the numbers name other processes.
  'p=$(head -c 16 "$data/bianbu.pid" 2>/dev/null | tr -cd 0-9)',
  'if [ -n "$p" ] && tr "\\0" " " <"/proc/$p/cmdline" 2>/dev/null | grep -q "code-server/out/node/entry"; then kill -9 -- "-$p" 2>/dev/null; sleep 0.2; fi',
  'rm -f "$log"',
  'cd "$4" 2>/dev/null || cd "$HOME"',
  // setsid: its own session and process group, so the pid file names the whole tree (the wrapper,
  // the server, its extension host and terminals), and it outlives this script.
  `(setsid sh -c 'echo $$ > "$0/bianbu.pid"; exec "$@"' "$data" "$1" "$2" --auth none --bind-addr "127.0.0.1:$3" --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override --user-data-dir "$data" --extensions-dir "$data/extensions" "$4" >"$log" 2>&1 </dev/null &)`,
  `i=0; until grep -q 'HTTP server listening' "$log" 2>/dev/null; do i=$((i+1)); [ $i -gt ${(CODE_START_TIMEOUT_MS - 5000) / 100} ] && { echo "not listening"; tail -5 "$log"; exit 1; }; sleep 0.1; done`,
  'echo ready',
].join('\n');

/** What the code server needs from its board's driver. */
export interface CodeServerBoard {
  /** Runs argv inside the board as `user` and answers its stdout. */
  run(argv: string[], user: 'root' | 'user', timeoutMs: number): Promise<string>;
  /** A stream to a TCP port on the board's own loopback. */
  connectPort(port: number): Promise<Duplex>;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
}

/** One board's code-server: started on first use and again after it died; concurrent callers share a start. */
export class BoardCodeServer {
  private starting: Promise<void> | null = null;
  readonly port = VNC_LIMITS.codeServerPort;

  constructor(
    private readonly board: CodeServerBoard,
    private readonly install: () => HostCodeServer | null,
  ) {}

  /** Whether the next connection would start one when none answers (the host has the install). */
  available(): boolean {
    return this.install() !== null;
  }

  /** A stream to whatever answers on the board's code port, starting code-server when nothing does. */
  async connect(): Promise<Duplex> {
    if (this.starting) await this.starting.catch(() => {});
    try {
      return await this.board.connectPort(this.port);
    } catch (err) {
      // Only "nothing answers" starts one: a board that is down or busy says so as it is.
      if (!(err instanceof DriverError) || err.key !== 'driver.failed' || !this.install()) throw err;
    }
    this.starting ??= this.start().finally(() => {
      this.starting = null;
    });
    await this.starting;
    return this.board.connectPort(this.port);
  }

  private async start(): Promise<void> {
    const cs = this.install();
    if (!cs) throw new DriverError('capability.unsupported', 'The host has no code-server');
    const begun = Date.now();
    await this.board.run(['/bin/sh', '-c', CODE_PREPARE], 'root', 15_000);
    const out = await this.board.run(
      ['/bin/sh', '-c', CODE_START, 'code-server', cs.node, cs.entry, String(this.port), CODE_FOLDER],
      'user',
      CODE_START_TIMEOUT_MS,
    );
    if (!out.includes('ready'))
      throw new DriverError('driver.failed', `code-server did not start: ${out.trim().slice(-300)}`);
    this.board.log?.('board code-server started', { ms: Date.now() - begun, version: cs.version });
  }
}
