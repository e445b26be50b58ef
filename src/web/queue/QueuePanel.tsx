// The waiting line in the console: one entry (position, estimate, how long it waits, Leave the line)
// as /riscvhouse shows it right after joining, and the list of the user's places in line (with the
// latest ended ones) that /mainboard shows above the held boards. Positions and estimates move live
// (queue.position notifications update the store).
import { useEffect } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import type { QueueEntryDto } from '#shared/queue.ts';
import { messageOf } from '#web/boards/store.ts';
import { dateTimeText, relativeText } from '#web/boards/time.ts';
import { Button, Card, cx } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { cancelQueue, loadQueue, queue } from './state.ts';

export async function leaveLine(
  entry: Pick<QueueEntryDto, 'entryId' | 'serverName'>,
  t: (k: string, o?: Record<string, unknown>) => string,
) {
  try {
    const done = await cancelQueue(entry.entryId);
    if (done) notify('info', t('queue:cancelled', { name: entry.serverName }));
  } catch (err) {
    notify('error', t('queue:cancelFailed', { name: entry.serverName, error: messageOf(err) }));
  }
}

function filterText(
  t: (k: string, o?: Record<string, unknown>) => string,
  f: Record<string, unknown>,
): string {
  const parts = Object.entries(f).map(
    ([k, v]) =>
      `${k}=${Array.isArray(v) ? v.join('|') : typeof v === 'object' ? JSON.stringify(v) : String(v)}`,
  );
  return parts.length ? parts.join(', ') : t('queue:anyBoard');
}

/** One waiting entry: its place, the estimate, until when it waits, and Leave the line. */
export function QueueEntryView({ entry, autoFocus }: { entry: QueueEntryDto; autoFocus?: boolean }) {
  const { t, i18n } = useTranslation('queue');
  const busy = useSnapshot(queue).busy[entry.entryId];
  const lng = i18n.language;
  return (
    <div
      className="flex flex-wrap items-start justify-between gap-3"
      data-testid="queue-entry"
      data-entry-id={entry.entryId}
    >
      <div className="min-w-0 space-y-0.5 text-[13px]">
        <div className="flex items-baseline gap-2">
          <span className="font-medium text-zinc-900 dark:text-zinc-100">{entry.serverName}</span>
          <span
            className="rounded bg-zinc-100 px-1.5 py-0.5 text-[11px] font-semibold text-zinc-700 dark:bg-zinc-800 dark:text-zinc-200"
            data-testid="queue-position"
          >
            {t('position', { position: entry.position ?? '–' })}
          </span>
          <span className="text-xs text-zinc-500">{t(`devices:duration.${entry.durationKey}`)}</span>
        </div>
        <div className="text-xs text-zinc-500 dark:text-zinc-400">{filterText(t, entry.filterReq)}</div>
        <div className="text-zinc-700 dark:text-zinc-300" data-testid="queue-estimate">
          {entry.estimateAt
            ? t('estimate', {
                date: dateTimeText(lng, entry.estimateAt),
                relative: relativeText(lng, entry.estimateAt),
              })
            : t('noEstimate')}
        </div>
        <div className="text-xs text-zinc-500 dark:text-zinc-400">
          {t('expires', { date: dateTimeText(lng, entry.expiresAt) })}
        </div>
      </div>
      <Button
        size="sm"
        icon="x"
        loading={!!busy}
        autoFocus={autoFocus}
        onClick={() => void leaveLine(entry, t)}
        data-testid="queue-cancel"
      >
        {t('cancel')}
      </Button>
    </div>
  );
}

/** The user's places in line and the latest ended ones; nothing when there are none. */
export function WaitingList({ className }: { className?: string }) {
  const { t, i18n } = useTranslation('queue');
  const snap = useSnapshot(queue);
  useEffect(() => {
    void loadQueue();
  }, []);
  const data =
    snap.list.status === 'ok' ? snap.list.data : snap.list.status !== 'idle' ? snap.list.previous : undefined;
  if (!data || (data.items.length === 0 && data.recent.length === 0)) return null;
  const recent = data.recent.slice(0, 3);
  return (
    <Card className={cx('p-4', className)}>
      <section aria-labelledby="queue-title" data-testid="queue-panel">
        <div className="mb-2 flex items-baseline justify-between gap-2">
          <h2 id="queue-title" className="text-[13px] font-semibold text-zinc-900 dark:text-zinc-100">
            {t('title')}
          </h2>
          <span className="text-xs text-zinc-500">{t('hint')}</span>
        </div>
        {data.items.length === 0 ? (
          <p className="text-[13px] text-zinc-500">{t('none')}</p>
        ) : (
          <ul className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {data.items.map((e) => (
              <li key={e.entryId} className="py-2 first:pt-0 last:pb-0">
                <QueueEntryView entry={e as QueueEntryDto} />
              </li>
            ))}
          </ul>
        )}
        {recent.length ? (
          <div className="mt-3 border-t border-zinc-100 pt-2 dark:border-zinc-800">
            <h3 className="mb-1 text-[11px] font-medium tracking-wide text-zinc-500 uppercase">
              {t('recent')}
            </h3>
            <ul className="space-y-0.5 text-xs text-zinc-600 dark:text-zinc-400" data-testid="queue-recent">
              {recent.map((e) => (
                <li key={e.entryId}>
                  {t(`state.${e.state}`, { name: e.serverName })}
                  {e.endedAt ? (
                    <span className="text-zinc-400"> · {dateTimeText(i18n.language, e.endedAt)}</span>
                  ) : null}
                </li>
              ))}
            </ul>
          </div>
        ) : null}
      </section>
    </Card>
  );
}
