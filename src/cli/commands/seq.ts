// Sequences from the terminal (src/shared/sequences.ts): import a YAML/JSON file (checked here first,
// so a problem is named as FILE:LINE:COLUMN), list, export, delete, run on boards (--wait follows the
// run: a live table on a terminal, a line per step otherwise), and read runs and their logs.
//
// Ctrl+C while waiting asks on a terminal, then cancels the run (a running command is stopped, steps
// not started are cancelled); without a terminal it cancels at once.
import fs from 'node:fs';
import type { Command } from 'commander';
import { logUpdateStderr } from 'log-update';
import { parseSequence } from '#shared/sequence-file.ts';
import { type RunStepDto, type SequenceDto, type SequenceRunDto, sequenceCalls } from '#shared/sequences.ts';
import { type Ctx, ctxOf } from '../context.ts';
import { CliError, ExitCode, notFound, usage } from '../errors.ts';
import { onInterrupt, startKeepingInterrupt } from '../interrupt.ts';
import { formatDuration, note, printJson, printLines, printTable, renderTable } from '../output.ts';

const C = Object.fromEntries(sequenceCalls.map((c) => [c.name, c])) as {
  [K in (typeof sequenceCalls)[number]['name']]: Extract<(typeof sequenceCalls)[number], { name: K }>;
};

/** A sequence by id or name: one's own first, then "owner/name" or a name only one sharer uses. */
async function findSequence(ctx: Ctx, ref: string): Promise<SequenceDto> {
  const { items } = await ctx.call(C.fetchSequences, {});
  const byId = items.find((s) => s.sequenceId === ref);
  if (byId) return byId;
  const own = items.find((s) => s.mine && s.name === ref);
  if (own) return own;
  const shared = items.filter((s) => s.name === ref || `${s.ownerName}/${s.name}` === ref);
  if (shared.length === 1) return shared[0];
  if (shared.length > 1)
    throw usage(`several sequences are named ${ref}: say which, e.g. ${shared[0].ownerName}/${ref}`);
  throw notFound(`no sequence named ${ref} (bianbu seq list)`, 'sequence.not_found');
}

const MARK: Record<RunStepDto['state'], string> = {
  pending: '·',
  running: '▶',
  success: '✓',
  failure: '✗',
  skipped: '-',
  cancelled: '⊘',
};

function boardRow(b: SequenceRunDto['boards'][number]): string[] {
  const current =
    b.steps.find((s) => s.state === 'running') ?? b.steps.findLast((s) => s.state !== 'pending');
  return [
    b.serverName,
    b.state,
    b.steps.map((s) => MARK[s.state]).join(''),
    current ? current.label : '',
    current?.detail ?? '',
  ];
}
const RUN_HEAD = ['board', 'state', 'steps', 'step', 'detail'];

/** Follows a run to its end; answers its last state. */
async function follow(ctx: Ctx, initial: SequenceRunDto, interrupted = false): Promise<SequenceRunDto> {
  const live = process.stderr.isTTY && !ctx.quiet && !ctx.json;
  let run = initial;
  const said = new Set<string>();
  const render = () => {
    if (live) return logUpdateStderr(renderTable(RUN_HEAD, run.boards.map(boardRow)));
    if (ctx.quiet || ctx.json) return;
    for (const b of run.boards)
      b.steps.forEach((s, i) => {
        const k = `${b.deviceId}/${i}/${s.state}`;
        if (s.state === 'pending' || said.has(k)) return;
        said.add(k);
        process.stderr.write(
          `${b.serverName}: ${MARK[s.state]} ${s.label}${s.detail ? ` (${s.detail})` : ''}\n`,
        );
      });
  };
  const int = onInterrupt({
    already: interrupted,
    question: 'Cancel the run?',
    beforeAsk: () => live && logUpdateStderr.done(),
    act: async () => {
      run = await ctx.call(C.cancelSequenceRun, { runId: run.runId }).catch((e: unknown) => {
        if (e instanceof CliError) note(ctx, `not cancelled (${e.key})`);
        return run;
      });
    },
  });
  try {
    render();
    while (run.state === 'running') {
      await new Promise((r) => setTimeout(r, 500));
      try {
        run = await ctx.call(C.fetchSequenceRun, { runId: run.runId });
      } catch (e) {
        if (!(e instanceof CliError && e.cls === 'network')) throw e;
      }
      if (!int.asking) render();
    }
  } finally {
    int.off();
    if (live) logUpdateStderr.done();
  }
  return run;
}

function runExit(run: SequenceRunDto): number {
  if (run.state === 'success') return ExitCode.ok;
  if (run.state === 'cancelled') return ExitCode.interrupt;
  return run.boards.length > 1 ? ExitCode.partial : ExitCode.board;
}

function printLog(run: SequenceRunDto): void {
  const w = (t: string) => process.stdout.write(t);
  w(`run ${run.runId} of ${run.sequenceName} by ${run.userName}: ${run.state}\n`);
  for (const b of run.boards) {
    w(`\n${b.serverName} (${b.state})\n`);
    for (const s of b.steps) {
      const took =
        s.startedAt && s.endedAt ? ` ${formatDuration(Date.parse(s.endedAt) - Date.parse(s.startedAt))}` : '';
      w(
        `  ${MARK[s.state]} ${s.label}${s.detail ? ` — ${s.detail}` : ''}${s.errorKey ? ` (${s.errorKey})` : ''}${took}\n`,
      );
      if (s.output) w(s.output.replace(/\n?$/, '\n').replace(/^/gm, '    | '));
    }
  }
}

function readSource(file: string): string {
  try {
    return fs.readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    throw notFound(`cannot read ${file}: ${(e as Error).message}`, 'cli.file_unreadable');
  }
}

const RUN_JSON = `JSON: the run: {"runId", "sequenceId", "sequenceName", "userName", "state": running|success|failure|cancelled,
       "params", "startedAt", "endedAt", "boards": [{"deviceId", "serverName", "state", "steps": [{"label",
       "kind", "state": pending|running|success|failure|skipped|cancelled, "startedAt", "endedAt", "errorKey",
       "detail", "status", "output"}]}]}
Exit (with --wait): 0 when every step succeeded on every board, 1 when some board failed (6 for a
single board), 130 when cancelled.`;

export function registerSeq(program: Command): void {
  const seq = program
    .command('seq')
    .description('sequences: saved lists of flash, exec, reset, renew and wait steps, run on many boards')
    .addHelpText(
      'after',
      `
A sequence file (YAML or JSON):
  description: flash the nightly image and smoke-test it
  on-failure: stop              # or continue
  params:
    image: { default: bianbu-developer }
  steps:
    - flash: \${image}
    - exec: { command: "uname -a", timeout: 60, expect: 0 }
    - renew: 48h
    - reset: {}
    - wait: 5

Examples:
  bianbu seq import nightly.yaml
  bianbu seq run nightly 'ci-*' --param image=bianbu-minimal --wait
  bianbu seq log <runId>`,
    );

  seq
    .command('list')
    .description('your sequences and those shared with you')
    .addHelpText(
      'after',
      '\nJSON: {"items": [{"sequenceId", "name", "description", "ownerName", "groupName", "mine", "params", "steps", "updatedAt"}]}',
    )
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const res = await ctx.call(C.fetchSequences, {});
      if (ctx.json) return printJson({ items: res.items.map(({ source: _s, ...rest }) => rest) });
      if (ctx.quiet) return printLines(res.items.map((s) => s.name));
      printTable(
        ['name', 'owner', 'shared with', 'steps', 'updated'],
        res.items.map((s) => [
          s.name,
          s.mine ? 'me' : s.ownerName,
          s.groupName,
          s.steps.map((x) => x.kind).join(' → '),
          s.updatedAt.slice(0, 19).replace('T', ' '),
        ]),
      );
    });

  seq
    .command('import <file>')
    .description('save a YAML or JSON sequence file (- for standard input); replaces yours of that name')
    .option('--name <name>', 'its name (default: the file’s `name`, or its file name)')
    .option('--group <group>', 'share it with this group of yours')
    .addHelpText(
      'after',
      `
Examples:
  bianbu seq import nightly.yaml
  bianbu seq import - --name smoke < smoke.json
  bianbu seq import nightly.yaml --group team

A problem in the file is named as FILE:LINE:COLUMN and nothing is saved (exit 2).
JSON: the sequence: {"sequenceId", "name", "groupName", "steps": [{"kind", "label"}], ...}`,
    )
    .action(async (file: string, o: { name?: string; group?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const source = readSource(file);
      const parsed = parseSequence(source);
      if (!parsed.ok) {
        const p = parsed.problem;
        throw new CliError(
          `${file}:${p.line}:${p.column}: ${p.message}`,
          'sequence.invalid',
          'usage',
          undefined,
          p,
        );
      }
      const name =
        o.name ??
        parsed.doc.name ??
        (file === '-' ? undefined : file.replace(/^.*\//, '').replace(/\.(ya?ml|json)$/i, ''));
      if (!name) throw usage('give the sequence a name: --name NAME');
      const saved = await ctx.call(C.saveSequence, { name, source, groupName: o.group ?? null });
      if (ctx.json) return printJson(saved);
      if (!ctx.quiet)
        process.stdout.write(
          `saved ${saved.name}: ${saved.steps.length} steps${saved.groupName ? `, shared with ${saved.groupName}` : ''}\n`,
        );
    });

  seq
    .command('export <name>')
    .alias('show')
    .description('print a sequence’s file as saved (YAML or JSON, as it was written)')
    .option('-o, --output <file>', 'write it to this file instead')
    .addHelpText(
      'after',
      '\nExamples:\n  bianbu seq export nightly > nightly.yaml\n  bianbu seq export nightly -o nightly.yaml\n\nJSON: the sequence, its file in "source"',
    )
    .action(async (ref: string, o: { output?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const s = await findSequence(ctx, ref);
      if (ctx.json) return printJson(s);
      if (o.output) fs.writeFileSync(o.output, s.source);
      else process.stdout.write(s.source.endsWith('\n') ? s.source : `${s.source}\n`);
    });

  seq
    .command('delete <name>')
    .description('delete one of your sequences (its runs are kept)')
    .addHelpText('after', '\nExamples:\n  bianbu seq delete nightly\n\nJSON: {"sequenceId": string}')
    .action(async (ref: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const s = await findSequence(ctx, ref);
      const res = await ctx.call(C.deleteSequence, { sequenceId: s.sequenceId });
      if (ctx.json) return printJson(res);
      if (!ctx.quiet) process.stdout.write(`deleted ${s.name}\n`);
    });

  seq
    .command('run <name> <boards...>')
    .description('run a sequence on held boards (names, ids or globs); --wait follows it to the end')
    .option('--param <k=v...>', 'a parameter’s value (repeat for several)')
    .option(
      '-w, --wait',
      'follow the run: a live table on a terminal; exit status says whether all succeeded',
    )
    .addHelpText(
      'after',
      `
Examples:
  bianbu seq run nightly ci-1 --wait
  bianbu seq run nightly 'ci-*' --param image=bianbu-minimal --wait --json

${RUN_JSON}`,
    )
    .action(async (ref: string, boards: string[], o: { param?: string[]; wait?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const params: Record<string, string> = {};
      for (const p of o.param ?? []) {
        const i = p.indexOf('=');
        if (i <= 0) throw usage(`--param takes NAME=VALUE, not ${p}`);
        params[p.slice(0, i)] = p.slice(i + 1);
      }
      const s = await findSequence(ctx, ref);
      const started = await startKeepingInterrupt(Boolean(o.wait), () =>
        ctx.call(C.runSequence, { sequenceId: s.sequenceId, targets: boards, params }),
      );
      let run = started.value;
      if (!o.wait) {
        if (ctx.json) return printJson(run);
        if (ctx.quiet) return printLines([run.runId]);
        process.stdout.write(
          `run ${run.runId} started on ${run.boards.map((b) => b.serverName).join(', ')}\n`,
        );
        return;
      }
      run = await follow(ctx, run, started.interrupted);
      if (ctx.json) printJson(run);
      else if (!ctx.quiet)
        for (const b of run.boards) {
          const failed = b.steps.find((x) => x.state === 'failure');
          const line = failed
            ? `${b.serverName}: ${b.state} at "${failed.label}": ${failed.detail} (${failed.errorKey})`
            : `${b.serverName}: ${b.state}`;
          (b.state === 'success' ? process.stdout : process.stderr).write(`${line}\n`);
        }
      process.exitCode = runExit(run);
    });

  seq
    .command('runs [name]')
    .description('the latest runs you may see (yours, and of sequences shared with you)')
    .addHelpText(
      'after',
      `\nExamples:\n  bianbu seq runs\n  bianbu seq runs nightly --json\n\nJSON: {"items": [run]} (see bianbu seq run --help)`,
    )
    .action(async (ref: string | undefined, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const sequenceId = ref ? (await findSequence(ctx, ref)).sequenceId : undefined;
      const res = await ctx.call(C.fetchSequenceRuns, { sequenceId });
      if (ctx.json) return printJson(res);
      if (ctx.quiet) return printLines(res.items.map((r) => r.runId));
      printTable(
        ['run', 'sequence', 'by', 'state', 'boards', 'started', 'took'],
        res.items.map((r) => [
          r.runId.slice(0, 8),
          r.sequenceName,
          r.userName,
          r.state,
          r.boards.map((b) => b.serverName).join(','),
          r.startedAt.slice(0, 19).replace('T', ' '),
          r.endedAt ? formatDuration(Date.parse(r.endedAt) - Date.parse(r.startedAt)) : null,
        ]),
      );
    });

  seq
    .command('log <runId>')
    .description('a run’s steps on each board, with what each command printed')
    .option('-f, --follow', 'follow it while it runs')
    .addHelpText('after', `\nExamples:\n  bianbu seq log 3f2a1c9e-...\n\n${RUN_JSON}`)
    .action(async (runId: string, o: { follow?: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      let run = await findRun(ctx, runId);
      if (o.follow && run.state === 'running') run = await follow(ctx, run);
      if (ctx.json) printJson(run);
      else printLog(run);
      process.exitCode = runExit(run);
    });

  seq
    .command('cancel <runId>')
    .description('stop a run you started')
    .addHelpText('after', `\nExamples:\n  bianbu seq cancel 3f2a1c9e-...\n\n${RUN_JSON}`)
    .action(async (runId: string, _o: unknown, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const run = await ctx.call(C.cancelSequenceRun, { runId: (await findRun(ctx, runId)).runId });
      if (ctx.json) return printJson(run);
      if (!ctx.quiet) process.stdout.write(`run ${run.runId}: ${run.state}\n`);
    });
}

/** A run by id, or by the first characters of one of the latest runs' ids (as `seq runs` prints). */
async function findRun(ctx: Ctx, ref: string): Promise<SequenceRunDto> {
  if (ref.length >= 32) return ctx.call(C.fetchSequenceRun, { runId: ref });
  const hits = (await ctx.call(C.fetchSequenceRuns, {})).items.filter((r) => r.runId.startsWith(ref));
  if (hits.length === 1) return hits[0];
  throw notFound(
    hits.length ? `several runs start with ${ref}` : `no recent run starts with ${ref}`,
    'sequence.run_not_found',
  );
}
