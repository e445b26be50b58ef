// `bianbu` — script the service with an API key: every call of the contract by name, with its
// payload checked against the same schema the server validates with.
import { contract, findCall } from '#shared/contract.ts';
import { CliError, invoke, readConfig, writeConfig } from './client.ts';

const USAGE = `bianbu — command-line client of Bianbu Cloud

  bianbu login --url URL --key API_KEY   save the service URL and an API key (from Settings → API key)
  bianbu calls                           list every call of the contract
  bianbu call NAME [key=value ...]       make a call; values are JSON when they parse, else strings
  bianbu call NAME --json '{...}'        make a call with a JSON payload
  bianbu use-apply APPLY_ID              send this applyId as ApplyAccess on later calls

Environment: BIANBU_URL, BIANBU_API_KEY override the saved configuration.`;

function parsePairs(args: string[]): Record<string, unknown> {
  const jsonAt = args.indexOf('--json');
  if (jsonAt >= 0) return JSON.parse(args[jsonAt + 1] ?? '{}') as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const a of args) {
    const eq = a.indexOf('=');
    if (eq <= 0) throw new CliError(`expected key=value, got "${a}"`);
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

export async function run(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const cfg = readConfig();
  switch (cmd) {
    case 'login': {
      const url = rest[rest.indexOf('--url') + 1];
      const key = rest[rest.indexOf('--key') + 1];
      if (!rest.includes('--url') || !rest.includes('--key') || !url || !key) throw new CliError('usage: bianbu login --url URL --key API_KEY');
      const info = await invoke({ url, key }, findCall('userInfo') ?? findCall('health')!, {});
      writeConfig({ url, key });
      process.stdout.write(`signed in to ${url}${info && typeof info === 'object' && 'username' in info ? ` as ${String(info.username)}` : ''}\n`);
      return 0;
    }
    case 'calls':
      for (const c of contract) process.stdout.write(`${c.name.padEnd(28)} ${c.method.padEnd(5)} ${c.path}  ${c.summary}\n`);
      return 0;
    case 'call': {
      const [name, ...args] = rest;
      const call = name ? findCall(name) : undefined;
      if (!call) throw new CliError(`unknown call "${name ?? ''}" (see: bianbu calls)`);
      const data = await invoke(cfg, call, parsePairs(args));
      process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
      return 0;
    }
    case 'use-apply': {
      if (!rest[0]) throw new CliError('usage: bianbu use-apply APPLY_ID');
      writeConfig({ ...cfg, applyId: rest[0] });
      return 0;
    }
    default:
      process.stdout.write(`${USAGE}\n`);
      return cmd && cmd !== 'help' && cmd !== '--help' ? 2 : 0;
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bianbu: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
