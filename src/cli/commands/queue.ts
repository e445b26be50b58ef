// `bianbu queue`: the waiting line for boards (src/shared/queue.ts). `join` takes a place for a board
// matching a filter; with --wait it follows the place (polling `fetchQueue`, a line on stderr whenever
// the position changes) until the board is granted, the entry expires or is cancelled elsewhere.
// Ctrl+C while waiting leaves the line, as `request --wait` does.
import { type Command, Option } from 'commander';
import { LEASE_DURATIONS } from '#shared/constants.ts';
import type { LeaseDto } from '#shared/leases.ts';
import { type QueueEntryDto, queueCalls } from '#shared/queue.ts';
import { type Ctx, ctxOf, fetchLeases } from '../context.ts';
import { CliError, notFound } from '../errors.ts';
import { note, printJson, printLines, printTable } from '../output.ts';
import { LEASE_HEAD, leaseRow, parseFilters } from './leases.ts';

const C = Object.fromEntries(queueCalls.map((c) => [c.name, c])) as {
  [K in (typeof queueCalls)[number]['name']]: Extract<(typeof queueCalls)[number], { name: K }>;
};

const collect = (v: string, prev: string[] = []) => [...prev, v];
const when = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') : '-');

const ENTRY_JSON = `{"entryId", "state": "waiting"|"granted"|"cancelled"|"expired", "serverName", "durationKey", "filterReq",
       "joinedAt", "expiresAt", "position": number|null, "estimateAt": string|null, "endedAt", "deviceId", "leaseId"}`;

function entryRow(e: QueueEntryDto) {
  return [
    e.entryId,
    e.serverName,
    e.state,
    e.position ?? '-',
    when(e.estimateAt),
    when(e.state === 'waiting' ? e.expiresAt : e.endedAt),
    JSON.stringify(e.filterReq),
  ];
}
const ENTRY_HEAD = ['entry', 'name', 'state', 'pos', 'estimate (UTC)', 'expires/ended (UTC)', 'filter'];

/** Follows a waiting entry until it is granted (answers the lease) or ends otherwise (throws). */
async function follow(ctx: Ctx, entry: QueueEntryDto, intervalMs: number): Promise<LeaseDto> {
  let position = entry.position;
  note(
    ctx,
    `waiting in line for a board: position ${position ?? '?'}${entry.estimateAt ? `, expected around ${when(entry.estimateAt)} UTC` : ''} (Ctrl+C leaves the line)`,
  );
  let leaving = false;
  const onInt = () => {
    if (leaving) return;
    leaving = true;
    void ctx
      .call(C.cancelQueue, { entryId: entry.entryId })
      .catch(() => {})
      .finally(() => {
        process.stderr.write(`bianbu: left the line (entry ${entry.entryId}) (cli.cancelled)\n`);
        process.exit(130);
      });
  };
  process.on('SIGINT', onInt);
  try {
    for (;;) {
      await new Promise((r) => setTimeout(r, intervalMs));
      const q = await ctx.call(C.fetchQueue, {});
      const e = [...q.items, ...q.recent].find((x) => x.entryId === entry.entryId);
      if (!e) throw notFound(`entry ${entry.entryId} is gone`, 'queue.not_found');
      if (e.state === 'waiting') {
        if (e.position !== position) {
          position = e.position;
          note(ctx, `position ${position ?? '?'}${e.estimateAt ? `, expected around ${when(e.estimateAt)} UTC` : ''}`);
        }
        continue;
      }
      if (e.state === 'granted') {
        const leases = await fetchLeases(ctx);
        const l = leases.find((x) => x.leaseId === e.leaseId);
        if (!l) throw notFound(`the board granted to entry ${e.entryId} is no longer yours`, 'lease.not_found');
        note(ctx, `granted: ${l.serverName} on ${l.boardName}`);
        return l;
      }
      throw new CliError(`the place in line ended: ${e.state}`, `queue.${e.state}`, 'conflict', undefined, e);
    }
  } finally {
    process.off('SIGINT', onInt);
  }
}

export function registerQueue(program: Command): void {
  const queue = program
    .command('queue')
    .description('the waiting line for boards: join (and wait), status, leave')
    .addHelpText(
      'after',
      `
Examples:
  bianbu queue join nightly --model k1 --duration 7d --wait
  bianbu queue status
  bianbu queue leave nightly

First come, first served per filter; an entry waits at most the service's BIANBU_QUEUE_MAX_WAIT_HOURS.
\`bianbu request NAME --wait\` joins the line itself when no board is free.`,
    );

  queue
    .command('join <name>')
    .description('wait in line for a board matching the filters, leased under NAME once granted')
    .addOption(
      new Option('-d, --duration <d>', 'lease length once granted')
        .choices(LEASE_DURATIONS.map((d) => d.key))
        .default('48h'),
    )
    .option('--model <model>', 'a board of this model')
    .option('-f, --filter <key=value>', 'attribute filter (repeatable), as for `bianbu boards`', collect, [])
    .option('-w, --wait', 'stay until the board is granted, printing position changes (Ctrl+C leaves the line)')
    .option('--interval <seconds>', 'with --wait: how often to look', '2')
    .addHelpText(
      'after',
      `
Examples:
  bianbu queue join nightly --model k1
  bianbu queue join big --filter cores=8.. --duration 7d --wait --json

JSON: the entry ${ENTRY_JSON}, plus "lease" (the lease when a board was free at once, else null);
  with --wait: the lease granted, as \`bianbu request\` prints it.
Quiet: the entry id (with --wait: the lease name).
Exit: 5 with queue.already_waiting / queue.too_many / lease.name_taken, 4 with lease.no_match;
  with --wait 5 with queue.expired or queue.cancelled, 130 on Ctrl+C (the place is given up).`,
    )
    .action(
      async (
        name: string,
        o: { duration: string; model?: string; filter: string[]; wait?: boolean; interval: string },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        const filterReq = parseFilters(o.filter);
        if (o.model) filterReq.model = o.model;
        const intervalMs = Math.max(200, Number(o.interval) * 1000 || 2000);
        const entry = await ctx.call(C.joinQueue, {
          filterReq: filterReq as never,
          durationKey: o.duration as never,
          serverName: name,
        });
        if (!o.wait) {
          if (ctx.json) return printJson(entry);
          if (ctx.quiet) return printLines([entry.entryId]);
          if (entry.lease) return printTable(LEASE_HEAD, [leaseRow(entry.lease)]);
          return printTable(ENTRY_HEAD, [entryRow(entry)]);
        }
        const lease =
          entry.state === 'granted' && entry.lease ? entry.lease : await follow(ctx, entry, intervalMs);
        if (ctx.json) printJson(lease);
        else if (ctx.quiet) printLines([lease.serverName]);
        else printTable(LEASE_HEAD, [leaseRow(lease)]);
      },
    );

  queue
    .command('status')
    .alias('ls')
    .description('your places in line (position, estimate, expiry) and your latest ended entries')
    .addHelpText(
      'after',
      `
Examples:
  bianbu queue status
  bianbu queue status --json | jq '.items[] | {serverName, position}'

JSON: {"now": string, "items": [${ENTRY_JSON}], "recent": [...the latest ended entries, newest first]}
Quiet: the ids of the waiting entries.`,
    )
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const q = await ctx.call(C.fetchQueue, {});
      if (ctx.json) return printJson(q);
      if (ctx.quiet) return printLines(q.items.map((e) => e.entryId));
      if (!q.items.length && !q.recent.length) return note(ctx, 'you are not waiting for any board');
      printTable(ENTRY_HEAD, [...q.items, ...q.recent].map(entryRow));
    });

  queue
    .command('leave <entry>')
    .alias('cancel')
    .description('leave the line: ENTRY is an entry id, or the name a waiting entry would lease under')
    .addHelpText(
      'after',
      `
Examples:
  bianbu queue leave nightly
  bianbu queue leave 6f1c2d9e-...

JSON: the entry, now "cancelled": ${ENTRY_JSON}
Exit: 4 with queue.not_found, 5 with queue.not_waiting (granted, cancelled or expired already).`,
    )
    .action(async (ref: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const q = await ctx.call(C.fetchQueue, {});
      const byName = q.items.find((e) => e.serverName === ref);
      const e = await ctx.call(C.cancelQueue, { entryId: byName?.entryId ?? ref });
      if (ctx.json) printJson(e);
      else if (!ctx.quiet) process.stdout.write(`left the line: ${e.serverName} (${e.entryId})\n`);
    });
}
