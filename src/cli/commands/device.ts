// Board actions on a held board: power reset, load graphs, plugins.
import { type Command, Option } from 'commander';
import { fileCalls } from '#shared/files.ts';
import type { LoadSeries } from '#shared/leases.ts';
import {
  applyFor,
  calls,
  ctxOf,
  exitOfResults,
  mapLimit,
  resolveHeld,
  selectHeld,
  toBoardResult,
} from '../context.ts';
import { usage } from '../errors.ts';
import { formatBytes, printJson, printTable } from '../output.ts';

const SPARKS = '▁▂▃▄▅▆▇█';
const F = Object.fromEntries(fileCalls.map((c) => [c.name, c])) as {
  [K in (typeof fileCalls)[number]['name']]: Extract<(typeof fileCalls)[number], { name: K }>;
};

export function sparkline(values: (number | null)[], width = 40): string {
  const vs = values.slice(-width);
  const nums = vs.filter((v): v is number => v !== null);
  if (!nums.length) return '';
  const min = Math.min(...nums);
  const max = Math.max(...nums);
  return vs
    .map((v) =>
      v === null
        ? ' '
        : SPARKS[max === min ? 0 : Math.round(((v - min) / (max - min)) * (SPARKS.length - 1))],
    )
    .join('');
}

const METRICS = {
  cpu: calls.recentCpuLoading,
  mem: calls.recentMemLoading,
  disk: calls.recentDiskLoading,
  net: calls.recentNetLoading,
} as const;
type Metric = keyof typeof METRICS;

function fmt(unit: LoadSeries['unit'], v: number | null | undefined): string {
  if (v === null || v === undefined) return '-';
  if (unit === 'percent') return `${v.toFixed(1)}%`;
  if (unit === 'bytesPerSecond') return `${formatBytes(v)}/s`;
  return formatBytes(v);
}

function parseWindow(w: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(w);
  if (!m) throw usage('--window: a number of seconds, or 30m, 2h');
  return Number(m[1]) * (m[2] === 'h' ? 3600 : m[2] === 'm' ? 60 : 1);
}

export function registerDevice(program: Command): void {
  program
    .command('reset [boards...]')
    .description('power-cycle held boards; answers once each is back')
    .option('--all', 'every board you hold')
    .addHelpText(
      'after',
      `
Examples:
  bianbu reset ci-1
  bianbu reset 'ci-*'

JSON: {"results": [{"board", "deviceId", "ok", "data"?: {"deviceId", "state"}, "error"?: {"key", "message", "exitCode"}}]}`,
    )
    .action(async (refs: string[], o: { all?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const leases = await selectHeld(ctx, refs, { all: o.all });
      const settled = await mapLimit(leases, 4, async (l) => {
        const applyId = await applyFor(ctx, l);
        const done = await ctx.call(calls.powerReset, { applyId }, { applyId });
        // Back means answering: a riscv64 board boots for a minute after its reset (the call retries
        // while the service says board.booting); a sandbox board answers at once.
        await ctx.call(F.fileBrowser, { applyId, path: '/' }, { applyId });
        return done;
      });
      const results = leases.map((l, i) => toBoardResult(l, settled[i]));
      if (ctx.json) printJson({ results });
      else
        for (const r of results)
          if (r.ok) {
            if (!ctx.quiet)
              process.stdout.write(`${r.board}: back (${(r.data as { state: string }).state})\n`);
          } else process.stderr.write(`${r.board}: failed: ${r.error?.message} (${r.error?.key})\n`);
      process.exitCode = exitOfResults(results);
    });

  program
    .command('load <board>')
    .description('CPU, memory, disk and network load of a held board: sparklines, or a table')
    .addOption(
      new Option('-m, --metric <m...>', 'which graphs')
        .choices(Object.keys(METRICS))
        .default(Object.keys(METRICS)),
    )
    .option('-w, --window <w>', 'how far back: seconds, or 30m, 2h (at most 24h)', '15m')
    .option('--table', 'every sample as a table instead of sparklines')
    .addHelpText(
      'after',
      `
Examples:
  bianbu load ci-1
  bianbu load ci-1 -m cpu mem --window 1h --table

JSON: {"cpu"?: LoadSeries, "mem"?: ..., "disk"?: ..., "net"?: ...} where LoadSeries is
      {"deviceId", "unit": "percent"|"bytes"|"bytesPerSecond", "timestamps": [unix s], "series": [{"key", "values"}], "total"}`,
    )
    .action(async (ref: string, o: { metric: Metric[]; window: string; table?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const l = await resolveHeld(ctx, ref);
      const windowSeconds = parseWindow(o.window);
      const out: Partial<Record<Metric, LoadSeries>> = {};
      for (const m of o.metric) out[m] = await ctx.call(METRICS[m], { deviceId: l.deviceId, windowSeconds });
      if (ctx.json) return printJson(out);
      if (o.table) {
        for (const [m, s] of Object.entries(out) as [Metric, LoadSeries][]) {
          process.stdout.write(`${m}\n`);
          printTable(
            ['time', ...s.series.map((x) => x.key)],
            s.timestamps.map((t, i) => [
              new Date(t * 1000).toISOString().slice(11, 19),
              ...s.series.map((x) => fmt(s.unit, x.values[i])),
            ]),
          );
        }
        return;
      }
      const rows: string[][] = [];
      for (const [m, s] of Object.entries(out) as [Metric, LoadSeries][])
        for (const x of s.series) {
          const last = [...x.values].reverse().find((v) => v !== null);
          rows.push([`${m}.${x.key}`, fmt(s.unit, last), sparkline(x.values)]);
        }
      printTable(['series', 'now', `last ${o.window}`], rows);
    });

  program
    .command('plugin <board> <topic> [data]')
    .description('call a plugin on a held board (topic, data, node id); prints its output')
    .option('--node <id>', 'node id passed to the plugin')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu plugin ci-1 gpio \'{"pin":4,"value":1}\'\n  bianbu plugin ci-1 uptime\n\nJSON: {"topic": string, "result": string}',
    )
    .action(
      async (ref: string, topic: string, data: string | undefined, o: { node?: string }, cmd: Command) => {
        const ctx = ctxOf(cmd);
        const l = await resolveHeld(ctx, ref);
        const applyId = await applyFor(ctx, l);
        let payload: unknown = data;
        if (data !== undefined) {
          try {
            payload = JSON.parse(data);
          } catch {
            payload = data;
          }
        }
        const res = await ctx.call(
          calls.callPlugin,
          { applyId, topic, data: payload as never, nodeId: o.node },
          { applyId },
        );
        if (ctx.json) printJson(res);
        else process.stdout.write(res.result.endsWith('\n') ? res.result : `${res.result}\n`);
      },
    );
}
