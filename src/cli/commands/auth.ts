// Sign-in commands: login with an API key (CI, scripts), logout, whoami, and named profiles.
import fs from 'node:fs';
import type { Command } from 'commander';
import { userCalls } from '#shared/user.ts';
import { invoke } from '../client.ts';
import { readConfigFile, removeProfile, saveProfile, writeConfigFile } from '../config.ts';
import { ctxOf } from '../context.ts';
import { notFound, usage } from '../errors.ts';
import { printJson, printTable } from '../output.ts';

const userInfoCall = userCalls.find((c) => c.name === 'userInfo')!;
const logoutCall = userCalls.find((c) => c.name === 'userLogout')!;

export function registerAuth(program: Command): void {
  program
    .command('login')
    .description('sign in to a service with an API key (Settings → API key) and save it as a profile')
    .option(
      '--url <url>',
      'the service, e.g. https://cloud.example.com (default: the profile’s, or BIANBU_URL)',
    )
    .option(
      '--key <key>',
      'the API key (prefer --with-key: a key on the command line lands in shell history)',
    )
    .option('--with-key', 'read the API key from standard input')
    .addHelpText(
      'after',
      `
Examples:
  bianbu login --url https://cloud.example.com --with-key < key.txt
  echo "$BIANBU_KEY" | bianbu login --url http://localhost:8080 --with-key --profile lab
  bianbu login --url http://localhost:8080 --key bbk_...

The profile (default: "default", or --profile NAME) is saved in $XDG_CONFIG_HOME/bianbu/cli.json
(mode 0600) and becomes the current one.
JSON: {"profile": string, "url": string, "username": string}`,
    )
    .action(async (opts: { url?: string; key?: string; withKey?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      let key = opts.key;
      if (opts.withKey) key = fs.readFileSync(0, 'utf8').trim();
      if (!key) throw usage('give the key: --with-key (from stdin) or --key KEY');
      const url = opts.url || ctx.cfg.url;
      const me = await invoke({ profile: ctx.cfg.profile, url, key }, userInfoCall, {});
      saveProfile(ctx.cfg.profile, { url, key, username: me.username, kind: 'apikey' });
      if (ctx.json) printJson({ profile: ctx.cfg.profile, url, username: me.username });
      else if (!ctx.quiet)
        process.stdout.write(`signed in to ${url} as ${me.username} (profile ${ctx.cfg.profile})\n`);
    });

  program
    .command('logout')
    .description('forget the profile’s credential (a browser sign-in’s token is also revoked)')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu logout\n  bianbu logout --profile lab\n\nJSON: {"profile": string, "removed": boolean}',
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const saved = readConfigFile().profiles[ctx.cfg.profile];
      if (saved?.kind === 'token' && saved.key) await ctx.call(logoutCall, {}).catch(() => {});
      const removed = removeProfile(ctx.cfg.profile);
      if (ctx.json) printJson({ profile: ctx.cfg.profile, removed });
      else if (!ctx.quiet)
        process.stdout.write(removed ? `signed out of ${ctx.cfg.profile}\n` : 'not signed in\n');
    });

  program
    .command('whoami')
    .description('the signed-in user of the current profile')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu whoami\n  bianbu whoami --json\n\nJSON: the userInfo answer of the contract (username, id, perms, ...)',
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const me = await ctx.call(userInfoCall, {});
      if (ctx.json) printJson(me);
      else process.stdout.write(`${me.username}\n`);
    });

  const profiles = program
    .command('profiles')
    .description('list saved profiles (services and accounts); `profiles use NAME` switches')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu profiles\n  bianbu profiles use lab\n  bianbu profiles remove old\n\nJSON: {"current": string, "profiles": [{"name", "url", "username", "current"}]}',
    )
    .action((_opts: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const file = readConfigFile();
      const rows = Object.entries(file.profiles).map(([name, p]) => ({
        name,
        url: p.url,
        username: p.username ?? null,
        current: name === file.current,
      }));
      if (ctx.json) printJson({ current: file.current, profiles: rows });
      else if (ctx.quiet) for (const r of rows) process.stdout.write(`${r.name}\n`);
      else
        printTable(
          ['', 'name', 'url', 'user'],
          rows.map((r) => [r.current ? '*' : '', r.name, r.url, r.username]),
        );
    });
  profiles
    .command('use <name>')
    .description('make a saved profile the current one')
    .action((name: string) => {
      const file = readConfigFile();
      if (!file.profiles[name]) throw notFound(`no profile named "${name}"`, 'cli.profile_unknown');
      file.current = name;
      writeConfigFile(file);
    });
  profiles
    .command('remove <name>')
    .description('forget a saved profile')
    .action((name: string) => {
      if (!removeProfile(name)) throw notFound(`no profile named "${name}"`, 'cli.profile_unknown');
    });
}
