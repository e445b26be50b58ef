// Boards and the lab: every board with its state, health and where it is declared (lab file, default
// lab or this console); add one (its declaration as the lab file takes it), change its name, model,
// attributes or driver options, put it into maintenance and back, retire it, and a riscv64 board's
// network policy (egress none or nat, an allow list).
import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { AdminBoardDto } from '#shared/boards.ts';
import { StateBadge } from '#web/boards/StateBadge.tsx';
import { relativeText } from '#web/boards/time.ts';
import { Button } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { B, call, useAdminAccess, useLoad } from './api.ts';
import { BoardDialog, type BoardEditing } from './BoardDialogs.tsx';
import { useIntent } from './state.ts';
import { cell, DataTable, RowActions, Toolbar } from './ui.tsx';

export function BoardsSection() {
  const { t, i18n } = useTranslation('admin');
  const access = useAdminAccess();
  const [retired, setRetired] = useState(false);
  const [req, reload] = useLoad(
    () => call(B.adminBoardsList, { includeRetired: retired ? 'true' : undefined }).then((r) => r.items),
    [retired],
  );
  const [editing, setEditing] = useState<BoardEditing | null>(null);
  useIntent('board.create', () => setEditing({ kind: 'add' }));

  const maintenance = async (b: AdminBoardDto, on: boolean) => {
    await call(B.adminBoardsMaintenance, { deviceId: b.deviceId, on });
    notify('success', t(on ? 'boards.maintenanceOn' : 'boards.maintenanceOff', { name: b.name }));
    reload();
  };

  return (
    <section data-testid="admin-boards">
      <Toolbar
        onRefresh={reload}
        add={
          access.can('device.add_device') && {
            icon: 'board',
            label: t('boards.add'),
            testId: 'admin-board-add',
            onClick: () => setEditing({ kind: 'add' }),
          }
        }
      >
        <label className="flex items-center gap-1.5 text-[13px] text-zinc-600 dark:text-zinc-300">
          <input type="checkbox" checked={retired} onChange={(e) => setRetired(e.target.checked)} />
          {t('boards.showRetired')}
        </label>
      </Toolbar>
      <DataTable
        req={req}
        onRetry={reload}
        testId="admin-board-table"
        empty={{ icon: 'board', title: t('boards.empty') }}
        head={[t('boards.board'), t('boards.driver'), t('boards.state'), t('boards.health'), '']}
        rows={(items) =>
          items.map((b) => (
            <tr key={b.deviceId} data-testid="admin-board-row" data-device-id={b.deviceId}>
              <td className={cell}>
                <div className="font-medium text-zinc-900 dark:text-zinc-100">{b.name}</div>
                <div className="font-mono text-xs text-zinc-500">
                  {b.deviceId} · {b.model || '—'}
                </div>
              </td>
              <td className={cell}>
                <div>{b.driver}</div>
                <div className="text-xs text-zinc-500">{t(`boards.source.${b.source}`)}</div>
              </td>
              <td className={cell}>
                {b.retiredAt ? (
                  <span className="text-zinc-500">{t('boards.retired')}</span>
                ) : (
                  <StateBadge state={b.state} />
                )}
                {b.stateReason ? <div className="mt-1 text-xs text-zinc-500">{b.stateReason}</div> : null}
              </td>
              <td className={`${cell} text-xs text-zinc-600 dark:text-zinc-300`}>
                <div>
                  {b.running ? t('boards.running') : t('boards.stopped')}
                  {b.lastSeenAt ? ` · ${relativeText(i18n.language, b.lastSeenAt)}` : ''}
                </div>
                {b.consecutiveFailures ? (
                  <div className="text-red-600">{t('boards.failures', { count: b.consecutiveFailures })}</div>
                ) : null}
                {b.lastError ? (
                  <div className="max-w-56 truncate text-zinc-500" title={b.lastError}>
                    {b.lastError}
                  </div>
                ) : null}
              </td>
              <RowActions wrap>
                {b.retiredAt ? null : (
                  <>
                    <Button size="sm" onClick={() => setEditing({ kind: 'change', board: b })}>
                      {t('common.edit')}
                    </Button>
                    <Button
                      size="sm"
                      onClick={() => void maintenance(b, b.state !== 'maintenance').catch(() => {})}
                      data-testid="admin-board-maintenance"
                    >
                      {b.state === 'maintenance' ? t('boards.endMaintenance') : t('boards.maintenance')}
                    </Button>
                    {b.driver === 'qemu' ? (
                      <Button size="sm" onClick={() => setEditing({ kind: 'network', board: b })}>
                        {t('boards.network')}
                      </Button>
                    ) : null}
                    {access.can('device.del_device') ? (
                      <Button
                        size="sm"
                        variant="ghost"
                        onClick={() => setEditing({ kind: 'retire', board: b })}
                      >
                        {t('boards.retire')}
                      </Button>
                    ) : null}
                  </>
                )}
              </RowActions>
            </tr>
          ))
        }
      />
      <BoardDialog editing={editing} onClose={() => setEditing(null)} onDone={reload} />
    </section>
  );
}
