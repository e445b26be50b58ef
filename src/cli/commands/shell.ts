// `bianbu shell BOARD`: an interactive login shell (or --serial console) on a held board, over the
// same path as the console's terminal: apply-device-shell, then /ws. Raw mode while attached, the
// window size sent at start and on every SIGWINCH, output acknowledged as it is written, and a
// dropped connection resumed from the last byte seen. `~.` after a newline detaches, as in ssh.
import type { Command } from 'commander';
import { ctxOf, resolveHeld } from '../context.ts';
import { CliError, classify } from '../errors.ts';
import { ShellSession } from '../shell-session.ts';

export function registerShell(program: Command): void {
  program
    .command('shell <board>')
    .description('an interactive shell on a held board (raw terminal, resize, resume after a drop)')
    .option('--serial', 'the board’s serial console instead of a login shell')
    .addHelpText(
      'after',
      `
Examples:
  bianbu shell ci-1
  bianbu shell ci-1 --serial

Type ~. at the start of a line to detach. Exit status: 0 when the shell exited, otherwise the class
of the reason it was closed (e.g. 6 for board.reset or board.flashing, 3 for session.ended).`,
    )
    .action(async (ref: string, o: { serial?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const lease = await resolveHeld(ctx, ref);
      const out = process.stdout;
      const size = () => ({ cols: out.columns || 80, rows: out.rows || 24 });
      const s = await ShellSession.open(ctx, lease, { ...size(), type: o.serial ? 'serial' : 'login' });
      const stdin = process.stdin;
      const raw = stdin.isTTY;
      if (raw) stdin.setRawMode(true);
      const onResize = () => {
        const z = size();
        s.resize(z.cols, z.rows);
      };
      process.on('SIGWINCH', onResize);
      onResize();
      let lineStart = true;
      let tilde = false;
      const reason = await new Promise<string>((resolve) => {
        s.onData = (chunk, end) => {
          if (out.write(chunk)) s.processed(end);
          else out.once('drain', () => s.processed(end));
        };
        s.onNotice = (t) => process.stderr.write(`\r\n${t}\r\n`);
        s.onClosed = resolve;
        stdin.on('data', (d: Buffer) => {
          // ~. at a line start detaches (ssh's escape); ~~ sends one ~.
          const keep: number[] = [];
          for (const byte of d) {
            if (tilde) {
              tilde = false;
              if (byte === 0x2e) {
                if (keep.length) s.write(Buffer.from(keep));
                return resolve('cli.detached');
              }
              if (byte !== 0x7e) keep.push(0x7e);
            } else if (lineStart && byte === 0x7e) {
              tilde = true;
              continue;
            }
            keep.push(byte);
            lineStart = byte === 0x0d || byte === 0x0a;
          }
          if (keep.length) s.write(Buffer.from(keep));
        });
        stdin.on('end', () => resolve('cli.stdin_closed'));
        stdin.resume();
      });
      process.off('SIGWINCH', onResize);
      if (raw) stdin.setRawMode(false);
      stdin.pause();
      await s.close();
      if (reason === 'shell.exited' || reason === 'cli.detached' || reason === 'cli.stdin_closed') return;
      const cls = classify(0, reason);
      throw new CliError(
        `the shell was closed (${reason})`,
        reason,
        reason === 'session.ended' ? 'auth' : cls === 'server' ? 'board' : cls,
      );
    });
}
