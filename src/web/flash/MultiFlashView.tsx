// The table of a multi-board flash: one row per board with its own step, percent and result. A board
// the service refused shows the refusal in its row and never affects the others; a board reads
// "flashed" only once its job is SUCCESS (verify passed and it booted).
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import type { FlashJobDto } from '#shared/flash.ts';
import { Button, cx } from '#web/components/ui.tsx';
import { t as tt } from '#web/i18n/i18n.ts';
import { canCancel, errorWords, isFinal, resultTone, shownPercent } from './format.ts';
import { cancelJob, flash, hasFlashKey, jobErrorText, type MultiFlash, openJob } from './state.ts';

export function multiSummary(
  m: MultiFlash,
  jobs: Record<string, { job: FlashJobDto }>,
): { ok: number; failed: number; refused: number; running: number } {
  const out = { ok: 0, failed: 0, refused: 0, running: 0 };
  for (const r of m.rows) {
    const job = r.jobId ? jobs[r.jobId]?.job : undefined;
    if (!r.jobId) out.refused++;
    else if (!job || !isFinal(job)) out.running++;
    else if (job.state === 'SUCCESS') out.ok++;
    else out.failed++;
  }
  return out;
}

export function MultiFlashView({ multiId }: { multiId: string }) {
  const { t } = useTranslation('flash');
  const snap = useSnapshot(flash);
  const m = snap.multis[multiId] as MultiFlash | undefined;
  if (!m) return null;
  const sum = multiSummary(m, snap.jobs as Record<string, { job: FlashJobDto }>);
  return (
    <div className="space-y-3" data-testid="multi-flash" data-multi-id={multiId}>
      <p className="text-xs text-zinc-500" aria-live="polite" data-testid="multi-summary">
        {t('multi.summary', { ok: sum.ok, failed: sum.failed, refused: sum.refused, running: sum.running })}
      </p>
      <div className="overflow-x-auto rounded-md border border-zinc-200 dark:border-zinc-800">
        <table className="w-full text-left text-[13px]">
          <thead className="border-b border-zinc-100 bg-zinc-50/60 text-[11px] tracking-wide text-zinc-500 uppercase dark:border-zinc-800 dark:bg-zinc-900/60">
            <tr>
              <th className="px-3 py-2 font-medium">{t('multi.board')}</th>
              <th className="px-3 py-2 font-medium">{t('multi.step')}</th>
              <th className="w-40 px-3 py-2 font-medium">{t('multi.progress')}</th>
              <th className="px-3 py-2 font-medium">{t('multi.result')}</th>
              <th className="px-3 py-2">
                <span className="sr-only">{t('multi.actions')}</span>
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {m.rows.map((r) => {
              const job = r.jobId ? (snap.jobs[r.jobId]?.job as FlashJobDto | undefined) : undefined;
              return (
                <Row
                  key={r.deviceId}
                  multiId={multiId}
                  deviceId={r.deviceId}
                  name={r.serverName}
                  job={job}
                  refusal={r.jobId ? null : { key: r.errorKey, message: r.message }}
                />
              );
            })}
          </tbody>
        </table>
      </div>
      <p className="text-[11px] text-zinc-400">{t('multi.hint')}</p>
    </div>
  );
}

function Row({
  multiId,
  deviceId,
  name,
  job,
  refusal,
}: {
  multiId: string;
  deviceId: string;
  name: string;
  job: FlashJobDto | undefined;
  refusal: { key: string | null; message: string | null } | null;
}) {
  const { t } = useTranslation('flash');
  const pct = job ? shownPercent(job) : 0;
  const tone = job ? resultTone(job.state) : 'danger';
  const state = refusal ? 'REFUSED' : (job?.state ?? 'PENDING');
  return (
    <tr
      data-testid="multi-row"
      data-device-id={deviceId}
      data-job-id={job?.jobId ?? ''}
      data-name={name}
      data-state={state}
      data-percent={pct}
    >
      <td className="px-3 py-2 font-medium whitespace-nowrap text-zinc-900 dark:text-zinc-100">{name}</td>
      <td className="px-3 py-2 whitespace-nowrap text-zinc-600 dark:text-zinc-300">
        {refusal
          ? '—'
          : job
            ? isFinal(job)
              ? t(`state.${job.state}`)
              : job.state === 'PENDING'
                ? t('stage.queued')
                : t(`stage.${job.stage}`)
            : ''}
      </td>
      <td className="px-3 py-2">
        {refusal ? null : (
          <div className="flex items-center gap-2">
            <div
              role="progressbar"
              aria-label={t('multi.progressOf', { name })}
              aria-valuemin={0}
              aria-valuemax={100}
              aria-valuenow={pct}
              className="h-1.5 flex-1 overflow-hidden rounded-full bg-zinc-100 dark:bg-zinc-800"
            >
              <div
                className={cx(
                  'h-full rounded-full transition-[width] duration-300',
                  tone === 'success'
                    ? 'bg-emerald-500'
                    : tone === 'danger'
                      ? 'bg-red-500'
                      : tone === 'info'
                        ? 'bg-zinc-400'
                        : 'bg-violet-500',
                )}
                style={{ width: `${pct}%` }}
              />
            </div>
            <span className="w-9 text-right font-mono text-xs tabular-nums" data-testid="multi-percent">
              {pct}%
            </span>
          </div>
        )}
      </td>
      <td className="px-3 py-2 text-xs" data-testid="multi-result">
        {refusal ? (
          <span className="text-red-700 dark:text-red-400">
            {t('multi.refused', {
              error: errorWords(
                refusal.key,
                refusal.message,
                (k, p) => tt(k, p as Record<string, string>),
                hasFlashKey,
              ),
            })}
          </span>
        ) : job && isFinal(job) ? (
          job.state === 'SUCCESS' ? (
            <span className="text-emerald-700 dark:text-emerald-400">{t('multi.ok')}</span>
          ) : job.state === 'CANCELLED' ? (
            <span className="text-zinc-600 dark:text-zinc-300">{t('state.CANCELLED')}</span>
          ) : (
            <span className="text-red-700 dark:text-red-400">{jobErrorText(job)}</span>
          )
        ) : (
          <span className="text-zinc-400">{t('multi.running')}</span>
        )}
      </td>
      <td className="px-3 py-2 text-right whitespace-nowrap">
        {job ? (
          <span className="flex justify-end gap-1">
            {canCancel(job) ? (
              <Button size="sm" variant="ghost" onClick={() => void cancelJob(job.jobId).catch(() => {})}>
                {t('job.cancel')}
              </Button>
            ) : null}
            <Button size="sm" variant="ghost" onClick={() => openJob(deviceId, multiId)}>
              {t('multi.details')}
            </Button>
          </span>
        ) : null}
      </td>
    </tr>
  );
}
