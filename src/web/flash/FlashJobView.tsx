// One board's flash job as it happens: the four steps (transfer → write → verify → boot), the percent
// bar, speed, ETA and bytes, the live log, and the result — success, or the worded error — with Cancel
// while the job has not started writing. The same view is the workbench's flash pane and, elsewhere,
// the body of the job dialog. `data-state`/`data-stage`/`data-percent` are there for tests.
import { useEffect, useRef } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { FLASH_STEPS, type FlashJobDto } from '#shared/flash.ts';
import { messageOf } from '#web/boards/store.ts';
import { dateTimeText } from '#web/boards/time.ts';
import { Icon } from '#web/components/icons.tsx';
import { Alert, Button, cx, Spinner } from '#web/components/ui.tsx';
import { formatSize } from '#web/files/format.ts';
import { notify } from '#web/state/notices.ts';
import {
  canCancel,
  durationText,
  isFinal,
  type StepStatus,
  shownPercent,
  speedText,
  stepStatuses,
} from './format.ts';
import { cancelJob, flash, jobErrorText, openHistory, refreshJob } from './state.ts';

export function FlashJobView({
  deviceId,
  compact,
  actions,
}: {
  deviceId: string;
  compact?: boolean;
  actions?: React.ReactNode;
}) {
  const { t } = useTranslation('flash');
  const snap = useSnapshot(flash);
  const jobId = snap.byDevice[deviceId];
  const entry = jobId ? snap.jobs[jobId] : undefined;
  // The view reads the board's latest job and its whole log once when it opens (the post answer has
  // no log, and a job started elsewhere is not in the store yet); events keep it current after that.
  useEffect(() => {
    refreshJob(deviceId).catch(() => {});
  }, [deviceId]);
  if (!entry) {
    return (
      <div
        className="flex h-full flex-col items-center justify-center gap-2 p-4 text-center text-[13px] text-zinc-500"
        data-testid="flash-view"
        data-state="none"
      >
        <Icon name="upload" size={18} />
        <p>{t('job.none')}</p>
        <Button size="sm" icon="book" onClick={() => openHistory(deviceId)}>
          {t('history.open')}
        </Button>
      </div>
    );
  }
  return (
    <JobBody job={entry.job as FlashJobDto} log={entry.log as string[]} compact={compact} actions={actions} />
  );
}

function JobBody({
  job,
  log,
  compact,
  actions,
}: {
  job: FlashJobDto;
  log: string[];
  compact?: boolean;
  actions?: React.ReactNode;
}) {
  const { t, i18n } = useTranslation('flash');
  const snap = useSnapshot(flash);
  const steps = stepStatuses(job);
  const pct = shownPercent(job);
  const final = isFinal(job);
  const speed = speedText(job.speedBps, i18n.language);
  const eta = durationText(job.etaSeconds, t);
  const cancellable = canCancel(job);
  const cancelling = !!snap.cancelling[job.jobId];

  const cancel = async () => {
    try {
      await cancelJob(job.jobId);
    } catch (err) {
      notify('error', t('job.cancelFailed', { error: messageOf(err) }));
    }
  };

  return (
    <div
      className={cx('flex h-full min-h-0 flex-col gap-3', compact ? 'p-3' : '')}
      data-testid="flash-view"
      data-job-id={job.jobId}
      data-state={job.state}
      data-stage={job.stage}
      data-percent={pct}
    >
      <div className="flex flex-wrap items-baseline justify-between gap-x-3 gap-y-1">
        <p className="min-w-0 text-[13px] text-zinc-700 dark:text-zinc-300">
          {t('job.heading', { image: job.imageName || job.imageTag, name: job.serverName })}
        </p>
        <span className="font-mono text-[11px] text-zinc-400">{job.imageTag}</span>
      </div>

      <ol className="grid grid-cols-4 gap-1.5" aria-label={t('job.steps')} data-testid="flash-steps">
        {FLASH_STEPS.map((step, i) => (
          <StepItem key={step} index={i + 1} label={t(`stage.${step}`)} status={steps[step]} />
        ))}
      </ol>

      <div>
        <div
          role="progressbar"
          aria-label={t('job.progress')}
          aria-valuemin={0}
          aria-valuemax={100}
          aria-valuenow={pct}
          aria-valuetext={`${pct}%`}
          className="h-2 overflow-hidden rounded-full bg-zinc-100 dark:bg-zinc-800"
        >
          <div
            className={cx(
              'h-full rounded-full transition-[width] duration-300',
              job.state === 'FAILURE'
                ? 'bg-red-500'
                : job.state === 'CANCELLED'
                  ? 'bg-zinc-400'
                  : job.state === 'SUCCESS'
                    ? 'bg-emerald-500'
                    : 'bg-violet-500',
            )}
            style={{ width: `${pct}%` }}
          />
        </div>
        <div className="mt-1.5 flex flex-wrap items-center gap-x-4 gap-y-1 text-xs text-zinc-500 dark:text-zinc-400">
          <span
            className="font-mono text-[13px] font-semibold text-zinc-900 tabular-nums dark:text-zinc-100"
            data-testid="flash-percent"
          >
            {pct}%
          </span>
          <span>
            {t(`state.${job.state}`)}
            {!final && job.state === 'RUNNING' ? ` · ${t(`stage.${job.stage}`)}` : ''}
          </span>
          {!final && job.bytesTotal > 0 ? (
            <span className="tabular-nums">
              {t('job.bytes', {
                done: formatSize(job.bytesDone, i18n.language),
                total: formatSize(job.bytesTotal, i18n.language),
              })}
            </span>
          ) : null}
          {!final && speed ? (
            <span className="tabular-nums" data-testid="flash-speed">
              {t('job.speed', { speed })}
            </span>
          ) : null}
          {!final && eta ? (
            <span className="tabular-nums" data-testid="flash-eta">
              {t('job.eta', { eta })}
            </span>
          ) : null}
          {final && job.durationMs !== null ? (
            <span className="tabular-nums">
              {t('job.took', { duration: durationText(job.durationMs / 1000, t) })}
            </span>
          ) : null}
        </div>
      </div>

      {final ? <Result job={job} /> : null}

      <div className="flex min-h-0 flex-1 flex-col">
        <div className="mb-1 text-[11px] font-medium tracking-wide text-zinc-400 uppercase">
          {t('job.log')}
        </div>
        <LogView lines={log} />
      </div>

      <div className="flex flex-wrap items-center justify-between gap-2">
        <span className="text-[11px] text-zinc-400">
          {job.startedAt
            ? t('job.started', { date: dateTimeText(i18n.language, job.startedAt), user: job.userName })
            : t('job.queued')}
        </span>
        <div className="flex items-center gap-2">
          {actions}
          {!final ? (
            <Button
              size="sm"
              variant="secondary"
              icon="x"
              disabled={!cancellable}
              loading={cancelling}
              title={cancellable ? undefined : t('job.notCancellable')}
              onClick={() => void cancel()}
              data-testid="flash-cancel"
            >
              {t('job.cancel')}
            </Button>
          ) : null}
        </div>
      </div>
      {!final && !cancellable ? (
        <p className="-mt-1 text-right text-[11px] text-zinc-400">{t('job.notCancellable')}</p>
      ) : null}
    </div>
  );
}

function Result({ job }: { job: FlashJobDto }) {
  const { t } = useTranslation('flash');
  const image = job.imageName || job.imageTag;
  if (job.state === 'SUCCESS') {
    return (
      <Alert tone="success" role="status">
        <span data-testid="flash-result" data-result="success">
          {t('result.success', { name: job.serverName, image })}
        </span>
      </Alert>
    );
  }
  if (job.state === 'CANCELLED') {
    return (
      <Alert tone="info" role="status">
        <span data-testid="flash-result" data-result="cancelled">
          {t('result.cancelled', { name: job.serverName })}
        </span>
      </Alert>
    );
  }
  return (
    <Alert tone="danger">
      <span data-testid="flash-result" data-result="failure" data-error-key={job.errorKey ?? ''}>
        {t('result.failure', { name: job.serverName, error: jobErrorText(job) })}
      </span>
      {job.errorMessage && job.errorKey === 'flash.tool_failed' ? (
        <pre className="mt-1 max-h-24 overflow-auto font-mono text-[11px] whitespace-pre-wrap opacity-80">
          {job.errorMessage}
        </pre>
      ) : null}
    </Alert>
  );
}

const stepTone: Record<StepStatus, string> = {
  pending: 'border-zinc-200 text-zinc-400 dark:border-zinc-800',
  active:
    'border-violet-400 bg-violet-50 text-violet-800 dark:border-violet-500/60 dark:bg-violet-500/10 dark:text-violet-200',
  done: 'border-emerald-300 bg-emerald-50 text-emerald-800 dark:border-emerald-700/60 dark:bg-emerald-500/10 dark:text-emerald-200',
  failed: 'border-red-300 bg-red-50 text-red-800 dark:border-red-800/60 dark:bg-red-500/10 dark:text-red-200',
  cancelled:
    'border-zinc-300 bg-zinc-50 text-zinc-600 dark:border-zinc-700 dark:bg-zinc-800 dark:text-zinc-300',
  skipped: 'border-dashed border-zinc-200 text-zinc-400 dark:border-zinc-800',
};

function StepItem({ index, label, status }: { index: number; label: string; status: StepStatus }) {
  const { t } = useTranslation('flash');
  return (
    <li
      className={cx(
        'flex min-w-0 items-center gap-1.5 rounded-md border px-2 py-1.5 text-xs font-medium',
        stepTone[status],
      )}
      data-step-status={status}
      aria-current={status === 'active' ? 'step' : undefined}
      title={t(`stepStatus.${status}`)}
    >
      {status === 'active' ? (
        <Spinner size={12} className="shrink-0" />
      ) : status === 'done' ? (
        <Icon name="check" size={13} className="shrink-0" />
      ) : status === 'failed' ? (
        <Icon name="alert" size={13} className="shrink-0" />
      ) : status === 'cancelled' ? (
        <Icon name="x" size={13} className="shrink-0" />
      ) : (
        <span className="w-3 shrink-0 text-center font-mono text-[10px]">{index}</span>
      )}
      <span className="truncate">{label}</span>
      <span className="sr-only">{t(`stepStatus.${status}`)}</span>
    </li>
  );
}

/** The job's log, following the end unless the user scrolled up to read. */
function LogView({ lines }: { lines: string[] }) {
  const { t } = useTranslation('flash');
  const ref = useRef<HTMLPreElement>(null);
  const stick = useRef(true);
  // biome-ignore lint/correctness/useExhaustiveDependencies: scroll whenever lines arrive.
  useEffect(() => {
    const el = ref.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [lines.length]);
  return (
    <pre
      ref={ref}
      role="log"
      aria-label={t('job.log')}
      aria-live="off"
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling log must be reachable by keyboard to scroll it.
      tabIndex={0}
      onScroll={(e) => {
        const el = e.currentTarget;
        stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      }}
      className="min-h-24 flex-1 overflow-auto rounded-md bg-zinc-950 px-2.5 py-2 font-mono text-[11px] leading-relaxed text-zinc-200 whitespace-pre-wrap focus-ring"
      data-testid="flash-log"
    >
      {lines.length ? lines.join('\n') : <span className="text-zinc-500">{t('job.logEmpty')}</span>}
    </pre>
  );
}
