// `bianbu share`: share groups over the contract's share calls (src/shared/share.ts) — the groups one
// owns (create, delete, members in and out, boards shared and unshared) and the boards others share
// with one. A group's boards are set as a whole by the service (`setGroupDevices`): adding or removing
// one reads the group's boards first and sends the new list, so two owners' terminals racing on one
// group is last-writer-wins, as in the console.
import type { Command } from 'commander';
import { type ShareUser, shareCalls } from '#shared/share.ts';
import { type Ctx, ctxOf, findOwnedGroup, selectHeld } from '../context.ts';
import { notFound } from '../errors.ts';
import { formatDuration, note, printJson, printLines, printTable } from '../output.ts';

const C = Object.fromEntries(shareCalls.map((c) => [c.name, c])) as {
  [K in (typeof shareCalls)[number]['name']]: Extract<(typeof shareCalls)[number], { name: K }>;
};

const PHONE = /^\+?[0-9][0-9 -]{5,}$/;

function memberRows(users: ShareUser[]) {
  return users.map((u) => [
    u.username,
    u.userId,
    u.displayName,
    u.phone,
    u.addedAt.slice(0, 16).replace('T', ' '),
  ]);
}
const MEMBER_HEAD = ['user', 'id', 'name', 'phone', 'added (UTC)'];

const GROUP_JSON = `{"groupName", "createdAt", "grants": ["flash"|"renew"], "users": [{"userId", "username", "displayName", "phone", "addedAt"}],
       "devices": [{"deviceId", "serverName", "boardName", "model", "boardState", "endsAt", "remainingMs", "activeUsers"}]}`;

export function registerShare(program: Command): void {
  const share = program
    .command('share')
    .description('share groups: give people of your organisation the use of boards you hold')
    .addHelpText(
      'after',
      `
Examples:
  bianbu share create team
  bianbu share add-member team 13800001111          # by phone, or by user id
  bianbu share add-board team ci-1 'ci-*'
  bianbu share groups
  bianbu share boards                               # boards others share with you

Members use a shared board like their own (bianbu apply/exec/shell/cp with its device id) until the
owner removes them or the board, deletes the group, or the lease ends.`,
    );

  share
    .command('groups')
    .description('the groups you own (members, boards, grants); --member: the groups you are in')
    .option('--member', 'the groups others own that you are a member of')
    .addHelpText(
      'after',
      `
Examples:
  bianbu share groups
  bianbu share groups --member --json

JSON: {"now": string, "groups": [${GROUP_JSON}]}
  with --member: {"now", "groups": [{"groupName", "ownerId", "ownerName", "grants", "users": [{"userId", "username"}], "devices": [...]}]}
Quiet: group names.`,
    )
    .action(async (o: { member?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      if (o.member) {
        const res = await ctx.call(C.fetchGroupInfo, {});
        if (ctx.json) return printJson(res);
        if (ctx.quiet) return printLines(res.groups.map((g) => g.groupName));
        if (!res.groups.length) return note(ctx, 'you are in no share group');
        return printTable(
          ['group', 'owner', 'members', 'boards', 'grants'],
          res.groups.map((g) => [
            g.groupName,
            g.ownerName,
            g.users.map((u) => u.username).join(','),
            g.devices.map((d) => d.serverName).join(','),
            g.grants.join(',') || '-',
          ]),
        );
      }
      const res = await ctx.call(C.fetchShareInfo, {});
      if (ctx.json) return printJson(res);
      if (ctx.quiet) return printLines(res.groups.map((g) => g.groupName));
      if (!res.groups.length) return note(ctx, 'you own no share group (bianbu share create NAME)');
      printTable(
        ['group', 'members', 'boards', 'grants', 'created (UTC)'],
        res.groups.map((g) => [
          g.groupName,
          g.users.map((u) => u.username).join(',') || '-',
          g.devices.map((d) => d.serverName).join(',') || '-',
          g.grants.join(',') || '-',
          g.createdAt.slice(0, 16).replace('T', ' '),
        ]),
      );
    });

  share
    .command('create <group>')
    .description('create a share group')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu share create team\n\nJSON: the group: ${GROUP_JSON}\nExit: 5 with share.group_exists when you have one by that name.`,
    )
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const g = await ctx.call(C.addShareGroup, { groupName: name });
      if (ctx.json) printJson(g);
      else if (!ctx.quiet) process.stdout.write(`created ${g.groupName}\n`);
    });

  share
    .command('delete <group>')
    .alias('rm')
    .description('delete a share group: its members lose its boards at once')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu share delete team\n\nJSON: {"groupName": string, "revokedApplies": number}\nExit: 4 with share.group_not_found.`,
    )
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(C.rmShareGroup, { groupName: name });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet)
        process.stdout.write(
          `deleted ${r.groupName}${r.revokedApplies ? ` (${r.revokedApplies} sessions of members ended)` : ''}\n`,
        );
    });

  share
    .command('members <group>')
    .description('the members of one of your groups')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu share members team\n\nJSON: {"groupName": string, "users": [{"userId", "username", "displayName", "phone" (masked), "addedAt"}]}\nQuiet: user ids.`,
    )
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const r = await ctx.call(C.shareUserInfo, { groupName: name });
      if (ctx.json) return printJson(r);
      if (ctx.quiet) return printLines(r.users.map((u) => u.userId));
      if (!r.users.length) return note(ctx, `${r.groupName} has no members (bianbu share add-member)`);
      printTable(MEMBER_HEAD, memberRows(r.users));
    });

  share
    .command('add-member <group> <user>')
    .description('add a user of your organisation to a group, by user id or phone number')
    .option('--phone', 'USER is a phone number (the default when it looks like one)')
    .addHelpText(
      'after',
      `
Examples:
  bianbu share add-member team 13800001111
  bianbu share add-member team 0b7e9c1e-5f7d-4c35-9a55-3c1f9d1a2b3c   # their \`bianbu whoami --json\` id

JSON: the member: {"userId", "username", "displayName", "phone" (masked), "addedAt"}
Exit: 4 with share.user_not_found, 5 with share.user_exists.`,
    )
    .action(async (name: string, who: string, o: { phone?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const byPhone = o.phone || PHONE.test(who);
      const u = await ctx.call(
        C.addShareUser,
        byPhone ? { groupName: name, phone: who } : { groupName: name, userId: who },
      );
      if (ctx.json) printJson(u);
      else if (!ctx.quiet) process.stdout.write(`added ${u.username} to ${name.trim()}\n`);
    });

  share
    .command('remove-member <group> <user>')
    .description('remove a member (by username or user id): their sessions on its boards end at once')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu share remove-member team alice\n\nJSON: {"groupName": string, "userId": string, "revokedApplies": number}\nExit: 4 when they are not a member.`,
    )
    .action(async (name: string, who: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const { users } = await ctx.call(C.shareUserInfo, { groupName: name });
      const m = users.find((u) => u.userId === who) ?? users.find((u) => u.username === who);
      if (!m) throw notFound(`${who} is not a member of ${name}`, 'share.not_member');
      const r = await ctx.call(C.rmShareUser, { groupName: name, userId: m.userId });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`removed ${m.username} from ${r.groupName}\n`);
    });

  share
    .command('add-board <group> <boards...>')
    .description('share boards you hold (names, ids or globs) with a group')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu share add-board team ci-1\n  bianbu share add-board team 'ci-*'\n\nJSON: the group: ${GROUP_JSON}`,
    )
    .action(async (name: string, refs: string[], _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const g = await findOwnedGroup(ctx, name);
      const picked = await selectHeld(ctx, refs);
      const devices = [...new Set([...g.devices.map((d) => d.deviceId), ...picked.map((l) => l.deviceId)])];
      const res = await ctx.call(C.setGroupDevices, { groupName: g.groupName, devices });
      if (ctx.json) printJson(res);
      else if (!ctx.quiet)
        process.stdout.write(
          `${res.groupName}: ${res.devices.map((d) => d.serverName).join(', ') || 'no boards'}\n`,
        );
    });

  share
    .command('remove-board <group> <boards...>')
    .description('stop sharing boards with a group: members on them lose them at once')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu share remove-board team ci-1\n\nJSON: the group: ${GROUP_JSON}\nExit: 4 when the group does not hold such a board.`,
    )
    .action(async (name: string, refs: string[], _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const g = await findOwnedGroup(ctx, name);
      const gone = new Set<string>();
      for (const ref of refs) {
        const d =
          g.devices.find((x) => x.serverName === ref) ??
          g.devices.find((x) => x.deviceId === ref) ??
          g.devices.find((x) => x.boardName === ref);
        if (!d) throw notFound(`${g.groupName} holds no board named "${ref}"`, 'cli.board_not_in_group');
        gone.add(d.deviceId);
      }
      const devices = g.devices.map((d) => d.deviceId).filter((id) => !gone.has(id));
      const res = await ctx.call(C.setGroupDevices, { groupName: g.groupName, devices });
      if (ctx.json) printJson(res);
      else if (!ctx.quiet)
        process.stdout.write(
          `${res.groupName}: ${res.devices.map((d) => d.serverName).join(', ') || 'no boards'}\n`,
        );
    });

  share
    .command('boards')
    .description('boards others share with you: owner, time left, your open apply')
    .addHelpText(
      'after',
      `
Examples:
  bianbu share boards
  bianbu share boards --json | jq -r '.items[].deviceId'

JSON: {"now": string, "items": [{"deviceId", "serverName", "boardName", "model", "boardState", "endsAt", "remainingMs",
       "activeUsers", "ownerId", "ownerName", "groups": [string], "grants", "attributes", "applyId": string|null}]}
Quiet: device ids.`,
    )
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const res = await ctx.call(C.fetchShareDevice, {});
      if (ctx.json) return printJson(res);
      if (ctx.quiet) return printLines(res.items.map((d) => d.deviceId));
      if (!res.items.length) return note(ctx, 'no boards are shared with you');
      printTable(
        ['device', 'name', 'owner', 'board', 'model', 'state', 'left', 'groups', 'apply'],
        res.items.map((d) => [
          d.deviceId,
          d.serverName,
          d.ownerName,
          d.boardName,
          d.model,
          d.boardState,
          formatDuration(d.remainingMs),
          d.groups.join(','),
          d.applyId ? 'open' : '-',
        ]),
      );
    });
}
