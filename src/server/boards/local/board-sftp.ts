// A local board's file server: one OpenSSH sftp-server process inside the board (entered like every
// other process, as the board's root), started on first need and spoken to with ssh2's SFTP client
// over its stdio. Every file call runs inside the board, so a link or a race can only reach the
// board's own tree. The uploads journal names temporary files of uploads in flight; those a crash
// interrupted are removed once the board is up again.

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import type { SFTPWrapper } from 'ssh2';
import { DriverError } from '../driver.ts';
import { openSftpOverStdio } from '../sftp/stdio-sftp.ts';
import type { TempJournal } from '../sftp/temp-journal.ts';
import { withTimeout } from '../util.ts';
import { hostSupport } from './host-support.ts';
import { PATH_ENV } from './sandbox.ts';

export interface BoardSftpContext {
  boardId: string;
  running(): boolean;
  /** argv prefix that runs a program inside the board as its root. */
  enterAsRoot(): { file: string; args: string[] };
  journal: TempJournal;
  timeoutMs: number;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
}

export class BoardSftp {
  private current: { session: Promise<SFTPWrapper>; child: ChildProcess } | null = null;

  constructor(private readonly ctx: BoardSftpContext) {}

  /** The running file server's session, or a new one. */
  session(): Promise<SFTPWrapper> {
    const cur = this.current;
    if (cur && cur.child.exitCode === null && cur.child.signalCode === null) return cur.session;
    const server = hostSupport().sftpServer;
    if (!server)
      return Promise.reject(
        new DriverError('capability.unsupported', 'OpenSSH sftp-server is not installed on this host'),
      );
    if (!this.ctx.running())
      return Promise.reject(new DriverError('board.not_running', 'The board is not running'));
    const { file, args } = this.ctx.enterAsRoot();
    const child = spawn(file, [...args, server], {
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { PATH: PATH_ENV, HOME: '/root' },
    });
    const session = openSftpOverStdio({
      stdin: child.stdin,
      stdout: child.stdout,
      kill: () => child.kill('SIGKILL'),
    });
    const entry = { session, child };
    this.current = entry;
    child.once('exit', () => {
      if (this.current === entry) this.current = null;
    });
    session.catch(() => {
      if (this.current === entry) this.current = null;
      child.kill('SIGKILL');
    });
    return session;
  }

  /** Ends the file server (the board stops or reboots). */
  close(): void {
    const s = this.current;
    this.current = null;
    s?.child.kill('SIGKILL');
  }

  /** Temporary files of uploads a crash interrupted are removed (inside the board) when it is up again. */
  async sweepUploads(): Promise<void> {
    const { boardId, log } = this.ctx;
    try {
      const { removed } = await withTimeout(
        this.session().then((sftp) => this.ctx.journal.sweep(sftp)),
        this.ctx.timeoutMs,
        'upload sweep',
      );
      if (removed.length) log?.('removed interrupted uploads', { boardId, files: removed.length });
    } catch (err) {
      log?.('could not sweep interrupted uploads', { boardId, err: (err as Error).message });
    }
  }
}
