// The flash dialogs, hosted once at the root so the palette opens them on any page: the wizard (pick
// boards and image, confirm), a board's job (when no workbench pane shows it), a multi-flash table and
// a board's flash history. Which one is open lives in the store (`flash.dialog`).
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import type { FlashJobDto } from '#shared/flash.ts';
import { Loadable, SkeletonRows } from '#web/boards/Loadable.tsx';
import { idle, type Req } from '#web/boards/store.ts';
import { dateTimeText } from '#web/boards/time.ts';
import { Modal } from '#web/components/Modal.tsx';
import { Button, cx } from '#web/components/ui.tsx';
import { FlashJobView } from './FlashJobView.tsx';
import { FlashWizard } from './FlashWizard.tsx';
import { durationText, isFinal, resultTone } from './format.ts';
import { MultiFlashView } from './MultiFlashView.tsx';
import {
  boardName,
  closeFlashDialog,
  flash,
  type HistoryList,
  jobErrorText,
  latestJob,
  loadHistory,
  openHistory,
} from './state.ts';

export default function FlashHost() {
  const { t } = useTranslation('flash');
  const snap = useSnapshot(flash);
  const d = snap.dialog;
  if (!d) return null;
  if (d.kind === 'wizard')
    return (
      <FlashWizard key={`w-${d.mode}-${d.deviceIds.join(',')}`} mode={d.mode} deviceIds={[...d.deviceIds]} />
    );
  if (d.kind === 'job') {
    const job = latestJob(d.deviceId)?.job;
    const name = boardName(d.deviceId, job?.serverName);
    return (
      <Modal
        open
        onClose={closeFlashDialog}
        title={t('job.title', { name })}
        width="max-w-2xl"
        closeLabel={t('job.close')}
        testId="flash-job-dialog"
        footer={
          <>
            {d.multiId ? (
              <Button
                icon="chevronLeft"
                variant="ghost"
                onClick={() => {
                  flash.dialog = { kind: 'multi', multiId: d.multiId as string };
                }}
              >
                {t('multi.backToAll')}
              </Button>
            ) : null}
            <Button icon="book" variant="ghost" onClick={() => openHistory(d.deviceId)}>
              {t('history.open')}
            </Button>
            <Button onClick={closeFlashDialog} autoFocus data-testid="flash-job-close">
              {job && !isFinal(job) ? t('job.hide') : t('job.close')}
            </Button>
          </>
        }
      >
        <div className="h-[min(60vh,520px)]">
          <FlashJobView deviceId={d.deviceId} />
        </div>
      </Modal>
    );
  }
  if (d.kind === 'multi') {
    const m = snap.multis[d.multiId];
    return (
      <Modal
        open
        onClose={closeFlashDialog}
        title={t('multi.title', { count: m?.rows.length ?? 0, image: m?.imageName ?? m?.imageTag ?? '' })}
        width="max-w-3xl"
        closeLabel={t('job.close')}
        testId="flash-multi-dialog"
        footer={
          <Button onClick={closeFlashDialog} autoFocus>
            {t('job.close')}
          </Button>
        }
      >
        <MultiFlashView multiId={d.multiId} />
      </Modal>
    );
  }
  return <HistoryDialog deviceId={d.deviceId} />;
}

function HistoryDialog({ deviceId }: { deviceId: string }) {
  const { t } = useTranslation('flash');
  const snap = useSnapshot(flash);
  const req = (snap.history[deviceId] ?? idle<HistoryList>()) as Req<HistoryList>;
  const name = boardName(deviceId);
  return (
    <Modal
      open
      onClose={closeFlashDialog}
      title={t('history.title', { name })}
      width="max-w-3xl"
      closeLabel={t('job.close')}
      testId="flash-history-dialog"
      footer={
        <Button onClick={closeFlashDialog} autoFocus>
          {t('job.close')}
        </Button>
      }
    >
      <FlashHistoryTable req={req} onRetry={() => void loadHistory(deviceId)} />
    </Modal>
  );
}

export function FlashHistoryTable({ req, onRetry }: { req: Req<HistoryList>; onRetry: () => void }) {
  const { t, i18n } = useTranslation('flash');
  return (
    <Loadable req={req} onRetry={onRetry} skeleton={<SkeletonRows rows={3} />}>
      {(data) =>
        data.items.length === 0 ? (
          <p className="py-6 text-center text-zinc-500" data-testid="flash-history-empty">
            {t('history.empty')}
          </p>
        ) : (
          <div className="max-h-[60vh] overflow-auto rounded-md border border-zinc-200 dark:border-zinc-800">
            <table className="w-full text-left text-[13px]" data-testid="flash-history">
              <thead className="sticky top-0 border-b border-zinc-100 bg-zinc-50 text-[11px] tracking-wide text-zinc-500 uppercase dark:border-zinc-800 dark:bg-zinc-900">
                <tr>
                  <th className="px-3 py-2 font-medium">{t('history.when')}</th>
                  <th className="px-3 py-2 font-medium">{t('history.who')}</th>
                  <th className="px-3 py-2 font-medium">{t('history.image')}</th>
                  <th className="px-3 py-2 font-medium">{t('history.result')}</th>
                  <th className="px-3 py-2 text-right font-medium">{t('history.duration')}</th>
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                {data.items.map((j) => (
                  <HistoryRow key={j.jobId} job={j as FlashJobDto} lng={i18n.language} />
                ))}
              </tbody>
            </table>
          </div>
        )
      }
    </Loadable>
  );
}

const badge: Record<ReturnType<typeof resultTone>, string> = {
  success: 'bg-emerald-50 text-emerald-700 ring-emerald-600/20 dark:bg-emerald-500/10 dark:text-emerald-300',
  danger: 'bg-red-50 text-red-700 ring-red-600/20 dark:bg-red-500/10 dark:text-red-300',
  info: 'bg-zinc-100 text-zinc-600 ring-zinc-500/20 dark:bg-zinc-500/10 dark:text-zinc-300',
  running: 'bg-violet-50 text-violet-700 ring-violet-600/20 dark:bg-violet-500/10 dark:text-violet-300',
};

function HistoryRow({ job, lng }: { job: FlashJobDto; lng: string }) {
  const { t } = useTranslation('flash');
  const tone = resultTone(job.state);
  return (
    <tr data-testid="flash-history-row" data-state={job.state}>
      <td className="px-3 py-2 whitespace-nowrap text-zinc-700 dark:text-zinc-300">
        {dateTimeText(lng, job.startedAt ?? job.createdAt)}
      </td>
      <td className="px-3 py-2 whitespace-nowrap">{job.userName}</td>
      <td className="px-3 py-2">
        <span className="font-medium text-zinc-900 dark:text-zinc-100">{job.imageName}</span>{' '}
        <span className="font-mono text-[11px] text-zinc-400">{job.imageTag}</span>
      </td>
      <td className="px-3 py-2">
        <span
          className={cx(
            'inline-flex rounded-full px-2 py-0.5 text-[11px] font-medium ring-1 ring-inset',
            badge[tone],
          )}
        >
          {t(`state.${job.state}`)}
        </span>
        {job.state === 'FAILURE' ? (
          <span className="mt-0.5 block text-xs text-red-700 dark:text-red-400">{jobErrorText(job)}</span>
        ) : null}
      </td>
      <td className="px-3 py-2 text-right whitespace-nowrap tabular-nums">
        {job.durationMs !== null ? durationText(job.durationMs / 1000, t) : '—'}
      </td>
    </tr>
  );
}
