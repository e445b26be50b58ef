// `bianbu exec BOARD... -- cmd args`: a command on one board with its exact stdout, stderr, stdin and
// exit status, or on many boards at once (names, globs, --all, --model) with bounded concurrency,
// output prefixed per board and one result per board.
import type { Command } from 'commander';
import type { LeaseDto } from '#shared/leases.ts';
import { type Ctx, ctxOf, mapLimit, rawArgv, selectHeld } from '../context.ts';
import { CliError, usage } from '../errors.ts';
import { printJson } from '../output.ts';
import { remoteExec } from '../remote-exec.ts';

/** The CLI's own failure during exec (as ssh): the remote command's status is every other value. */
export const EXEC_CLI_FAILURE = 255;

function prefixer(board: string, stream: NodeJS.WriteStream) {
  let partial = '';
  return {
    push(b: Buffer) {
      const text = partial + b.toString('utf8');
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) stream.write(`[${board}] ${l}\n`);
    },
    flush() {
      if (partial) stream.write(`[${board}] ${partial}\n`);
      partial = '';
    },
  };
}

async function single(ctx: Ctx, lease: LeaseDto, argv: string[], o: { stdin: boolean }): Promise<number> {
  let onInt: (() => void) | null = null;
  const res = await remoteExec(ctx, lease, argv, {
    stdout: (b, done) => (process.stdout.write(b) ? done() : process.stdout.once('drain', done)),
    stderr: (b, done) => (process.stderr.write(b) ? done() : process.stderr.once('drain', done)),
    onReady: (input) => {
      onInt = () => input.interrupt();
      process.on('SIGINT', onInt);
      if (!o.stdin) return input.end();
      process.stdin.on('data', (chunk: Buffer) => {
        process.stdin.pause();
        void input.write(chunk).then(() => process.stdin.resume());
      });
      process.stdin.on('end', () => input.end());
      process.stdin.on('error', () => input.end());
    },
  });
  if (onInt) process.off('SIGINT', onInt);
  process.stdin.pause();
  if (res.exitCode < 0)
    throw new CliError(
      `the command ended without a status: the shell closed (${res.reason})`,
      res.reason ?? 'shell.closed',
      'board',
    );
  return res.exitCode;
}

interface ExecBoardResult {
  board: string;
  deviceId: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  error: { key: string; message: string } | null;
}

async function many(ctx: Ctx, leases: LeaseDto[], argv: string[], o: { parallel: string }): Promise<number> {
  const limit = Math.max(1, Number(o.parallel) || 8);
  const settled = await mapLimit(leases, limit, async (l) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const po = prefixer(l.serverName, process.stdout);
    const pe = prefixer(l.serverName, process.stderr);
    const res = await remoteExec(ctx, l, argv, {
      stdout: (b, done) => {
        if (ctx.json) out.push(Buffer.from(b));
        else if (!ctx.quiet) po.push(b);
        done();
      },
      stderr: (b, done) => {
        if (ctx.json) err.push(Buffer.from(b));
        else pe.push(b);
        done();
      },
      onReady: (input) => input.end(),
    });
    po.flush();
    pe.flush();
    if (res.exitCode < 0)
      throw new CliError(`the shell closed (${res.reason})`, res.reason ?? 'shell.closed', 'board');
    return {
      exitCode: res.exitCode,
      stdout: Buffer.concat(out).toString('utf8'),
      stderr: Buffer.concat(err).toString('utf8'),
    };
  });
  const results: ExecBoardResult[] = leases.map((l, i) => {
    const r = settled[i];
    if (r.status === 'fulfilled')
      return { board: l.serverName, deviceId: l.deviceId, ...r.value, error: null };
    const e = r.reason as CliError;
    return {
      board: l.serverName,
      deviceId: l.deviceId,
      exitCode: null,
      stdout: '',
      stderr: '',
      error: { key: e.key ?? 'cli.error', message: e.message },
    };
  });
  if (ctx.json) printJson({ results });
  else
    for (const r of results)
      if (r.exitCode !== 0)
        process.stderr.write(
          `[${r.board}] ${r.error ? `failed: ${r.error.message} (${r.error.key})` : `exit ${r.exitCode}`}\n`,
        );
  return results.every((r) => r.exitCode === 0) ? 0 : 1;
}

export function registerExec(program: Command): void {
  program
    .command('exec <boards...>')
    .description('run a command on held boards: exact stdout/stderr, stdin, and the remote exit status')
    .usage('[options] BOARD... -- COMMAND [ARGS...]')
    .option('--all', 'every board you hold')
    .option('--model <model>', 'every held board of this model')
    .option('--group <group>', 'every held board you put into this share group')
    .option('-n, --no-stdin', 'do not forward standard input (the command reads end of file)')
    .option('-P, --parallel <n>', 'boards at once when running on several', '8')
    .addHelpText(
      'after',
      `
The command is argv, not a shell line: each argument reaches the board as given. For pipes and
globs, run a shell:  bianbu exec ci-1 -- sh -c 'ls /etc | wc -l'

Examples:
  bianbu exec ci-1 -- uname -a
  tar c src | bianbu exec ci-1 -- tar x -C /root
  bianbu exec 'ci-*' -- make -C /root/app test
  bianbu exec --all --json -- cat /etc/os-release
  bianbu exec --group lab -- systemctl restart app

One board: stdout and stderr stream as they come, stdin is forwarded, and bianbu exits with the
command's status (127: not found, 128+N: killed by signal N; 255: bianbu itself failed).
Several boards: output lines prefixed with [board], no stdin, at most --parallel at once; exit 0 when
every command exited 0, else 1.
JSON (always a list, one board or many): {"results": [{"board", "deviceId", "exitCode": number|null,
      "stdout": string, "stderr": string, "error": {"key", "message"}|null}]}`,
    )
    .action(
      async (
        words: string[],
        o: { all?: boolean; model?: string; group?: string; stdin: boolean; parallel: string },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        // Commander drops the `--`; the raw argv says where the command starts.
        const dash = rawArgv.indexOf('--');
        const after = dash >= 0 ? rawArgv.slice(dash + 1) : words.slice(1);
        const boards = words.slice(0, words.length - after.length);
        const argv = after;
        try {
          if (!argv.length) throw usage('give the command after --: bianbu exec BOARD -- COMMAND [ARGS...]');
          const leases = await selectHeld(ctx, boards, { all: o.all, model: o.model, group: o.group });
          const multi =
            leases.length > 1 ||
            ctx.json ||
            boards.some((b) => /[*?]/.test(b)) ||
            o.all ||
            o.model ||
            o.group;
          process.exitCode = multi ? await many(ctx, leases, argv, o) : await single(ctx, leases[0], argv, o);
        } catch (e) {
          if (!(e instanceof CliError)) throw e;
          process.stderr.write(`bianbu: ${e.message} (${e.key})\n`);
          process.exitCode = e.cls === 'usage' ? 2 : EXEC_CLI_FAILURE;
        }
      },
    );
}
