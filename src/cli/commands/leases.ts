// The device lifecycle: the catalogue (boards), leases (request, renew, rename, unlock), applies.
import { type Command, Option } from 'commander';
import { BOARD_STATES, boardCalls } from '#shared/boards.ts';
import { LEASE_DURATIONS } from '#shared/constants.ts';
import type { LeaseDto } from '#shared/leases.ts';
import {
  type BoardResult,
  callNamed,
  calls,
  ctxOf,
  exitOfResults,
  fetchLeases,
  mapLimit,
  resolveHeld,
  selectHeld,
  toBoardResult,
} from '../context.ts';
import { CliError, usage } from '../errors.ts';
import { formatDuration, note, printJson, printLines, printTable } from '../output.ts';

const filterDevice = boardCalls.find((c) => c.name === 'filterDevice')!;
const DURATION_KEYS = LEASE_DURATIONS.map((d) => d.key);

export function durationMs(key: string): number {
  const d = LEASE_DURATIONS.find((x) => x.key === key);
  if (!d) throw usage(`--duration must be one of ${DURATION_KEYS.join(', ')}`, 'lease.duration_not_offered');
  return d.ms;
}

/** `k=v` pairs into attribute filters: numbers and booleans typed, `a,b` a list, `min..max` a range. */
export function parseFilters(pairs: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw usage(`--filter expects key=value, got "${p}"`);
    const k = p.slice(0, eq);
    const v = p.slice(eq + 1);
    const scalar = (s: string) =>
      s === 'true' ? true : s === 'false' ? false : s !== '' && !Number.isNaN(Number(s)) ? Number(s) : s;
    const range = /^(-?[\d.]*)\.\.(-?[\d.]*)$/.exec(v);
    if (range && (range[1] || range[2]))
      out[k] = {
        ...(range[1] ? { min: Number(range[1]) } : {}),
        ...(range[2] ? { max: Number(range[2]) } : {}),
      };
    else if (v.includes(',')) out[k] = v.split(',').map(scalar);
    else out[k] = scalar(v);
  }
  return out;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function leaseRow(l: LeaseDto): (string | number | null)[] {
  return [
    l.serverName,
    l.boardName,
    l.deviceId,
    l.model,
    l.boardState,
    l.endsAt.slice(0, 16).replace('T', ' '),
    formatDuration(l.remainingMs),
    l.applyId ? 'open' : '-',
  ];
}
export const LEASE_HEAD = ['name', 'board', 'device', 'model', 'state', 'ends (UTC)', 'left', 'apply'];

function printResults(
  results: BoardResult[],
  json: boolean,
  quiet: boolean,
  okText: (r: BoardResult) => string,
): number {
  if (json) printJson({ results });
  else if (!quiet || results.some((r) => !r.ok))
    for (const r of results)
      (r.ok ? process.stdout : process.stderr).write(
        r.ok ? `${r.board}: ${okText(r)}\n` : `${r.board}: failed: ${r.error?.message} (${r.error?.key})\n`,
      );
  return exitOfResults(results);
}

const MANY_JSON = `JSON: {"results": [{"board": string, "deviceId": string, "ok": boolean, "data"?: <answer>,
        "error"?: {"key": string, "message": string, "exitCode": number}}]}
Exit: 0 when every board succeeded, 1 when some failed (a single board: its error's exit code).`;

export function registerLeases(program: Command): void {
  program
    .command('boards')
    .description('the board catalogue: every board in service, with filters')
    .addOption(new Option('--state <state>', 'only boards in this state').choices(BOARD_STATES))
    .option('--model <model>', 'only this model')
    .option(
      '-f, --filter <key=value>',
      'attribute filter (repeatable): cores=4, os=a,b (any of), memoryMb=2048.. (range)',
      collect,
      [],
    )
    .option('-k, --keyword <text>', 'name, model or attributes containing this')
    .option('--page <n>', 'page', '1')
    .option('--page-size <n>', 'boards per page (at most 100)', '100')
    .addHelpText(
      'after',
      `
Examples:
  bianbu boards
  bianbu boards --state idle --filter cores=4..
  bianbu boards --model k1 -q            # device ids only

JSON: {"total": number, "items": [{"deviceId", "name", "model", "attributes", "state", "driver"}]}`,
    )
    .action(
      async (
        o: {
          state?: string;
          model?: string;
          filter: string[];
          keyword?: string;
          page: string;
          pageSize: string;
        },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        const filters = parseFilters(o.filter);
        if (o.model) filters.model = o.model;
        const res = await ctx.call(filterDevice, {
          page: Number(o.page),
          pageSize: Number(o.pageSize),
          filters: filters as never,
          keyword: o.keyword,
          state: o.state as never,
        });
        if (ctx.json) return printJson(res);
        if (ctx.quiet) return printLines(res.items.map((b) => b.deviceId));
        printTable(
          ['device', 'name', 'model', 'state', 'driver', 'cores', 'memory', 'os'],
          res.items.map((b) => [
            b.deviceId,
            b.name,
            b.model,
            b.state,
            b.driver,
            b.attributes.cores as number,
            b.attributes.memoryMb ? `${b.attributes.memoryMb} MB` : null,
            b.attributes.os as string,
          ]),
        );
        if (res.total > res.items.length)
          note(ctx, `${res.items.length} of ${res.total} (--page, --page-size)`);
      },
    );

  program
    .command('leases')
    .alias('ls')
    .description('your held boards: name, board, state, end and time left')
    .addHelpText(
      'after',
      `
Examples:
  bianbu leases
  bianbu leases --json | jq -r '.items[].serverName'

JSON: {"now": string, "items": [{"leaseId", "deviceId", "serverName", "boardName", "model", "attributes",
       "boardState", "state", "durationKey", "startedAt", "endsAt", "remainingMs", "renewals", "applyId", ...}]}`,
    )
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const res = await ctx.call(calls.fetchRequestDevice, {});
      if (ctx.json) return printJson(res);
      if (ctx.quiet) return printLines(res.items.map((l) => l.serverName));
      if (!res.items.length) return note(ctx, 'no boards held (bianbu request NAME --duration 48h)');
      printTable(LEASE_HEAD, res.items.map(leaseRow));
    });

  program
    .command('request <name>')
    .description('lease a free board matching the filters, under a name of yours')
    .addOption(new Option('-d, --duration <d>', 'how long').choices(DURATION_KEYS).default('48h'))
    .option('--model <model>', 'a board of this model')
    .option('-f, --filter <key=value>', 'attribute filter (repeatable), as for `bianbu boards`', collect, [])
    .option('--wait', 'when none is free, wait in line for one (the queue) until granted')
    .addHelpText(
      'after',
      `
Examples:
  bianbu request ci-1 --duration 48h
  bianbu request big --duration 7d --filter cores=8.. --filter memoryMb=16384..
  bianbu request nightly --duration 1m --model k1 --wait

JSON: the lease: {"leaseId", "deviceId", "serverName", "boardName", "model", "endsAt", "remainingMs", ...}
Exit: 5 (conflict) with lease.none_free when no matching board is free, 4 with lease.no_match when none exists.`,
    )
    .action(
      async (
        name: string,
        o: { duration: string; model?: string; filter: string[]; wait?: boolean },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        const filters = parseFilters(o.filter);
        if (o.model) filters.model = o.model;
        const requestDate = new Date(Date.now() + durationMs(o.duration)).toISOString();
        let lease: LeaseDto;
        try {
          lease = await ctx.call(calls.requestDevice, {
            requestDate,
            filterReq: filters as never,
            serverName: name,
          });
        } catch (e) {
          if (!(o.wait && e instanceof CliError && e.key === 'lease.none_free')) throw e;
          lease = await waitInLine(ctx, name, o.duration, filters);
        }
        if (ctx.json) printJson(lease);
        else if (ctx.quiet) process.stdout.write(`${lease.serverName}\n`);
        else printTable(LEASE_HEAD, [leaseRow(lease)]);
      },
    );

  program
    .command('renew [boards...]')
    .description('move the end of leases later: now plus the duration (boards by name, id or glob)')
    .addOption(
      new Option('-d, --duration <d>', 'new end: now plus this').choices(DURATION_KEYS).default('48h'),
    )
    .option('--all', 'every board you hold')
    .option('--model <model>', 'every held board of this model')
    .option('--group <group>', 'every held board you put into this share group')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu renew ci-1 --duration 7d\n  bianbu renew 'ci-*' --duration 48h\n  bianbu renew --group lab --duration 7d\n\n${MANY_JSON}`,
    )
    .action(
      async (
        refs: string[],
        o: { duration: string; all?: boolean; model?: string; group?: string },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        const leases = await selectHeld(ctx, refs, { all: o.all, model: o.model, group: o.group });
        const renewalDate = new Date(Date.now() + durationMs(o.duration)).toISOString();
        const settled = await mapLimit(leases, 4, (l) =>
          ctx.call(calls.renewalDevice, { serverName: l.serverName, deviceId: l.deviceId, renewalDate }),
        );
        const results = leases.map((l, i) => toBoardResult(l, settled[i]));
        process.exitCode = printResults(
          results,
          ctx.json,
          ctx.quiet,
          (r) => `ends ${(r.data as LeaseDto).endsAt}`,
        );
      },
    );

  program
    .command('rename <board> <new-name>')
    .description('rename a held board')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu rename ci-1 ci-old\n\nJSON: the lease, as `bianbu request` prints it',
    )
    .action(async (ref: string, newName: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const l = await resolveHeld(ctx, ref);
      const lease = await ctx.call(calls.renameRequestDevice, {
        deviceId: l.deviceId,
        oldServerName: l.serverName,
        newServerName: newName,
      });
      if (ctx.json) printJson(lease);
      else if (!ctx.quiet) process.stdout.write(`${l.serverName} → ${lease.serverName}\n`);
    });

  program
    .command('unlock [boards...]')
    .alias('release')
    .description('release held boards: their shells close, they are reset to default and return to the pool')
    .option('--all', 'every board you hold')
    .option('-y, --yes', 'do not ask (required when not on a terminal)')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu unlock ci-1 --yes\n  bianbu unlock --all --yes\n\n${MANY_JSON}`,
    )
    .action(async (refs: string[], o: { all?: boolean; yes?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const leases = await selectHeld(ctx, refs, { all: o.all });
      await confirm(
        o.yes,
        `Release ${leases.map((l) => l.serverName).join(', ')}? Everything on them is lost.`,
      );
      const settled = await mapLimit(leases, 4, (l) =>
        ctx.call(calls.unlockRequestDevice, { deviceId: l.deviceId, serverName: l.serverName }),
      );
      const results = leases.map((l, i) => toBoardResult(l, settled[i]));
      process.exitCode = printResults(results, ctx.json, ctx.quiet, () => 'released');
    });

  program
    .command('apply <board>')
    .description('open a working session (apply) on a held board; answers its applyId (the open one if any)')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu apply ci-1\n\nJSON: {"applyId": string, "deviceDto": {...the board, "serverName", "leaseId", "endsAt"}}',
    )
    .action(async (ref: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const l = await resolveHeld(ctx, ref);
      const a = await ctx.call(calls.applyDevice, { deviceId: l.deviceId });
      if (ctx.json) printJson(a);
      else process.stdout.write(`${a.applyId}\n`);
    });

  program
    .command('unapply <board-or-apply-id>')
    .description('end the working session on a board (its shells close; the lease stays)')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu unapply ci-1\n\nJSON: {"applyId": string, "closedAt": string}',
    )
    .action(async (ref: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const leases = await fetchLeases(ctx);
      const l = leases.find((x) => x.serverName === ref || x.deviceId === ref || x.boardName === ref);
      const applyId = l ? l.applyId : ref;
      if (!applyId) throw new CliError(`${ref} has no open apply`, 'apply.not_found', 'notfound');
      const res = await ctx.call(calls.unapplyDevice, { applyId }, { applyId });
      if (ctx.json) printJson(res);
      else if (!ctx.quiet) process.stdout.write(`closed ${res.applyId}\n`);
    });
}

async function confirm(yes: boolean | undefined, question: string): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY || !process.stderr.isTTY)
    throw usage('not on a terminal: pass --yes to confirm', 'cli.confirm_required');
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const a = await rl.question(`${question} [y/N] `);
  rl.close();
  if (!/^y(es)?$/i.test(a.trim())) throw new CliError('cancelled', 'cli.cancelled', 'interrupt');
}

/** `request --wait`: joins the queue and polls it until the entry is granted, expired or cancelled. */
async function waitInLine(
  ctx: ReturnType<typeof ctxOf>,
  name: string,
  durationKey: string,
  filters: Record<string, unknown>,
): Promise<LeaseDto> {
  const join = callNamed('joinQueue');
  const fetchQ = callNamed('fetchQueue');
  if (!join || !fetchQ) throw new CliError('this service has no queue', 'capability.unsupported', 'conflict');
  type Entry = { entryId: string; state: string; position?: number | null; lease?: LeaseDto | null };
  const entry = (await ctx.call(join, { filterReq: filters, durationKey, serverName: name })) as Entry;
  if (entry.state === 'granted' && entry.lease) return entry.lease;
  note(ctx, `no board free: waiting in line (position ${entry.position ?? '?'}); Ctrl+C leaves the line`);
  const cancel = callNamed('cancelQueue');
  const onInt = () => {
    void (cancel ? ctx.call(cancel, { entryId: entry.entryId }) : Promise.resolve()).finally(() =>
      process.exit(130),
    );
  };
  process.once('SIGINT', onInt);
  try {
    for (;;) {
      await new Promise((r) => setTimeout(r, 2000));
      const q = (await ctx.call(fetchQ, {})) as { items?: Entry[]; recent?: Entry[] };
      const all = [...(q.items ?? []), ...(q.recent ?? [])];
      const e = all.find((x) => x.entryId === entry.entryId);
      if (!e) continue;
      if (e.state === 'granted') {
        const leases = await fetchLeases(ctx);
        const l = leases.find((x) => x.serverName === name || x.serverName.startsWith(`${name}-`));
        if (l) return l;
      }
      if (e.state === 'expired' || e.state === 'cancelled')
        throw new CliError(`the queue entry ${e.state}`, `queue.${e.state}`, 'conflict');
    }
  } finally {
    process.off('SIGINT', onInt);
  }
}
