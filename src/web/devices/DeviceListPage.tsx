// /clouddevice/public and /private-clouddevice/private: the board catalogue, or the user's own boards,
// with a search box (fuzzy-query), attribute and state filters and paging (filter-device). The query
// lives in the store per scope, so coming back to the page shows the same page of results.
import { useEffect, useId, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { BOARD_STATES, type BoardDto, type BoardState } from '#shared/boards.ts';
import { BoardFactsLine } from '#web/boards/BoardFacts.tsx';
import { boardFacts } from '#web/boards/facts.ts';
import { Loadable, SkeletonRows } from '#web/boards/Loadable.tsx';
import { StateBadge } from '#web/boards/StateBadge.tsx';
import { boards, dataOf, loadAttributes, loadList, type Scope, setListQuery } from '#web/boards/store.ts';
import { attrLabel, attrValueText } from '#web/boards/time.ts';
import { Icon } from '#web/components/icons.tsx';
import { Button, Card, cx, EmptyState, Input } from '#web/components/ui.tsx';
import { installDeviceCommands } from './commands.ts';

const SEARCH_DEBOUNCE_MS = 250;

export default function DeviceListPage({ scope }: { scope: Scope }) {
  const { t } = useTranslation('devices');
  const snap = useSnapshot(boards);
  const slot = snap.lists[scope];
  const q = slot.query;
  const ids = useId();
  const [keyword, setKeyword] = useState(q.keyword);
  const timer = useRef<number | undefined>(undefined);
  const attributes = dataOf(snap.attributes as typeof boards.attributes) ?? {};

  useEffect(() => {
    installDeviceCommands();
    if (boards.attributes.status === 'idle') void loadAttributes();
    void loadList(scope);
  }, [scope]);

  const apply = (patch: Parameters<typeof setListQuery>[1]) => {
    setListQuery(scope, patch);
    void loadList(scope);
  };

  const onSearch = (v: string) => {
    setKeyword(v);
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(() => apply({ keyword: v.trim() }), SEARCH_DEBOUNCE_MS);
  };

  const hasFilters = !!q.keyword || !!q.state || Object.values(q.filters).some(Boolean);
  const attrEntries = Object.entries(attributes).filter(([, v]) => v.length > 0);
  const selectClass =
    'h-8 max-w-56 rounded-md border border-zinc-200 bg-white px-2 text-[13px] text-zinc-800 focus:border-zinc-400 focus:outline-none focus:ring-2 focus:ring-zinc-900/10 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100';

  return (
    <div className="space-y-4" data-testid={`device-list-${scope}`}>
      <div className="flex flex-wrap items-center gap-2">
        <div className="relative w-full max-w-xs">
          <Icon
            name="search"
            size={14}
            className="pointer-events-none absolute top-1/2 left-2.5 -translate-y-1/2 text-zinc-400"
          />
          <Input
            type="search"
            aria-label={t('list.search')}
            placeholder={t('list.search')}
            value={keyword}
            onChange={(e) => onSearch(e.target.value)}
            className="h-8 pl-8"
            data-testid="list-search"
          />
        </div>
        <select
          aria-label={t('common.state')}
          value={q.state}
          onChange={(e) => apply({ state: e.target.value as BoardState | '' })}
          className={selectClass}
          data-testid="list-state"
        >
          <option value="">{t('list.anyState')}</option>
          {BOARD_STATES.map((s) => (
            <option key={s} value={s}>
              {t(`state.${s}`)}
            </option>
          ))}
        </select>
        {attrEntries.map(([key, values]) => (
          <label
            key={key}
            className="flex items-center gap-1.5 text-xs text-zinc-500"
            htmlFor={`${ids}-${key}`}
          >
            {attrLabel(t, key)}
            <select
              id={`${ids}-${key}`}
              value={q.filters[key] ?? ''}
              onChange={(e) =>
                apply({ filters: { ...boards.lists[scope].query.filters, [key]: e.target.value } })
              }
              className={selectClass}
              data-testid={`filter-${key}`}
            >
              <option value="">{t('common.any')}</option>
              {values.map((v) => (
                <option key={v} value={v}>
                  {attrValueText(t, key, v)}
                </option>
              ))}
            </select>
          </label>
        ))}
        {hasFilters ? (
          <Button
            size="sm"
            variant="ghost"
            icon="x"
            onClick={() => {
              setKeyword('');
              apply({ keyword: '', state: '', filters: {} });
            }}
          >
            {t('list.clear')}
          </Button>
        ) : null}
      </div>

      <Card className="overflow-hidden">
        <Loadable
          req={slot.result as (typeof boards.lists)[Scope]['result']}
          onRetry={() => void loadList(scope)}
          skeleton={<SkeletonRows rows={5} />}
        >
          {(data, reloading) =>
            data.items.length === 0 ? (
              <div className="p-4">
                <EmptyState
                  icon="server"
                  title={
                    hasFilters
                      ? t('list.empty')
                      : scope === 'private'
                        ? t('list.emptyPrivate')
                        : t('list.emptyCatalogue')
                  }
                />
              </div>
            ) : (
              <>
                <table
                  className={cx('w-full text-left text-[13px]', reloading && 'opacity-70')}
                  data-testid="board-table"
                >
                  <thead className="border-b border-zinc-100 bg-zinc-50/60 text-[11px] tracking-wide text-zinc-500 uppercase dark:border-zinc-800 dark:bg-zinc-900/60">
                    <tr>
                      <th className="px-4 py-2 font-medium">{t('common.name')}</th>
                      <th className="px-4 py-2 font-medium">{t('common.model')}</th>
                      <th className="hidden px-4 py-2 font-medium md:table-cell">{t('common.attributes')}</th>
                      <th className="px-4 py-2 font-medium">{t('common.state')}</th>
                    </tr>
                  </thead>
                  <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                    {data.items.map((b) => (
                      <BoardRowView key={b.deviceId} board={b as BoardDto} />
                    ))}
                  </tbody>
                </table>
                <Pager
                  total={data.total}
                  page={q.page}
                  pageSize={q.pageSize}
                  onPage={(page) => apply({ page })}
                />
              </>
            )
          }
        </Loadable>
      </Card>
    </div>
  );
}

function BoardRowView({ board }: { board: BoardDto }) {
  const { t } = useTranslation('devices');
  const facts = boardFacts(board.attributes, board.driver);
  const chip =
    'rounded bg-zinc-100 px-1.5 py-px text-[11px] text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300';
  return (
    <tr data-testid="board-row" data-device-id={board.deviceId}>
      <td className="whitespace-nowrap px-4 py-2.5">
        <div className="font-medium text-zinc-900 dark:text-zinc-100">{board.name}</div>
        <div className="font-mono text-[11px] text-zinc-400">{board.deviceId}</div>
      </td>
      <td className="px-4 py-2.5 text-zinc-600 dark:text-zinc-300">
        <div className="whitespace-nowrap">{board.model}</div>
        <BoardFactsLine facts={facts} className="mt-1 max-w-md" />
      </td>
      <td className="hidden px-4 py-2.5 md:table-cell">
        <div className="flex flex-wrap gap-1">
          {facts.rest.map(([k, v]) => (
            <span key={k} className={chip}>
              {attrLabel(t, k)}: {attrValueText(t, k, v)}
            </span>
          ))}
          {facts.isa ? (
            // The ISA string is long: cut here, whole in the tooltip and in what a selection copies.
            <span className={cx(chip, 'max-w-64 truncate')} title={facts.isa} data-testid="board-isa">
              {attrLabel(t, 'isa')}: <span className="font-mono">{facts.isa}</span>
            </span>
          ) : null}
        </div>
      </td>
      <td className="px-4 py-2.5">
        <StateBadge state={board.state} />
      </td>
    </tr>
  );
}

function Pager({
  total,
  page,
  pageSize,
  onPage,
}: {
  total: number;
  page: number;
  pageSize: number;
  onPage: (p: number) => void;
}) {
  const { t } = useTranslation('devices');
  const pages = Math.max(1, Math.ceil(total / pageSize));
  return (
    <div className="flex items-center justify-between border-t border-zinc-100 px-4 py-2 text-xs text-zinc-500 dark:border-zinc-800">
      <span data-testid="list-total">{t('common.totalBoards', { count: total })}</span>
      <div className="flex items-center gap-2">
        <Button
          size="sm"
          variant="ghost"
          icon="chevronLeft"
          disabled={page <= 1}
          onClick={() => onPage(page - 1)}
        >
          {t('common.prev')}
        </Button>
        <span className="tabular-nums">{t('common.pageOf', { page, pages })}</span>
        <Button size="sm" variant="ghost" disabled={page >= pages} onClick={() => onPage(page + 1)}>
          {t('common.next')}
          <Icon name="chevronRight" size={13} />
        </Button>
      </div>
    </div>
  );
}
