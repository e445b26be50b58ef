// code-server for the code window, installed by the service itself on a start that finds none
// (BIANBU_CODE_SERVER_INSTALL=auto, the default): `npm install && npm start` then gives VS Code in local
// boards without a separate set-up step. Lifecycle: at the desktop feature's start, when the host runs
// sandbox boards, the service runs as root and BIANBU_CODE_SERVER_DIR has no finished install,
// scripts/install-code-server.sh runs in the background (about a minute; it needs the npm registry and
// apt), each of its lines going to the service log; meanwhile desktopStatus says `code.installing`.
// Local boards look for the install on every code window (hostCodeServer), so they offer VS Code as
// soon as it is there, with no restart. A failure is logged with the script's reason and the window
// offers the built-in editor, as without an install. The service's stop ends the script's process
// group; the script builds in a staging directory, so an interrupted run leaves no half install.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { hostCodeServer } from '#server/boards/local/code-server.ts';
import { hostSupport } from '#server/boards/local/host-support.ts';

export const INSTALL_SCRIPT = path.resolve(import.meta.dirname, '../../../scripts/install-code-server.sh');

export type InstallState = 'none' | 'installing' | 'done' | 'failed';

export class CodeServerInstall {
  state: InstallState = 'none';
  /** The script's lines so far, as logged (the last 200). */
  readonly steps: string[] = [];
  private child: ChildProcess | null = null;

  constructor(private readonly app: FastifyInstance) {}

  /** Starts the install when this start should (see the header); answers whether it did. */
  start(): boolean {
    const cfg = this.app.config;
    const dir = cfg.BIANBU_CODE_SERVER_DIR;
    if (cfg.BIANBU_CODE_SERVER_INSTALL !== 'auto' || !dir || hostCodeServer(dir)) return false;
    if (!hostSupport().userns) return false;
    if (process.getuid?.() !== 0) {
      this.app.log.info(
        { dir },
        'code-server is not installed: the code window offers the built-in editor (scripts/install-code-server.sh as root installs it)',
      );
      return false;
    }
    this.state = 'installing';
    const begun = Date.now();
    const log = this.app.log;
    log.info({ dir }, 'code-server is not installed: installing it for the code window (about a minute)');
    const child = spawn('bash', [INSTALL_SCRIPT], {
      env: { ...process.env, BIANBU_CODE_SERVER_DIR: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    let last = '';
    const lines = (b: Buffer) => {
      for (const line of b.toString().split('\n')) {
        const text = line.trim();
        if (!text) continue;
        last = text;
        this.steps.push(text);
        if (this.steps.length > 200) this.steps.shift();
        log.info(text);
      }
    };
    child.stdout?.on('data', lines);
    child.stderr?.on('data', lines);
    const done = (ok: boolean, why: string) => {
      if (this.child !== child) return;
      this.child = null;
      this.state = ok && hostCodeServer(dir) ? 'done' : 'failed';
      if (this.state === 'done')
        log.info(
          { seconds: Math.round((Date.now() - begun) / 1000) },
          'code-server installed: the code window shows VS Code',
        );
      else
        log.warn(
          { why: why || last },
          'code-server was not installed: the code window offers the built-in editor',
        );
    };
    child.on('error', (err) => done(false, err.message));
    child.on('close', (code) => done(code === 0, code === 0 ? '' : last));
    return true;
  }

  stop(): void {
    const child = this.child;
    this.child = null;
    if (child?.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {}
    }
    if (this.state === 'installing') this.state = 'failed';
  }
}
