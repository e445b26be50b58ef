// /dashboard/dashboard: counts of boards by state (store-all-num, store-state-num), the user's leases
// with time left, and the 10 most recent applies.
import { useEffect } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { BOARD_STATES, type BoardState } from '#shared/boards.ts';
import type { ApplyHistoryItem, LeaseDto } from '#shared/leases.ts';
import { Loadable, SkeletonRows } from '#web/boards/Loadable.tsx';
import { StateBadge } from '#web/boards/StateBadge.tsx';
import { boards, leases, loadCounts, loadLeases, loadRecentApplies, remainingAt } from '#web/boards/store.ts';
import { dateTimeText, timeLeftText, usePerfNow } from '#web/boards/time.ts';
import { Button, Card, cx } from '#web/components/ui.tsx';
import { useNavigate } from '#web/router/router.tsx';
import { installDeviceCommands } from './commands.ts';

const bar: Record<BoardState, string> = {
  idle: 'bg-emerald-500',
  leased: 'bg-sky-500',
  flashing: 'bg-violet-500',
  resetting: 'bg-amber-500',
  offline: 'bg-zinc-400',
  maintenance: 'bg-orange-500',
};

export default function DashboardPage() {
  const { t } = useTranslation('devices');
  const navigate = useNavigate();
  const b = useSnapshot(boards);
  const l = useSnapshot(leases);

  useEffect(() => {
    installDeviceCommands();
    void loadCounts();
    void loadLeases();
    void loadRecentApplies();
  }, []);

  return (
    <div className="space-y-5" data-testid="dashboard">
      <Card className="p-4">
        <Loadable req={b.counts as typeof boards.counts} onRetry={() => void loadCounts()}>
          {(counts) => (
            <div>
              <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
                <span
                  className="text-3xl font-semibold tabular-nums text-zinc-900 dark:text-zinc-50"
                  data-testid="count-total"
                >
                  {counts.total}
                </span>
                <span className="text-[13px] text-zinc-500">{t('dashboard.total')}</span>
                <span className="text-[13px] text-emerald-600 dark:text-emerald-400">
                  · {counts.states.idle ?? 0} {t('dashboard.freeHint')}
                </span>
              </div>
              <div
                className="mt-3 flex h-2 overflow-hidden rounded-full bg-zinc-100 dark:bg-zinc-800"
                aria-hidden="true"
              >
                {BOARD_STATES.map((s) =>
                  counts.total > 0 && (counts.states[s] ?? 0) > 0 ? (
                    <div
                      key={s}
                      className={bar[s]}
                      style={{ width: `${((counts.states[s] ?? 0) / counts.total) * 100}%` }}
                    />
                  ) : null,
                )}
              </div>
              <dl className="mt-4 grid grid-cols-2 gap-3 sm:grid-cols-3 lg:grid-cols-6">
                {BOARD_STATES.map((s) => (
                  <div
                    key={s}
                    className="rounded-md border border-zinc-100 px-3 py-2 dark:border-zinc-800"
                    data-testid={`count-${s}`}
                  >
                    <dt className="flex items-center gap-1.5 text-[11px] text-zinc-500">
                      <span className={cx('h-1.5 w-1.5 rounded-full', bar[s])} />
                      {t(`state.${s}`)}
                    </dt>
                    <dd className="mt-0.5 text-lg font-semibold tabular-nums text-zinc-900 dark:text-zinc-100">
                      {counts.states[s] ?? 0}
                    </dd>
                  </div>
                ))}
              </dl>
            </div>
          )}
        </Loadable>
      </Card>

      <div className="grid gap-5 lg:grid-cols-2">
        <Card className="overflow-hidden">
          <header className="flex min-h-12 items-center justify-between border-b border-zinc-100 px-4 py-2 dark:border-zinc-800">
            <h2 className="text-[13px] font-semibold text-zinc-900 dark:text-zinc-100">
              {t('dashboard.leases')}
            </h2>
            <Button size="sm" variant="ghost" onClick={() => navigate('/mainboard')}>
              {t('dashboard.goMainboard')}
            </Button>
          </header>
          <Loadable
            req={l.mine as typeof leases.mine}
            onRetry={() => void loadLeases()}
            skeleton={<SkeletonRows />}
          >
            {(data) =>
              data.items.length === 0 ? (
                <p className="px-4 py-8 text-center text-[13px] text-zinc-500">
                  {t('dashboard.leasesEmpty')}
                </p>
              ) : (
                <ul className="divide-y divide-zinc-100 dark:divide-zinc-800" data-testid="dashboard-leases">
                  {data.items.map((x) => (
                    <LeaseLine key={x.leaseId} lease={x as LeaseDto} receivedAt={data.receivedAt} />
                  ))}
                </ul>
              )
            }
          </Loadable>
        </Card>

        <Card className="overflow-hidden">
          <header className="flex min-h-12 items-center border-b border-zinc-100 px-4 py-2 dark:border-zinc-800">
            <h2 className="text-[13px] font-semibold text-zinc-900 dark:text-zinc-100">
              {t('dashboard.recent')}
            </h2>
          </header>
          <Loadable
            req={l.recent as typeof leases.recent}
            onRetry={() => void loadRecentApplies()}
            skeleton={<SkeletonRows />}
          >
            {(items) =>
              items.length === 0 ? (
                <p className="px-4 py-8 text-center text-[13px] text-zinc-500">
                  {t('dashboard.recentEmpty')}
                </p>
              ) : (
                <ul className="divide-y divide-zinc-100 dark:divide-zinc-800" data-testid="recent-applies">
                  {items.map((a) => (
                    <ApplyLine key={a.applyId} item={a as ApplyHistoryItem} />
                  ))}
                </ul>
              )
            }
          </Loadable>
        </Card>
      </div>
    </div>
  );
}

function LeaseLine({ lease, receivedAt }: { lease: LeaseDto; receivedAt: number }) {
  const { t } = useTranslation('devices');
  const now = usePerfNow(1000);
  return (
    <li className="flex items-center gap-3 px-4 py-2.5">
      <div className="min-w-0 flex-1">
        <div className="truncate text-[13px] font-medium text-zinc-900 dark:text-zinc-100">
          {lease.serverName}
        </div>
        <div className="truncate text-xs text-zinc-500">
          {[lease.boardName, lease.model].filter(Boolean).join(' · ')}
        </div>
      </div>
      <StateBadge state={lease.boardState} />
      <span className="w-36 shrink-0 text-right font-mono text-xs whitespace-nowrap tabular-nums text-zinc-700 dark:text-zinc-300">
        {timeLeftText(t, remainingAt(lease, receivedAt, now))}
      </span>
    </li>
  );
}

function ApplyLine({ item }: { item: ApplyHistoryItem }) {
  const { t, i18n } = useTranslation('devices');
  return (
    <li className="flex items-center gap-3 px-4 py-2.5">
      <div className="min-w-0 flex-1">
        <div className="truncate text-[13px] font-medium text-zinc-900 dark:text-zinc-100">
          {item.serverName}
        </div>
        <div className="truncate text-xs text-zinc-500">
          {t('dashboard.openedAt')} {dateTimeText(i18n.language, item.openedAt)}
          {item.closedAt ? ` · ${t('dashboard.closedAt')} ${dateTimeText(i18n.language, item.closedAt)}` : ''}
        </div>
      </div>
      <span
        className={cx(
          'rounded-full px-2 py-0.5 text-[11px] font-medium',
          item.open
            ? 'bg-emerald-50 text-emerald-700 dark:bg-emerald-500/10 dark:text-emerald-300'
            : 'bg-zinc-100 text-zinc-600 dark:bg-zinc-800 dark:text-zinc-400',
        )}
      >
        {item.open
          ? t('dashboard.open')
          : item.closeReason && ['unapplied', 'released', 'expired'].includes(item.closeReason)
            ? t(`dashboard.closeReason.${item.closeReason}`)
            : t('dashboard.closedAt')}
      </span>
    </li>
  );
}
