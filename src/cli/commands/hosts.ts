// Board hosts (administrators; docs/board-hosts.md): create one (its credential is printed once),
// list them with their boards and health, revoke one (its links end at once, its boards go offline).
import type { Command } from 'commander';
import { hostCalls, hostName } from '#shared/board-hosts.ts';
import { ctxOf } from '../context.ts';
import { usage } from '../errors.ts';
import { printJson, printTable } from '../output.ts';

const call = <N extends (typeof hostCalls)[number]['name']>(name: N) =>
  hostCalls.find((c) => c.name === name) as Extract<(typeof hostCalls)[number], { name: N }>;

function checkName(name: string): string {
  const r = hostName.safeParse(name);
  if (!r.success) throw usage(`host name "${name}": ${r.error.issues[0]?.message}`);
  return r.data;
}

export function registerHosts(program: Command): void {
  const hosts = program.command('hosts').description('board hosts: add, ls, revoke (administrators)');

  hosts
    .command('add <name>')
    .description('create a board host and print its credential (shown this once)')
    .addHelpText(
      'after',
      `
Run the host with it:
  BIANBU_SERVICE_URL=https://console.example.com BIANBU_HOST_TOKEN=<credential> npm run board-host

JSON: {"host": {...}, "token"}`,
    )
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(call('adminHostsAdd'), { name: checkName(name) });
      if (ctx.json) return printJson(r);
      process.stdout.write(`${r.token}\n`);
      if (!ctx.quiet)
        process.stderr.write(
          `board host ${r.host.name} created; keep this credential secret, it is not shown again:\n  BIANBU_HOST_TOKEN=${r.token} npm run board-host\n`,
        );
    });

  hosts
    .command('ls')
    .description('board hosts, their health, links and boards')
    .addHelpText('after', '\nJSON: {"items": [{"name", "health", "links", "lastSeenAt", "boards": [...]}]}')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(call('adminHostsList'), {});
      if (ctx.json) return printJson(r);
      printTable(
        ['name', 'health', 'links', 'last seen', 'boards'],
        r.items.map((h) => [
          h.name,
          h.health,
          String(h.links),
          h.lastSeenAt ?? '-',
          h.boards.map((b) => `${b.deviceId} (${b.state})`).join(', ') || '-',
        ]),
      );
    });

  hosts
    .command('revoke <name>')
    .description('revoke a board host: its links end at once and its boards go offline')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(call('adminHostsRevoke'), { name: checkName(name) });
      if (ctx.json) return printJson(r);
      if (!ctx.quiet) process.stdout.write(`board host ${r.name} revoked\n`);
    });
}
