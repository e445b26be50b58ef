// Sign-in commands: login through the browser (people) or with an API key (CI, scripts), logout
// (revoking a browser sign-in's token), whoami, and named profiles.
import fs from 'node:fs';
import type { Command } from 'commander';
import { userCalls } from '#shared/user.ts';
import { browserLogin } from '../browser-login.ts';
import { invoke } from '../client.ts';
import { type Profile, readConfigFile, removeProfile, saveProfile, writeConfigFile } from '../config.ts';
import { ctxOf } from '../context.ts';
import { CliError, notFound, usage } from '../errors.ts';
import { note, printJson, printTable } from '../output.ts';

const userInfoCall = userCalls.find((c) => c.name === 'userInfo')!;
const logoutCall = userCalls.find((c) => c.name === 'userLogout')!;

/** Revokes a saved browser sign-in's token with that token itself (never BIANBU_API_KEY's credential). */
function revokeToken(p: Profile): Promise<unknown> {
  return invoke({ profile: '', url: p.url, key: p.key }, logoutCall, {});
}

export function registerAuth(program: Command): void {
  program
    .command('login')
    .description('sign in to a service through the browser (or with an API key) and save it as a profile')
    .option(
      '--url <url>',
      'the service, e.g. https://cloud.example.com (default: the profile’s, or BIANBU_URL)',
    )
    .option(
      '--key <key>',
      'sign in with this API key instead (prefer --with-key: a key on the command line lands in shell history)',
    )
    .option('--with-key', 'read an API key from standard input instead of signing in through the browser')
    .option('--no-browser', 'do not open a browser: print the sign-in URL only')
    .option('--timeout <seconds>', 'how long to wait for the browser sign-in', '300')
    .addHelpText(
      'after',
      `
Examples:
  bianbu login --url https://cloud.example.com
  bianbu login --url https://cloud.example.com --no-browser      # open the printed URL yourself
  bianbu login --url https://cloud.example.com --with-key < key.txt
  echo "$BIANBU_KEY" | bianbu login --url http://localhost:8080 --with-key --profile lab

Without a key, bianbu opens the service's sign-in page in the browser (authorization code with PKCE,
returning to a one-time listener on http://127.0.0.1:<port>/callback) and keeps the access token the
service issues for it: it expires like a console sign-in, and \`bianbu logout\` revokes it. The
browser must run on this machine (over SSH: forward the printed port, or use an API key).

The profile (default: "default", or --profile NAME) is saved in $XDG_CONFIG_HOME/bianbu/cli.json
(mode 0600) and becomes the current one.
JSON: {"profile": string, "url": string, "username": string, "kind": "token"|"apikey", "expiresAt"?: string}
Exit: 3 when the sign-in failed, was refused or timed out (cli.login_timeout), 130 on Ctrl+C.`,
    )
    .action(
      async (
        opts: { url?: string; key?: string; withKey?: boolean; browser: boolean; timeout: string },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        let key = opts.key;
        if (opts.withKey) key = fs.readFileSync(0, 'utf8').trim();
        if ((opts.withKey || opts.key !== undefined) && !key)
          throw usage('the API key is empty: give it with --with-key (from stdin) or --key KEY');
        const url = (opts.url || ctx.cfg.url).replace(/\/+$/, '');
        try {
          new URL(url);
        } catch {
          throw usage(`--url: not a URL: ${url}`);
        }
        const before = readConfigFile().profiles[ctx.cfg.profile];
        let profile: Profile;
        let expiresAt: string | undefined;
        if (key) {
          const me = await invoke({ profile: ctx.cfg.profile, url, key }, userInfoCall, {});
          profile = { url, key, username: me.username, kind: 'apikey' };
        } else {
          const timeoutS = Number(opts.timeout);
          if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw usage('--timeout: a number of seconds');
          const token = await browserLogin({
            url,
            openBrowser: opts.browser,
            timeoutMs: timeoutS * 1000,
            // The URL is the way in: printed even with --quiet.
            say: (text) => process.stderr.write(`${text}\n`),
          });
          profile = { url, key: token.accessToken, username: token.username, kind: 'token' };
          expiresAt = token.expiresAt;
        }
        saveProfile(ctx.cfg.profile, profile);
        // The token this profile held before is of no more use to anyone: revoke it.
        if (before?.kind === 'token' && before.key && before.key !== profile.key)
          await revokeToken(before).catch(() => {});
        if (ctx.json)
          printJson({
            profile: ctx.cfg.profile,
            url,
            username: profile.username,
            kind: profile.kind,
            ...(expiresAt ? { expiresAt } : {}),
          });
        else if (!ctx.quiet)
          process.stdout.write(`signed in to ${url} as ${profile.username} (profile ${ctx.cfg.profile})\n`);
      },
    );

  program
    .command('logout')
    .description('forget the profile’s credential (a browser sign-in’s token is also revoked)')
    .addHelpText(
      'after',
      `
Examples:
  bianbu logout
  bianbu logout --profile lab

A browser sign-in's token is revoked at the service first; should that fail (the service unreachable),
the profile is forgotten all the same and the token lives until it expires.
JSON: {"profile": string, "removed": boolean, "revoked"?: boolean (browser sign-ins only)}`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const saved = readConfigFile().profiles[ctx.cfg.profile];
      let revoked: boolean | undefined;
      if (saved?.kind === 'token' && saved.key) {
        try {
          await revokeToken(saved);
          revoked = true;
        } catch (e) {
          // Refused as a credential: it was revoked or expired already, nothing is left to revoke.
          revoked = e instanceof CliError && e.cls === 'auth';
          if (!revoked)
            note(ctx, `could not revoke the token at ${saved.url}: ${e instanceof Error ? e.message : e}`);
        }
      }
      const removed = removeProfile(ctx.cfg.profile);
      if (ctx.json) printJson({ profile: ctx.cfg.profile, removed, ...(revoked === undefined ? {} : { revoked }) });
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
