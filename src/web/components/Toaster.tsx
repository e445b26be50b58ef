import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { dismiss, notices } from '#web/state/notices.ts';
import { Icon } from './icons.tsx';
import { cx } from './ui.tsx';

export function Toaster() {
  const snap = useSnapshot(notices);
  const { t } = useTranslation('common');
  return (
    <div
      aria-live="polite"
      className="pointer-events-none fixed right-4 bottom-4 z-[60] flex w-80 max-w-[calc(100vw-2rem)] flex-col gap-2"
    >
      {snap.items.map((n) => (
        <div
          key={n.id}
          role={n.kind === 'error' ? 'alert' : 'status'}
          data-testid="notice"
          className={cx(
            'pointer-events-auto flex items-start gap-2.5 rounded-lg border bg-white px-3 py-2.5 text-[13px] shadow-lg dark:bg-zinc-900',
            n.kind === 'error'
              ? 'border-red-200 text-red-800 dark:border-red-900/70 dark:text-red-300'
              : n.kind === 'success'
                ? 'border-emerald-200 text-emerald-800 dark:border-emerald-900/70 dark:text-emerald-300'
                : 'border-zinc-200 text-zinc-800 dark:border-zinc-700 dark:text-zinc-200',
          )}
        >
          <Icon
            name={n.kind === 'error' ? 'alert' : n.kind === 'success' ? 'check' : 'info'}
            size={15}
            className="mt-0.5 shrink-0"
          />
          <span className="min-w-0 flex-1 break-words">{n.text}</span>
          <button
            type="button"
            onClick={() => dismiss(n.id)}
            aria-label={t('actions.dismiss')}
            className="shrink-0 rounded text-zinc-400 hover:text-zinc-700 dark:hover:text-zinc-200"
          >
            <Icon name="x" size={14} />
          </button>
        </div>
      ))}
    </div>
  );
}
