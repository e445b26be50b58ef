// `bianbu admin`: the administration calls of src/shared/user.ts — users (ls, add, deactivate,
// activate, passwd), memberships (an organisation and a role per user), organisations, roles and the
// audit log — and, in admin-lab.ts, the boards of the lab and public images. The service decides who may
// do what (a global administrator everything, an organisation admin their organisation's members, an
// auditor reads); a refusal exits 3, as any missing permission does.
import type { Command } from 'commander';
import { userCalls } from '#shared/user.ts';
import { type Ctx, ctxOf } from '../context.ts';
import { notFound, usage } from '../errors.ts';
import { note, printJson, printLines, printTable } from '../output.ts';
import { registerAdminLab } from './admin-lab.ts';

const C = Object.fromEntries(userCalls.map((c) => [c.name, c])) as {
  [K in (typeof userCalls)[number]['name']]: Extract<(typeof userCalls)[number], { name: K }>;
};

const USER_JSON = `{"id", "username", "name", "email", "phone", "isActive", "currentOrgId", "hasPassword", "createdAt",
       "memberships": [{"orgId", "roleId"}]}`;

/** A user by username or id, among those the caller may manage. */
async function findUser(ctx: Ctx, ref: string) {
  const want = ref.trim();
  const match = (items: { id: string; username: string }[]) =>
    items.find((x) => x.username === want) ?? items.find((x) => x.id === want);
  const searched = await ctx.call(C.adminUserList, { search: want, page: 1, pageSize: 200 });
  const hit = match(searched.items);
  if (hit) return searched.items.find((x) => x.id === hit.id)!;
  // The search looks at names, email and phone, not ids: an id is found by going through the pages.
  for (let page = 1, pages = 1; page <= pages; page++) {
    const all = await ctx.call(C.adminUserList, { page, pageSize: 200 });
    pages = Math.ceil(all.total / 200);
    const byId = all.items.find((x) => x.id === want);
    if (byId) return byId;
  }
  throw notFound(`no user "${ref}" that you may manage`, 'user.not_found');
}

/** The whole of stdin, without its last line break (a password piped in). */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw usage('--password-stdin: pipe the password in (echo "$PW" | bianbu ...)');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function memberships(u: { memberships: { orgId: string; roleId: string }[] }): string {
  return u.memberships.map((m) => `${m.orgId}:${m.roleId}`).join(',') || '-';
}

function collect(value: string, prev: string[] = []): string[] {
  return [
    ...prev,
    ...value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ];
}

export function registerAdmin(program: Command): void {
  const admin = program
    .command('admin')
    .description('administration: users, memberships, organisations, roles, the audit log, boards, images')
    .addHelpText(
      'after',
      `
Examples:
  bianbu admin orgs add "Lab Alpha" --id lab-alpha
  bianbu admin roles add "Lab auditor" --id lab-auditor --perm rbac.view_user,audit.view_log
  bianbu admin users add alice --org lab-alpha --role lab-auditor      # prints a random password once
  bianbu admin users passwd alice ; bianbu admin users deactivate alice
  bianbu admin audit --action adminUserCreate --since 2026-01-01T00:00:00Z
  bianbu admin boards ls ; bianbu admin boards maintenance rv-1 on --reason "new PSU"

What you may do is what the service allows your current organisation's role: global administrators
everything, organisation admins their organisation's members (exit 3 otherwise).`,
    );

  const users = admin.command('users').description('users: ls, add, deactivate, activate, passwd');
  users
    .command('ls')
    .description('users you may manage (organisation admins: their organisation’s members)')
    .option('--search <text>', 'in usernames, names, email and phone')
    .option('--org <id>', 'members of this organisation (global administrators)')
    .option('--page <n>', 'page', '1')
    .option('--page-size <n>', 'users per page (at most 200)', '50')
    .addHelpText('after', `\nJSON: {"total": number, "items": [${USER_JSON}]}\nQuiet: usernames.`)
    .action(async (o: { search?: string; org?: string; page: string; pageSize: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(C.adminUserList, {
        search: o.search,
        orgId: o.org,
        page: Number(o.page),
        pageSize: Number(o.pageSize),
      });
      if (ctx.json) return printJson(r);
      if (ctx.quiet) return printLines(r.items.map((u) => u.username));
      printTable(
        ['user', 'name', 'email', 'active', 'memberships', 'id'],
        r.items.map((u) => [u.username, u.name, u.email, u.isActive ? 'yes' : 'no', memberships(u), u.id]),
      );
      if (r.total > r.items.length) note(ctx, `${r.items.length} of ${r.total} (--page, --page-size)`);
    });

  users
    .command('add <username>')
    .description(
      'create a user in an organisation with a role; without a password one is made and printed once',
    )
    .option('--name <name>', 'display name')
    .option('--email <email>')
    .option('--phone <phone>')
    .option('--org <id>', 'organisation (default: yours, or Default for global administrators)')
    .option('--role <id>', 'role in it (default org_user)')
    .option('--password-stdin', 'read the password from stdin')
    .addHelpText(
      'after',
      `\nJSON: {"user": ${USER_JSON}, "password": string|null}  (the made password, shown only here)\nExit: 5 with user.username_taken.`,
    )
    .action(
      async (
        username: string,
        o: {
          name?: string;
          email?: string;
          phone?: string;
          org?: string;
          role?: string;
          passwordStdin?: boolean;
        },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        const password = o.passwordStdin ? await readStdin() : undefined;
        const r = await ctx.call(C.adminUserCreate, {
          username,
          name: o.name,
          email: o.email,
          phone: o.phone,
          password,
          orgId: o.org,
          roleId: o.role,
        });
        if (ctx.json) return printJson(r);
        if (ctx.quiet) return printLines([r.password ?? r.user.id]);
        process.stdout.write(`created ${r.user.username} (${memberships(r.user)})\n`);
        if (r.password) process.stdout.write(`password (shown once): ${r.password}\n`);
      },
    );

  for (const [name, active] of [
    ['deactivate', false],
    ['activate', true],
  ] as const) {
    users
      .command(`${name} <user>`)
      .description(
        active
          ? 'let a deactivated user sign in again'
          : 'deactivate a user (username or id): signed out everywhere, API key revoked, shells closed',
      )
      .addHelpText(
        'after',
        `\nJSON: the user: ${USER_JSON}\nExit: 4 when there is no such user you may manage.`,
      )
      .action(async (ref: string, _o: unknown, cmd: Command) => {
        const ctx = ctxOf(cmd);
        const u = await findUser(ctx, ref);
        const r = active
          ? await ctx.call(C.adminUserUpdate, { id: u.id, isActive: true })
          : await ctx.call(C.adminUserDeactivate, { id: u.id });
        if (ctx.json) printJson(r);
        else if (!ctx.quiet) process.stdout.write(`${active ? 'activated' : 'deactivated'} ${r.username}\n`);
      });
  }

  users
    .command('passwd <user>')
    .description('reset a user’s password (their sessions signed in with the old one end)')
    .option('--password-stdin', 'read the new password from stdin; without it one is made and printed once')
    .addHelpText('after', `\nJSON: {"user": ${USER_JSON}, "password": string|null}`)
    .action(async (ref: string, o: { passwordStdin?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const u = await findUser(ctx, ref);
      const made = o.passwordStdin ? null : randomPassword();
      const password = made ?? (await readStdin());
      const r = await ctx.call(C.adminUserUpdate, { id: u.id, password });
      if (ctx.json) return printJson({ user: r, password: made });
      if (ctx.quiet) return made ? printLines([made]) : undefined;
      process.stdout.write(`reset the password of ${r.username}\n`);
      if (made) process.stdout.write(`password (shown once): ${made}\n`);
    });

  const members = admin
    .command('members')
    .description('memberships: which organisations a user is in, with which role');
  members
    .command('ls')
    .description('memberships, by organisation and/or user')
    .option('--org <id>')
    .option('--user <user>', 'username or id')
    .addHelpText('after', '\nJSON: [{"userId", "username", "orgId", "roleId"}]')
    .action(async (o: { org?: string; user?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const userId = o.user ? (await findUser(ctx, o.user)).id : undefined;
      const r = await ctx.call(C.adminMembershipList, { orgId: o.org, userId });
      if (ctx.json) return printJson(r);
      if (ctx.quiet) return printLines(r.map((m) => `${m.username} ${m.orgId} ${m.roleId}`));
      printTable(
        ['user', 'org', 'role'],
        r.map((m) => [m.username, m.orgId, m.roleId]),
      );
    });
  members
    .command('set <user> <org> <role>')
    .description('put a user in an organisation with a role, or change their role there')
    .addHelpText('after', '\nJSON: {"userId", "username", "orgId", "roleId"}')
    .action(async (ref: string, orgId: string, roleId: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const u = await findUser(ctx, ref);
      const r = await ctx.call(C.adminMembershipSet, { userId: u.id, orgId, roleId });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`${r.username}: ${r.orgId} as ${r.roleId}\n`);
    });
  members
    .command('rm <user> <org>')
    .description('take a user out of an organisation')
    .addHelpText('after', '\nJSON: {"userId", "orgId", "removed": true}')
    .action(async (ref: string, orgId: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const u = await findUser(ctx, ref);
      await ctx.call(C.adminMembershipRemove, { userId: u.id, orgId });
      if (ctx.json) printJson({ userId: u.id, orgId, removed: true });
      else if (!ctx.quiet) process.stdout.write(`${u.username} left ${orgId}\n`);
    });

  const orgs = admin.command('orgs').description('organisations: ls, add, rename, rm');
  orgs
    .command('ls')
    .description('organisations (an organisation admin: their own)')
    .addHelpText('after', '\nJSON: [{"id", "name", "type", "builtin", "members"}]\nQuiet: ids.')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(C.adminOrgList, {});
      if (ctx.json) return printJson(r);
      if (ctx.quiet) return printLines(r.map((o) => o.id));
      printTable(
        ['id', 'name', 'type', 'members', 'built-in'],
        r.map((o) => [o.id, o.name, o.type, o.members, o.builtin ? 'yes' : '']),
      );
    });
  orgs
    .command('add <name>')
    .description('create an organisation (global administrators)')
    .option('--id <id>', '2–64 letters, digits, _ or -; default: made from the name')
    .addHelpText('after', '\nJSON: {"id", "name", "type", "builtin", "members"}\nExit: 5 with org.exists.')
    .action(async (name: string, o: { id?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(C.adminOrgCreate, { name, id: o.id });
      if (ctx.json) printJson(r);
      else if (ctx.quiet) printLines([r.id]);
      else process.stdout.write(`created ${r.id} (${r.name})\n`);
    });
  orgs
    .command('rename <id> <name>')
    .description('rename an organisation')
    .addHelpText('after', '\nJSON: {"id", "name", "type", "builtin", "members"}')
    .action(async (id: string, name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(C.adminOrgUpdate, { id, name });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`${r.id} is now ${r.name}\n`);
    });
  orgs
    .command('rm <id>')
    .description('delete an organisation without members (built-in ones are kept)')
    .addHelpText(
      'after',
      '\nJSON: {"id", "deleted": true}\nExit: 5 with rbac.in_use or rbac.builtin_protected.',
    )
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      await ctx.call(C.adminOrgDelete, { id });
      if (ctx.json) printJson({ id, deleted: true });
      else if (!ctx.quiet) process.stdout.write(`deleted ${id}\n`);
    });

  const roles = admin.command('roles').description('roles and their permission entries: ls, add, set, rm');
  roles
    .command('ls')
    .description('roles and their permission entries')
    .addHelpText('after', '\nJSON: [{"id", "name", "perms": [string], "builtin"}]\nQuiet: ids.')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(C.adminRoleList, {});
      if (ctx.json) return printJson(r);
      if (ctx.quiet) return printLines(r.map((x) => x.id));
      printTable(
        ['id', 'name', 'built-in', 'perms'],
        r.map((x) => [x.id, x.name, x.builtin ? 'yes' : '', x.perms.join(',')]),
      );
    });
  roles
    .command('add <name>')
    .description('create a role (global administrators)')
    .option('--id <id>', '2–64 letters, digits, _ or -; default: made from the name')
    .option(
      '--perm <entries>',
      'permission entries app.action_resource (repeat or comma-separate)',
      collect,
      [],
    )
    .addHelpText('after', '\nJSON: {"id", "name", "perms", "builtin"}\nExit: 5 with role.exists.')
    .action(async (name: string, o: { id?: string; perm: string[] }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(C.adminRoleCreate, { name, id: o.id, perms: o.perm });
      if (ctx.json) printJson(r);
      else if (ctx.quiet) printLines([r.id]);
      else process.stdout.write(`created ${r.id}: ${r.perms.join(',') || 'no permissions'}\n`);
    });
  roles
    .command('set <id>')
    .description('rename a role or replace its permission entries')
    .option('--name <name>')
    .option('--perm <entries>', 'the new entries (repeat or comma-separate); --no-perms: none', collect)
    .option('--no-perms', 'take every entry away')
    .addHelpText('after', '\nJSON: {"id", "name", "perms", "builtin"}')
    .action(async (id: string, o: { name?: string; perm?: string[]; perms?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const perms = o.perms === false ? [] : o.perm;
      if (o.name === undefined && perms === undefined) throw usage('give --name, --perm or --no-perms');
      const r = await ctx.call(C.adminRoleUpdate, { id, name: o.name, perms });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`${r.id}: ${r.perms.join(',') || 'no permissions'}\n`);
    });
  roles
    .command('rm <id>')
    .description('delete a role no membership uses (built-in ones are kept)')
    .addHelpText(
      'after',
      '\nJSON: {"id", "deleted": true}\nExit: 5 with rbac.in_use or rbac.builtin_protected.',
    )
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      await ctx.call(C.adminRoleDelete, { id });
      if (ctx.json) printJson({ id, deleted: true });
      else if (!ctx.quiet) process.stdout.write(`deleted ${id}\n`);
    });

  admin
    .command('audit')
    .description('the audit log, newest first (organisation admins and auditors: their members’ entries)')
    .option('--user <user>', 'username or id')
    .option('--action <call>', 'a call name, e.g. adminUserCreate')
    .option('--result <result>', 'ok, failed or denied')
    .option('--since <time>', 'ISO 8601 with an offset, e.g. 2026-01-01T00:00:00Z')
    .option('--until <time>', 'ISO 8601 with an offset')
    .option('--page <n>', 'page', '1')
    .option('--limit <n>', 'entries per page (at most 200)', '50')
    .addHelpText(
      'after',
      `
Examples:
  bianbu admin audit --action adminUserDeactivate
  bianbu admin audit --user alice --result denied --json

JSON: {"total": number, "items": [{"id", "at", "userId", "username", "action", "target", "boardId", "result", "ip", "detail"}]}`,
    )
    .action(
      async (
        o: {
          user?: string;
          action?: string;
          result?: string;
          since?: string;
          until?: string;
          page: string;
          limit: string;
        },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        const userId = o.user
          ? (await findUser(ctx, o.user).catch(() => ({ id: o.user as string }))).id
          : undefined;
        const r = await ctx.call(C.adminAuditList, {
          userId,
          action: o.action,
          result: o.result as 'ok' | 'failed' | 'denied' | undefined,
          since: o.since,
          until: o.until,
          page: Number(o.page),
          pageSize: Number(o.limit),
        });
        if (ctx.json) return printJson(r);
        if (ctx.quiet) return printLines(r.items.map((a) => String(a.id)));
        printTable(
          ['at (UTC)', 'user', 'action', 'result', 'board', 'ip'],
          r.items.map((a) => [
            a.at.slice(0, 19).replace('T', ' '),
            a.username,
            a.action,
            a.result,
            a.boardId,
            a.ip,
          ]),
        );
        if (r.total > r.items.length) note(ctx, `${r.items.length} of ${r.total} (--page, --limit)`);
      },
    );

  registerAdminLab(admin);
}

/** 16 characters from the system's generator: letters, digits and a few marks. */
function randomPassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789-_!@#';
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => alphabet[b % alphabet.length]).join(
    '',
  );
}
