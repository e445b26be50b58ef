// The audit log, newest first, filtered by user, call, result and time; an organisation admin or auditor
// sees their organisation's members' entries (the service scopes it).
import { useId, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { AuditEntryView } from '#shared/user.ts';
import { dateTimeText, fromLocalInput } from '#web/boards/time.ts';
import { Button, Input } from '#web/components/ui.tsx';
import { call, U, useLoad } from './api.ts';
import { cell, DataTable, Pager, Select, Toolbar } from './ui.tsx';

const PAGE_SIZE = 50;

interface Filters {
  user: string;
  action: string;
  result: '' | 'ok' | 'failed' | 'denied';
  since: string;
  until: string;
}

/** A username typed in the filter is looked up (exactly); an id is taken as it is. */
async function userIdOf(typed: string): Promise<string | undefined> {
  const v = typed.trim();
  if (!v) return undefined;
  const found = await call(U.adminUserList, { search: v, page: 1, pageSize: 20 }, { silent: true }).catch(
    () => null,
  );
  return found?.items.find((u) => u.username === v)?.id ?? v;
}

export function AuditSection() {
  const { t, i18n } = useTranslation('admin');
  const ids = useId();
  const [draft, setDraft] = useState<Filters>({ user: '', action: '', result: '', since: '', until: '' });
  const [filters, setFilters] = useState(draft);
  const [page, setPage] = useState(1);
  const [total, setTotal] = useState(0);
  const [req, reload] = useLoad<AuditEntryView[]>(async () => {
    const since = filters.since ? fromLocalInput(filters.since) : null;
    const until = filters.until ? fromLocalInput(filters.until) : null;
    const r = await call(U.adminAuditList, {
      userId: await userIdOf(filters.user),
      action: filters.action.trim() || undefined,
      result: filters.result || undefined,
      since: since?.toISOString(),
      until: until?.toISOString(),
      page,
      pageSize: PAGE_SIZE,
    });
    setTotal(r.total);
    return r.items;
  }, [filters, page]);
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const set = (patch: Partial<Filters>) => setDraft((d) => ({ ...d, ...patch }));

  return (
    <section data-testid="admin-audit">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setPage(1);
          setFilters(draft);
        }}
      >
        <Toolbar onRefresh={reload}>
          <Input
            aria-label={t('audit.user')}
            placeholder={t('audit.user')}
            value={draft.user}
            onChange={(e) => set({ user: e.target.value })}
            className="h-8 max-w-40"
            data-testid="admin-audit-user"
          />
          <Input
            aria-label={t('audit.action')}
            placeholder={t('audit.action')}
            value={draft.action}
            onChange={(e) => set({ action: e.target.value })}
            className="h-8 max-w-48"
            data-testid="admin-audit-action"
          />
          <Select
            aria-label={t('audit.result')}
            value={draft.result}
            onChange={(e) => set({ result: e.target.value as Filters['result'] })}
          >
            <option value="">{t('audit.anyResult')}</option>
            <option value="ok">{t('audit.results.ok')}</option>
            <option value="failed">{t('audit.results.failed')}</option>
            <option value="denied">{t('audit.results.denied')}</option>
          </Select>
          <label
            htmlFor={`${ids}-since`}
            className="flex items-center gap-1.5 text-xs whitespace-nowrap text-zinc-500"
          >
            {t('audit.since')}
            <Input
              id={`${ids}-since`}
              type="datetime-local"
              value={draft.since}
              onChange={(e) => set({ since: e.target.value })}
              className="h-8 w-auto"
            />
          </label>
          <label
            htmlFor={`${ids}-until`}
            className="flex items-center gap-1.5 text-xs whitespace-nowrap text-zinc-500"
          >
            {t('audit.until')}
            <Input
              id={`${ids}-until`}
              type="datetime-local"
              value={draft.until}
              onChange={(e) => set({ until: e.target.value })}
              className="h-8 w-auto"
            />
          </label>
          <Button type="submit" icon="search" data-testid="admin-audit-apply">
            {t('audit.apply')}
          </Button>
        </Toolbar>
      </form>
      <DataTable
        req={req}
        onRetry={reload}
        testId="admin-audit-table"
        empty={{ icon: 'book', title: t('audit.empty') }}
        head={[
          t('audit.at'),
          t('audit.user'),
          t('audit.action'),
          t('audit.target'),
          t('audit.result'),
          t('audit.ip'),
        ]}
        rows={(items) =>
          items.map((a) => (
            <tr key={a.id} data-testid="admin-audit-row" data-action={a.action} data-result={a.result}>
              <td className={`${cell} whitespace-nowrap tabular-nums`}>
                {dateTimeText(i18n.language, a.at)}
              </td>
              <td className={cell}>{a.username ?? '—'}</td>
              <td className={`${cell} font-mono text-xs`}>{a.action}</td>
              <td className={`${cell} text-xs`}>
                {[a.target, a.boardId].filter(Boolean).join(' · ') || '—'}
              </td>
              <td className={cell}>
                <span className={a.result === 'ok' ? '' : 'text-red-600'}>
                  {t(`audit.results.${a.result}`, { defaultValue: a.result })}
                </span>
                {a.detail && typeof a.detail === 'object' && 'error' in a.detail ? (
                  <div className="font-mono text-[11px] text-zinc-500">
                    {String((a.detail as { error: unknown }).error)}
                  </div>
                ) : null}
              </td>
              <td className={`${cell} font-mono text-xs`}>{a.ip ?? '—'}</td>
            </tr>
          ))
        }
      />
      <Pager page={page} pages={pages} onPage={setPage} />
    </section>
  );
}
