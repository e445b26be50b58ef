// Uploads and downloads in progress and finished, newest first: a progress bar per file, bytes so
// far, and a cancel button while running. A download with no known length shows an indeterminate bar.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { usePulse } from '#web/components/pulse.ts';
import { cx, IconButton } from '#web/components/ui.tsx';
import { formatSize, percent } from './format.ts';
import { cancelTransfer, clearFinished, transfers } from './state.ts';

export interface TransferListProps {
  className?: string;
  /** A short list (at most five rows) for the bottom of the tree pane. */
  compact?: boolean;
}

export function TransferList({ className, compact }: TransferListProps) {
  const { t, i18n } = useTranslation('files');
  const snap = useSnapshot(transfers);
  usePulse(snap.items.some((x) => x.status === 'running' && percent(x.loaded, x.total) === null));
  if (!snap.items.length) return null;
  const items = compact ? snap.items.slice(0, 5) : snap.items;
  const lng = i18n.language;
  return (
    <section
      className={cx('px-2 py-1.5 text-xs', className)}
      aria-label={t('transfers.title')}
      data-testid="transfer-list"
    >
      <div className="mb-1 flex items-center justify-between text-[11px] font-medium tracking-wide text-zinc-400 uppercase">
        <span>{t('transfers.title')}</span>
        {snap.items.some((x) => x.status !== 'running') ? (
          <button
            type="button"
            className="normal-case hover:text-zinc-700 dark:hover:text-zinc-200"
            onClick={clearFinished}
          >
            {t('transfers.clear')}
          </button>
        ) : null}
      </div>
      <ul className="space-y-1.5">
        {items.map((x) => {
          const pct = percent(x.loaded, x.total);
          return (
            <li
              key={x.id}
              data-testid="transfer-item"
              data-status={x.status}
              data-kind={x.kind}
              className="flex items-center gap-2"
            >
              <span aria-hidden="true" className="w-3 shrink-0 text-zinc-400">
                {x.kind === 'upload' ? '↑' : '↓'}
              </span>
              <div className="min-w-0 flex-1">
                <div className="flex items-baseline justify-between gap-2">
                  <span className="truncate" title={x.target}>
                    {x.name}
                  </span>
                  <span className="shrink-0 text-[11px] text-zinc-500 tabular-nums">
                    {x.status === 'running'
                      ? `${formatSize(x.loaded, lng)}${x.total ? ` / ${formatSize(x.total, lng)}` : ''}`
                      : t(`transfers.status.${x.status}`)}
                  </span>
                </div>
                <div
                  role="progressbar"
                  aria-label={x.name}
                  aria-valuemin={0}
                  aria-valuemax={100}
                  aria-valuenow={x.status === 'done' ? 100 : (pct ?? undefined)}
                  className="mt-0.5 h-1 overflow-hidden rounded-full bg-zinc-100 dark:bg-zinc-800"
                >
                  <div
                    className={cx(
                      'h-full rounded-full transition-[width]',
                      x.status === 'failed'
                        ? 'bg-red-500'
                        : x.status === 'cancelled'
                          ? 'bg-zinc-400'
                          : 'bg-sky-500',
                      x.status === 'running' && pct === null && 'w-1/3 pulse-step',
                    )}
                    style={
                      x.status === 'running' && pct === null
                        ? undefined
                        : { width: `${x.status === 'done' ? 100 : (pct ?? 0)}%` }
                    }
                  />
                </div>
                {x.error ? (
                  <p className="mt-0.5 truncate text-[11px] text-red-600 dark:text-red-400">{x.error}</p>
                ) : null}
              </div>
              {x.status === 'running' ? (
                <IconButton
                  icon="x"
                  size={12}
                  className="h-6 w-6"
                  label={t('transfers.cancel', { name: x.name })}
                  onClick={() => cancelTransfer(x.id)}
                  data-testid="transfer-cancel"
                />
              ) : null}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
