// The generic caller: every call of the contract by name, for what no named command covers yet.
import type { Command } from 'commander';
import { contract, findCall } from '#shared/contract.ts';
import { ctxOf } from '../context.ts';
import { usage } from '../errors.ts';
import { printJson } from '../output.ts';

function parsePairs(args: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of args) {
    const eq = a.indexOf('=');
    if (eq <= 0) throw usage(`expected key=value, got "${a}"`);
    const raw = a.slice(eq + 1);
    let v: unknown = raw;
    try {
      v = JSON.parse(raw);
    } catch {
      v = raw;
    }
    out[a.slice(0, eq)] = v;
  }
  return out;
}

export function registerRaw(program: Command): void {
  program
    .command('calls')
    .description('list every call of the contract (name, method, path, summary)')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu calls\n  bianbu calls --json\n\nJSON: [{"name", "method", "path", "summary", "needsApply"}]',
    )
    .action((_o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      if (ctx.json)
        return printJson(
          contract.map((c) => ({
            name: c.name,
            method: c.method,
            path: c.path,
            summary: c.summary,
            needsApply: c.needsApply,
          })),
        );
      for (const c of contract)
        process.stdout.write(`${c.name.padEnd(28)} ${c.method.padEnd(5)} ${c.path}  ${c.summary}\n`);
    });

  program
    .command('call <name> [pairs...]')
    .description('make any call of the contract; values are JSON when they parse, else strings')
    .option('-d, --data <json>', 'the whole payload as JSON')
    .option('--apply <applyId>', 'send this applyId as ApplyAccess')
    .addHelpText(
      'after',
      `
Examples:
  bianbu call fetchRequestDevice
  bianbu call renameRequestDevice deviceId=b1 oldServerName=a newServerName=b
  bianbu call requestDevice --data '{"requestDate":"...","filterReq":{},"serverName":"x"}'

Output: the call's data as JSON (the response schema of \`OPTIONS <path>\`).`,
    )
    .action(async (name: string, pairs: string[], o: { data?: string; apply?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const call = findCall(name);
      if (!call) throw usage(`unknown call "${name}" (see: bianbu calls)`, 'cli.unknown_call');
      if (call.answer === 'stream' || call.payload === 'multipart')
        throw usage(`${name} transfers files: use \`bianbu cp\``, 'cli.use_cp');
      let payload: Record<string, unknown>;
      try {
        payload = o.data ? (JSON.parse(o.data) as Record<string, unknown>) : parsePairs(pairs);
      } catch (e) {
        throw usage(`--data is not JSON: ${(e as Error).message}`);
      }
      printJson(await ctx.call(call, payload as never, { applyId: o.apply }));
    });
}
