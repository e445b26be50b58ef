// Flashing from the terminal: the image catalogue, flash IMAGE BOARD... (one multi-flash; --wait
// follows it with a live table on a terminal, a line per change otherwise), and the jobs of boards.
//
// Ctrl+C while waiting: on a terminal it asks, then cancels the jobs that have not started writing
// (PENDING, or RUNNING in `transfer`); jobs already writing cannot be stopped and are followed to
// their end, and the per-board results say which is which. Without a terminal it cancels at once.
import type { Command } from 'commander';
import { logUpdateStderr } from 'log-update';
import { FLASH_FINAL_STATES, type FlashJobDto, flashCalls } from '#shared/flash.ts';
import { type Ctx, ctxOf, selectHeld } from '../context.ts';
import { CliError, classify, ExitCode } from '../errors.ts';
import { onInterrupt, startKeepingInterrupt } from '../interrupt.ts';
import {
  formatBytes,
  formatDuration,
  note,
  printJson,
  printLines,
  printTable,
  renderTable,
} from '../output.ts';

const C = Object.fromEntries(flashCalls.map((c) => [c.name, c])) as {
  [K in (typeof flashCalls)[number]['name']]: Extract<(typeof flashCalls)[number], { name: K }>;
};

export interface FlashBoardResult {
  board: string;
  deviceId: string;
  ok: boolean;
  job: FlashJobDto | null;
  error: { key: string; message: string } | null;
}

function jobRow(j: FlashJobDto): (string | number | null)[] {
  const pct = `${Math.floor(j.percent)}%`;
  const speed = j.speedBps ? `${formatBytes(j.speedBps)}/s` : '';
  const eta = j.etaSeconds !== null && j.state === 'RUNNING' ? formatDuration(j.etaSeconds * 1000) : '';
  const bar = '█'.repeat(Math.round(j.percent / 5)).padEnd(20, '·');
  return [j.serverName, j.state, j.stage, `${bar} ${pct}`, speed, eta, j.errorKey ?? ''];
}
const JOB_HEAD = ['board', 'state', 'stage', 'progress', 'speed', 'eta', 'error'];

const isFinal = (j: FlashJobDto) => FLASH_FINAL_STATES.has(j.state);
const cancellable = (j: FlashJobDto) =>
  j.state === 'PENDING' || (j.state === 'RUNNING' && (j.stage === 'transfer' || j.stage === 'queued'));

/** Follows jobs until all are final; answers them. */
async function follow(
  ctx: Ctx,
  ids: string[],
  initial: FlashJobDto[],
  interrupted = false,
): Promise<FlashJobDto[]> {
  const live = process.stderr.isTTY && !ctx.quiet && !ctx.json;
  let jobs = initial;
  const seen = new Map<string, string>();
  const render = () => {
    if (live) logUpdateStderr(renderTable(JOB_HEAD, jobs.map(jobRow)));
    else if (!ctx.quiet && !ctx.json)
      for (const j of jobs) {
        const k = `${j.state}/${j.stage}`;
        if (seen.get(j.jobId) !== k) {
          seen.set(j.jobId, k);
          process.stderr.write(
            `${j.serverName}: ${j.state} ${j.stage} ${Math.floor(j.percent)}%${j.errorKey ? ` ${j.errorKey}` : ''}\n`,
          );
        }
      }
  };
  const int = onInterrupt({
    already: interrupted,
    question: 'Cancel the jobs that have not started writing?',
    beforeAsk: () => live && logUpdateStderr.done(),
    act: async () => {
      for (const j of jobs.filter((x) => !isFinal(x) && cancellable(x))) {
        await ctx.call(C.cancelFlashJob, { jobId: j.jobId }).catch((e: unknown) => {
          if (e instanceof CliError) note(ctx, `${j.serverName}: not cancelled (${e.key})`);
        });
      }
      const writing = jobs.filter((x) => !isFinal(x) && !cancellable(x));
      if (writing.length)
        note(
          ctx,
          `still writing, followed to the end (cannot be stopped): ${writing.map((x) => x.serverName).join(', ')}`,
        );
    },
  });
  try {
    render();
    while (!jobs.every(isFinal)) {
      await new Promise((r) => setTimeout(r, 1000));
      try {
        jobs = (await ctx.call(C.fetchMultiFlashJob, { multiIds: ids })).jobs;
      } catch (e) {
        if (!(e instanceof CliError && e.cls === 'network')) throw e;
      }
      if (!int.asking) render();
    }
  } finally {
    int.off();
    if (live) logUpdateStderr.done();
  }
  return jobs;
}

function resultsExit(results: FlashBoardResult[]): number {
  const failed = results.filter((r) => !r.ok);
  if (!failed.length) return 0;
  if (results.length > 1) return ExitCode.partial;
  const e = failed[0].error;
  if (e?.key === 'flash.cancelled') return ExitCode.interrupt;
  return ExitCode[classify(0, e?.key)];
}

const FLASH_JSON = `JSON: {"multiId": string, "results": [{"board", "deviceId", "ok": boolean, "job": FlashJob|null,
        "error": {"key", "message"}|null}]} — without --wait "ok" means accepted; with it, SUCCESS.
Exit: 0 when every board succeeded, 1 when some did not (a single board: its error's class).`;

export function registerFlash(program: Command): void {
  program
    .command('images')
    .description('the image catalogue: public images and your private ones')
    .option('--board <board>', 'also say whether each image fits this held board')
    .addHelpText(
      'after',
      `
Examples:
  bianbu images
  bianbu images --board ci-1

JSON: {"items": [{"tag", "name", "osVersion", "size", "sha256", "models", "format", "source", "ownerId", "fits"?}],
       "quota": {"usedBytes", "limitBytes"}}`,
    )
    .action(async (o: { board?: string }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      const deviceId = o.board ? (await selectHeld(ctx, [o.board]))[0].deviceId : undefined;
      const res = await ctx.call(C.flashImages, { deviceId });
      if (ctx.json) return printJson(res);
      if (ctx.quiet) return printLines(res.items.map((i) => i.tag));
      printTable(
        ['tag', 'name', 'os', 'size', 'source', ...(deviceId ? ['fits'] : []), 'sha256'],
        res.items.map((i) => [
          i.tag,
          i.name,
          i.osVersion,
          formatBytes(i.size),
          i.ownerId ? 'private' : i.source,
          ...(deviceId ? [i.fits ? 'yes' : 'no'] : []),
          i.sha256.slice(0, 12),
        ]),
      );
    });

  program
    .command('flash <image> [boards...]')
    .description('flash an image onto held boards (one job per board); --wait follows them to the end')
    .option('--all', 'every board you hold')
    .option('--model <model>', 'every held board of this model')
    .option('--group <group>', 'every held board you put into this share group')
    .option(
      '-w, --wait',
      'follow the jobs: a live table on a terminal; exit status says whether all succeeded',
    )
    .addHelpText(
      'after',
      `
Examples:
  bianbu flash bianbu-developer ci-1 --wait
  bianbu flash bianbu-minimal 'ci-*' --wait
  bianbu flash my-image --all --json

Ctrl+C while waiting asks, then cancels the jobs that have not started writing; jobs already writing
are followed to their end.
${FLASH_JSON}`,
    )
    .action(
      async (
        image: string,
        refs: string[],
        o: { all?: boolean; model?: string; group?: string; wait?: boolean },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        const leases = await selectHeld(ctx, refs, { all: o.all, model: o.model, group: o.group });
        const started = await startKeepingInterrupt(Boolean(o.wait), () =>
          ctx.call(C.postMultiFlash, {
            flashImageTag: image,
            devices: leases.map((l) => ({ deviceId: l.deviceId, serverName: l.serverName })),
          }),
        );
        const res = started.value;
        const byDevice = new Map(leases.map((l) => [l.deviceId, l]));
        const name = (d: string) => byDevice.get(d)?.serverName ?? d;
        let results: FlashBoardResult[] = res.results.map((r) => ({
          board: name(r.deviceId),
          deviceId: r.deviceId,
          ok: Boolean(r.job),
          job: r.job,
          error: r.errorKey ? { key: r.errorKey, message: r.message ?? r.errorKey } : null,
        }));
        if (!results.some((r) => r.job) && results.length === 1) {
          const e = results[0].error!;
          throw new CliError(`${results[0].board}: ${e.message}`, e.key, classify(0, e.key));
        }
        if (o.wait && results.some((r) => r.job)) {
          const jobs = await follow(
            ctx,
            [res.multiId],
            results.flatMap((r) => (r.job ? [r.job] : [])),
            started.interrupted,
          );
          const byId = new Map(jobs.map((j) => [j.deviceId, j]));
          results = results.map((r) => {
            const j = byId.get(r.deviceId);
            if (!j) return r;
            return {
              ...r,
              job: j,
              ok: j.state === 'SUCCESS',
              error:
                j.state === 'SUCCESS'
                  ? null
                  : {
                      key: j.errorKey ?? `flash.${j.state.toLowerCase()}`,
                      message: j.errorMessage ?? j.state,
                    },
            };
          });
        }
        if (ctx.json) printJson({ multiId: res.multiId, results });
        else
          for (const r of results) {
            if (r.ok && ctx.quiet) continue;
            const what = r.ok
              ? o.wait
                ? `flashed ${image} (${formatDuration(r.job?.durationMs ?? 0)})`
                : `job ${r.job?.jobId} ${r.job?.state}`
              : `failed: ${r.error?.message} (${r.error?.key})`;
            (r.ok ? process.stdout : process.stderr).write(`${r.board}: ${what}\n`);
          }
        process.exitCode = resultsExit(results);
      },
    );

  program
    .command('flash-jobs [boards...]')
    .description('the latest flash job of held boards, or --history of one, or jobs by id')
    .option('--all', 'every board you hold')
    .option('--history', 'every job of the board, newest first')
    .option('--job <id...>', 'jobs (or multiIds) by id')
    .option('--cancel <jobId>', 'cancel a job that has not started writing')
    .addHelpText(
      'after',
      `
Examples:
  bianbu flash-jobs ci-1
  bianbu flash-jobs --all
  bianbu flash-jobs ci-1 --history
  bianbu flash-jobs --cancel 3f2a...

JSON: {"jobs": [FlashJob]} — FlashJob: {"jobId", "multiId", "deviceId", "serverName", "imageTag", "state",
       "stage", "percent", "bytesDone", "bytesTotal", "speedBps", "etaSeconds", "createdAt", "startedAt",
       "endedAt", "durationMs", "errorKey", "errorMessage", ...}`,
    )
    .action(
      async (
        refs: string[],
        o: { all?: boolean; history?: boolean; job?: string[]; cancel?: string },
        cmd: Command,
      ) => {
        const ctx = ctxOf(cmd);
        let jobs: FlashJobDto[] = [];
        if (o.cancel) jobs = [await ctx.call(C.cancelFlashJob, { jobId: o.cancel })];
        else if (o.job?.length) jobs = (await ctx.call(C.fetchMultiFlashJob, { multiIds: o.job })).jobs;
        else {
          const leases = await selectHeld(ctx, refs, { all: o.all || !refs.length });
          for (const l of leases) {
            if (o.history)
              jobs.push(...(await ctx.call(C.flashHistory, { deviceId: l.deviceId, limit: 20 })).items);
            else {
              const r = await ctx.call(C.fetchFlashJob, { deviceId: l.deviceId });
              if (r.job) jobs.push(r.job);
            }
          }
        }
        if (ctx.json) return printJson({ jobs });
        if (ctx.quiet) return printLines(jobs.map((j) => j.jobId));
        printTable(
          ['job', 'board', 'image', 'state', 'stage', 'percent', 'started', 'took', 'error'],
          jobs.map((j) => [
            j.jobId.slice(0, 8),
            j.serverName,
            j.imageTag,
            j.state,
            j.stage,
            `${Math.floor(j.percent)}%`,
            j.startedAt?.slice(0, 19).replace('T', ' ') ?? null,
            j.durationMs !== null ? formatDuration(j.durationMs) : null,
            j.errorKey,
          ]),
        );
      },
    );
}
