// `bianbu` entry: parses, runs, maps every failure to its exit code (see errors.ts and program.ts).
import { CommanderError } from 'commander';
import { rawArgv } from './context.ts';
import { CliError, ExitCode } from './errors.ts';
import { buildProgram } from './program.ts';

function report(err: CliError, json: boolean): void {
  if (json)
    process.stderr.write(
      `${JSON.stringify({ error: { key: err.key, message: err.message, exitCode: err.exitCode, class: err.cls, ...(err.data ? { data: err.data } : {}) } })}\n`,
    );
  else process.stderr.write(`bianbu: ${err.message} (${err.key})\n`);
}

export async function run(argv: string[]): Promise<number> {
  rawArgv.push(...argv);
  const program = buildProgram();
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      if (err.code === 'commander.help' || err.code === 'commander.executeSubCommandAsync')
        return ExitCode.usage;
      return ExitCode.usage;
    }
    if (err instanceof CliError) {
      report(err, json);
      return err.exitCode;
    }
    const e = err as Error;
    report(new CliError(e?.message ?? String(err), 'cli.internal', 'server'), json);
    if (process.env.BIANBU_DEBUG) process.stderr.write(`${e?.stack}\n`);
    return 1;
  }
}

run(process.argv.slice(2)).then((code) => process.exit(code));
