// Board hosts (issue 37, docs/board-hosts.md): the machines that run boards away from the service and dial
// in. Each host with its health, live links, when it was last seen, its version and address, and its
// boards with their states; add one (its credential is shown this once, with the command that runs it)
// and revoke one (its links end at once, its boards go offline). The service decides every call
// (src/shared/board-hosts.ts: list device.change_device, add device.add_device, revoke device.del_device).
import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { BoardHostDto } from '#shared/board-hosts.ts';
import { BOARD_STATES, type BoardState } from '#shared/boards.ts';
import { StateBadge } from '#web/boards/StateBadge.tsx';
import { relativeText } from '#web/boards/time.ts';
import { Button, cx } from '#web/components/ui.tsx';
import { call, useAdminAccess, useLoad } from './api.ts';
import { AddHostDialog, H, RevokeHostDialog, ShownHostToken } from './HostDialogs.tsx';
import { useIntent } from './state.ts';
import { cell, DataTable, RowActions, Toolbar } from './ui.tsx';

type Health = BoardHostDto['health'];

// The same chip as a board's state (StateBadge): green usable, grey not now, red refused for good.
const tone: Record<Health, string> = {
  online:
    'bg-emerald-50 text-emerald-700 ring-emerald-600/20 dark:bg-emerald-500/10 dark:text-emerald-300 dark:ring-emerald-400/20',
  offline:
    'bg-amber-50 text-amber-800 ring-amber-600/20 dark:bg-amber-500/10 dark:text-amber-300 dark:ring-amber-400/20',
  revoked: 'bg-red-50 text-red-700 ring-red-600/20 dark:bg-red-500/10 dark:text-red-300 dark:ring-red-400/20',
  never:
    'bg-zinc-100 text-zinc-600 ring-zinc-500/20 dark:bg-zinc-500/10 dark:text-zinc-400 dark:ring-zinc-400/20',
};
const dot: Record<Health, string> = {
  online: 'bg-emerald-500',
  offline: 'bg-amber-500',
  revoked: 'bg-red-500',
  never: 'bg-zinc-400',
};

export function HealthBadge({ health }: { health: Health }) {
  const { t } = useTranslation('admin');
  return (
    <span
      data-health={health}
      data-testid="admin-host-health"
      className={cx(
        'inline-flex items-center gap-1.5 rounded-full px-2 py-0.5 text-[11px] font-medium ring-1 ring-inset whitespace-nowrap',
        tone[health],
      )}
    >
      <span className={cx('h-1.5 w-1.5 rounded-full', dot[health])} aria-hidden="true" />
      {t(`hosts.health.${health}`)}
    </span>
  );
}

const isBoardState = (s: string): s is BoardState => (BOARD_STATES as readonly string[]).includes(s);

export function HostsSection() {
  const { t, i18n } = useTranslation('admin');
  const access = useAdminAccess();
  const [req, reload] = useLoad(() => call(H.adminHostsList, {}).then((r) => r.items), []);
  const [adding, setAdding] = useState(false);
  const [shown, setShown] = useState<{ name: string; token: string } | null>(null);
  const [revoking, setRevoking] = useState<BoardHostDto | null>(null);
  useIntent('host.create', () => setAdding(true));

  return (
    <section data-testid="admin-hosts">
      <p className="mb-3 max-w-3xl text-[13px] text-zinc-600 dark:text-zinc-400">{t('hosts.intro')}</p>
      <Toolbar
        onRefresh={reload}
        add={
          access.can('device.add_device') && {
            icon: 'server',
            label: t('hosts.add'),
            testId: 'admin-host-add',
            onClick: () => setAdding(true),
          }
        }
      />
      <DataTable
        req={req}
        onRetry={reload}
        testId="admin-host-table"
        empty={{ icon: 'server', title: t('hosts.empty') }}
        head={[
          t('hosts.host'),
          t('hosts.healthTitle'),
          t('hosts.links'),
          t('hosts.lastSeen'),
          t('hosts.version'),
          t('hosts.address'),
          t('hosts.boards'),
          '',
        ]}
        rows={(items) =>
          items.map((h) => (
            <tr key={h.id} data-testid="admin-host-row" data-host={h.name} data-health={h.health}>
              <td className={cell}>
                <div className="font-mono font-medium text-zinc-900 dark:text-zinc-100">{h.name}</div>
                <div className="text-xs text-zinc-500">
                  {h.revokedAt
                    ? t('hosts.revokedAt', { when: relativeText(i18n.language, h.revokedAt) })
                    : t('hosts.createdAt', { when: relativeText(i18n.language, h.createdAt) })}
                </div>
              </td>
              <td className={cell}>
                <HealthBadge health={h.health} />
              </td>
              <td className={`${cell} tabular-nums`} data-testid="admin-host-links">
                {h.links}
              </td>
              <td className={`${cell} whitespace-nowrap text-xs text-zinc-600 dark:text-zinc-300`}>
                {h.lastSeenAt ? (
                  <time dateTime={h.lastSeenAt} title={new Date(h.lastSeenAt).toLocaleString(i18n.language)}>
                    {relativeText(i18n.language, h.lastSeenAt)}
                  </time>
                ) : (
                  '—'
                )}
              </td>
              <td className={`${cell} font-mono text-xs`}>{h.version ?? '—'}</td>
              <td className={`${cell} font-mono text-xs`}>{h.address ?? '—'}</td>
              <td className={cell}>
                {h.boards.length === 0 ? (
                  <span className="text-xs text-zinc-500">{t('hosts.noBoards')}</span>
                ) : (
                  <ul className="space-y-1">
                    {h.boards.map((b) => (
                      <li
                        key={b.deviceId}
                        className="flex items-center gap-2 text-xs"
                        data-device-id={b.deviceId}
                      >
                        <span className="truncate" title={b.deviceId}>
                          {b.name}
                        </span>
                        {isBoardState(b.state) ? <StateBadge state={b.state} /> : <span>{b.state}</span>}
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <RowActions>
                {!h.revokedAt && access.can('device.del_device') ? (
                  <Button
                    size="sm"
                    variant="ghost"
                    onClick={() => setRevoking(h)}
                    data-testid="admin-host-revoke"
                  >
                    {t('hosts.revoke')}
                  </Button>
                ) : null}
              </RowActions>
            </tr>
          ))
        }
      />
      <AddHostDialog
        open={adding}
        onClose={() => setAdding(false)}
        onAdded={(name, token) => {
          setShown({ name, token });
          reload();
        }}
      />
      <ShownHostToken shown={shown} onClose={() => setShown(null)} />
      <RevokeHostDialog host={revoking} onClose={() => setRevoking(null)} onDone={reload} />
    </section>
  );
}
