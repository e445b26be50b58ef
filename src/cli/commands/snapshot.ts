// Snapshots of a held board's whole disk (riscv64 boards; docs/riscv-snapshots.md): save, list,
// restore (the board reboots into it), remove, and save one as a private image.
import type { Command } from 'commander';
import { snapshotCalls, snapshotName } from '#shared/snapshots.ts';
import { applyFor, ctxOf, resolveHeld } from '../context.ts';
import { usage } from '../errors.ts';
import { formatBytes, printJson, printTable } from '../output.ts';

const call = <N extends (typeof snapshotCalls)[number]['name']>(name: N) =>
  snapshotCalls.find((c) => c.name === name) as Extract<(typeof snapshotCalls)[number], { name: N }>;

function checkName(name: string): string {
  const r = snapshotName.safeParse(name);
  if (!r.success) throw usage(`snapshot name "${name}": ${r.error.issues[0]?.message}`);
  return r.data;
}

export function registerSnapshot(program: Command): void {
  const snap = program
    .command('snapshot')
    .description("snapshots of a held board's whole disk: save, ls, restore, rm, image");

  snap
    .command('save <board> <name>')
    .description('save the board’s disk as a named snapshot (copy-on-write; the board keeps running)')
    .addHelpText(
      'after',
      `
Examples:
  bianbu snapshot save rv before-upgrade

JSON: {"name", "createdAt", "createdBy"}`,
    )
    .action(async (ref: string, name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const n = checkName(name);
      const l = await resolveHeld(ctx, ref);
      const applyId = await applyFor(ctx, l);
      const r = await ctx.call(call('saveSnapshot'), { applyId, name: n }, { applyId });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`${l.serverName}: saved ${r.name}\n`);
    });

  snap
    .command('ls <board>')
    .description('the board’s snapshots, oldest first, and what they cost your quota')
    .addHelpText(
      'after',
      `
JSON: {"deviceId", "items": [{"name", "createdAt", "createdBy"}], "usage": {"chargedBytes", "usedBytes", "limitBytes"}}`,
    )
    .action(async (ref: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const l = await resolveHeld(ctx, ref);
      const applyId = await applyFor(ctx, l);
      const r = await ctx.call(call('listSnapshots'), { applyId }, { applyId });
      if (ctx.json) return printJson(r);
      printTable(
        ['name', 'saved'],
        r.items.map((s) => [s.name, s.createdAt]),
      );
      if (!ctx.quiet)
        process.stdout.write(
          `snapshots cost ${formatBytes(r.usage.chargedBytes)}; quota ${formatBytes(r.usage.usedBytes)} of ${formatBytes(r.usage.limitBytes)} used\n`,
        );
    });

  snap
    .command('restore <board> <name>')
    .description('put the board’s disk back to a snapshot: the board reboots into it (its shells close)')
    .addHelpText(
      'after',
      `
JSON: {"deviceId", "name"}`,
    )
    .action(async (ref: string, name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const n = checkName(name);
      const l = await resolveHeld(ctx, ref);
      const applyId = await applyFor(ctx, l);
      const r = await ctx.call(call('restoreSnapshot'), { applyId, name: n }, { applyId });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`${l.serverName}: restored ${r.name}, booting\n`);
    });

  snap
    .command('rm <board> <name>')
    .description('delete a snapshot of the board')
    .action(async (ref: string, name: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const n = checkName(name);
      const l = await resolveHeld(ctx, ref);
      const applyId = await applyFor(ctx, l);
      const r = await ctx.call(call('deleteSnapshot'), { applyId, name: n }, { applyId });
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`${l.serverName}: deleted ${r.name}\n`);
    });

  snap
    .command('image <board> <name> <tag>')
    .description('save a snapshot as your private image (img.zst), flashable onto riscv64 boards')
    .option('--image-name <text>', 'the image’s name in the catalogue')
    .addHelpText(
      'after',
      `
Examples:
  bianbu snapshot image rv before-upgrade my-base
  bianbu flash my-base rv2

JSON: {"tag", "size", "sha256"}`,
    )
    .action(async (ref: string, name: string, tag: string, o: { imageName?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const n = checkName(name);
      const l = await resolveHeld(ctx, ref);
      const applyId = await applyFor(ctx, l);
      const r = await ctx.call(
        call('snapshotImage'),
        { applyId, name: n, tag, imageName: o.imageName },
        { applyId },
      );
      if (ctx.json) printJson(r);
      else if (!ctx.quiet) process.stdout.write(`${r.tag}: ${formatBytes(r.size)}, sha256 ${r.sha256}\n`);
    });
}
