// A board's state as a small coloured badge; the colour says whether it can be used now.
import { useTranslation } from 'react-i18next';
import type { BoardState } from '#shared/boards.ts';
import { usePulse } from '#web/components/pulse.ts';
import { cx } from '#web/components/ui.tsx';

const tone: Record<BoardState, string> = {
  idle: 'bg-emerald-50 text-emerald-700 ring-emerald-600/20 dark:bg-emerald-500/10 dark:text-emerald-300 dark:ring-emerald-400/20',
  leased: 'bg-sky-50 text-sky-700 ring-sky-600/20 dark:bg-sky-500/10 dark:text-sky-300 dark:ring-sky-400/20',
  flashing:
    'bg-violet-50 text-violet-700 ring-violet-600/20 dark:bg-violet-500/10 dark:text-violet-300 dark:ring-violet-400/20',
  resetting:
    'bg-amber-50 text-amber-800 ring-amber-600/20 dark:bg-amber-500/10 dark:text-amber-300 dark:ring-amber-400/20',
  offline:
    'bg-zinc-100 text-zinc-600 ring-zinc-500/20 dark:bg-zinc-500/10 dark:text-zinc-400 dark:ring-zinc-400/20',
  maintenance:
    'bg-orange-50 text-orange-800 ring-orange-600/20 dark:bg-orange-500/10 dark:text-orange-300 dark:ring-orange-400/20',
};

const dot: Record<BoardState, string> = {
  idle: 'bg-emerald-500',
  leased: 'bg-sky-500',
  flashing: 'bg-violet-500 pulse-step',
  resetting: 'bg-amber-500 pulse-step',
  offline: 'bg-zinc-400',
  maintenance: 'bg-orange-500',
};

export function StateBadge({ state, className }: { state: BoardState; className?: string }) {
  const { t } = useTranslation('devices');
  usePulse(state === 'flashing' || state === 'resetting');
  return (
    <span
      data-state={state}
      className={cx(
        'inline-flex items-center gap-1.5 rounded-full px-2 py-0.5 text-[11px] font-medium ring-1 ring-inset whitespace-nowrap',
        tone[state],
        className,
      )}
    >
      <span className={cx('h-1.5 w-1.5 rounded-full', dot[state])} aria-hidden="true" />
      {t(`state.${state}`)}
    </span>
  );
}
