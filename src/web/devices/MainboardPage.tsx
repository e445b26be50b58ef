// /mainboard: the boards the user holds, by the names they gave them, with state and a live countdown
// of the time left. One board is selected (mouse or ↑↓); Start opens it in the workbench. Every action
// has a button, a key (Enter, F2, R, Del, A) and a palette command.
import { useEffect, useRef } from 'react';
import { useTranslation } from 'react-i18next';
import { useNavigate } from 'react-router-dom';
import { useSnapshot } from 'valtio';
import type { LeaseDto } from '#shared/leases.ts';
import { Icon } from '#web/components/icons.tsx';
import { Button, Card, cx, EmptyState, IconButton, Kbd } from '#web/components/ui.tsx';
import { paletteState } from '#web/palette/registry.ts';
import { dataOf, leases, loadLeases, remainingAt } from '#web/state/devices.ts';
import { beginRename, hostLeaseDialogs, installDeviceCommands, startAndOpen } from './commands.ts';
import { InlineName, LeaseDialogs } from './LeaseDialogs.tsx';
import { Loadable, SkeletonRows } from './Loadable.tsx';
import { StateBadge } from './StateBadge.tsx';
import { dateTimeText, timeLeftText, usePerfNow } from './time.ts';

const HOUR = 3_600_000;

export function isTypingTarget(el: EventTarget | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName) || !!el.closest('[role="dialog"],[role="alertdialog"]');
}

export default function MainboardPage() {
  const { t } = useTranslation('devices');
  const navigate = useNavigate();
  const snap = useSnapshot(leases);
  const listRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    installDeviceCommands();
    const release = hostLeaseDialogs();
    void loadLeases();
    // Time left is counted down locally; reloading now and then picks up changes made elsewhere.
    const id = window.setInterval(() => void loadLeases(), 60_000);
    return () => {
      release();
      window.clearInterval(id);
    };
  }, []);

  // The board just obtained on /riscvhouse stays highlighted for a few seconds.
  useEffect(() => {
    if (!snap.highlight) return;
    const id = window.setTimeout(() => {
      leases.highlight = null;
    }, 8_000);
    return () => window.clearTimeout(id);
  }, [snap.highlight]);

  const items = (dataOf(snap.mine as typeof leases.mine)?.items ?? []) as LeaseDto[];
  const selected = items.find((l) => l.deviceId === snap.selected) ?? null;

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (paletteState.open || leases.dialog || leases.renaming || isTypingTarget(e.target)) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const list = items;
      const i = list.findIndex((l) => l.deviceId === leases.selected);
      const sel = list[i];
      switch (e.key) {
        case 'ArrowDown':
        case 'j':
          if (list.length) leases.selected = list[Math.min(list.length - 1, i + 1)].deviceId;
          break;
        case 'ArrowUp':
        case 'k':
          if (list.length) leases.selected = list[Math.max(0, i - 1)].deviceId;
          break;
        case 'Enter':
          if (sel && (e.target === document.body || listRef.current?.contains(e.target as Node))) {
            void startAndOpen(navigate, sel.deviceId, sel.serverName);
          } else return;
          break;
        case 'F2':
          if (sel) beginRename(null, sel.deviceId);
          break;
        case 'r':
        case 'R':
          if (sel) leases.dialog = { kind: 'renew', deviceId: sel.deviceId };
          break;
        case 'Delete':
          if (sel) leases.dialog = { kind: 'unlock', deviceId: sel.deviceId };
          break;
        case 'a':
        case 'A':
          navigate('/riscvhouse');
          break;
        default:
          return;
      }
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [items, navigate]);

  return (
    <div className="mx-auto w-full max-w-5xl px-4 py-6 sm:px-6" data-testid="mainboard">
      <div className="mb-5 flex flex-wrap items-end justify-between gap-3">
        <div>
          <h1 className="text-lg font-semibold tracking-tight text-zinc-900 dark:text-zinc-50">{t('mainboard.title')}</h1>
          <p className="mt-0.5 text-[13px] text-zinc-500 dark:text-zinc-400">{t('mainboard.subtitle')}</p>
        </div>
        <div className="flex items-center gap-2">
          <IconButton icon="refresh" label={t('common.refresh')} onClick={() => void loadLeases()} />
          <Button icon="cpu" onClick={() => navigate('/riscvhouse')} data-testid="apply-new">
            {t('mainboard.applyNew')}
          </Button>
          <Button
            variant="primary"
            icon="terminal"
            disabled={!selected}
            loading={!!selected && snap.busy[selected.deviceId] === 'start'}
            onClick={() => selected && void startAndOpen(navigate, selected.deviceId, selected.serverName)}
            data-testid="start"
          >
            {t('mainboard.start')}
          </Button>
        </div>
      </div>

      <Card className="overflow-hidden">
        <Loadable req={snap.mine} onRetry={() => void loadLeases()} skeleton={<SkeletonRows />}>
          {(data, reloading) =>
            data.items.length === 0 ? (
              <div className="p-4">
                <EmptyState
                  icon="board"
                  title={t('mainboard.emptyTitle')}
                  action={
                    <Button variant="primary" icon="cpu" onClick={() => navigate('/riscvhouse')}>
                      {t('mainboard.applyNew')}
                    </Button>
                  }
                >
                  {t('mainboard.emptyBody')}
                </EmptyState>
              </div>
            ) : (
              <div
                ref={listRef}
                role="listbox"
                aria-label={t('mainboard.listLabel')}
                aria-activedescendant={selected ? `lease-${selected.deviceId}` : undefined}
                tabIndex={0}
                className={cx('divide-y divide-zinc-100 outline-none dark:divide-zinc-800', reloading && 'opacity-90')}
                data-testid="lease-list"
              >
                {data.items.map((l) => (
                  <LeaseRow
                    key={l.leaseId}
                    lease={l as LeaseDto}
                    receivedAt={data.receivedAt}
                    selected={l.deviceId === snap.selected}
                    highlighted={l.deviceId === snap.highlight}
                    busy={snap.busy[l.deviceId]}
                    onSelect={() => {
                      leases.selected = l.deviceId;
                    }}
                    onStart={() => void startAndOpen(navigate, l.deviceId, l.serverName)}
                  />
                ))}
              </div>
            )
          }
        </Loadable>
      </Card>
      <p className="mt-3 hidden items-center gap-1.5 text-[11px] text-zinc-400 sm:flex">
        <Kbd>↑</Kbd>
        <Kbd>↓</Kbd>
        <span className="mr-2">{t('mainboard.keys')}</span>
      </p>
      <LeaseDialogs />
    </div>
  );
}

function LeaseRow({
  lease,
  receivedAt,
  selected,
  highlighted,
  busy,
  onSelect,
  onStart,
}: {
  lease: LeaseDto;
  receivedAt: number;
  selected: boolean;
  highlighted: boolean;
  busy: string | undefined;
  onSelect: () => void;
  onStart: () => void;
}) {
  const { t, i18n } = useTranslation('devices');
  const now = usePerfNow(1000);
  const left = remainingAt(lease, receivedAt, now);
  const urgent = left > 0 && left <= HOUR;
  const soon = left > HOUR && left <= 24 * HOUR;
  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents: the list's keyboard handler moves the selection.
    <div
      id={`lease-${lease.deviceId}`}
      role="option"
      tabIndex={-1}
      aria-selected={selected}
      data-testid="lease-row"
      data-device-id={lease.deviceId}
      data-name={lease.serverName}
      onClick={onSelect}
      onDoubleClick={onStart}
      className={cx(
        'group relative flex cursor-default flex-wrap items-center gap-x-4 gap-y-2 px-4 py-3 transition-colors sm:flex-nowrap',
        selected ? 'bg-zinc-50 dark:bg-zinc-800/60' : 'hover:bg-zinc-50/60 dark:hover:bg-zinc-800/30',
        highlighted && 'animate-[pulse_1.2s_ease-in-out_2] bg-emerald-50/70 dark:bg-emerald-500/10',
      )}
    >
      <span
        aria-hidden="true"
        className={cx('absolute inset-y-0 left-0 w-0.5', selected ? 'bg-zinc-900 dark:bg-zinc-100' : 'bg-transparent')}
      />
      <div className="flex min-w-0 flex-1 items-center gap-3">
        <div className="flex h-8 w-8 shrink-0 items-center justify-center rounded-md bg-zinc-100 text-zinc-500 dark:bg-zinc-800 dark:text-zinc-400">
          <Icon name="cpu" size={16} />
        </div>
        <div className="min-w-0 flex-1">
          <div className="flex min-w-0 items-center gap-2">
            <InlineName
              deviceId={lease.deviceId}
              name={lease.serverName}
              className="truncate text-[13px] font-semibold text-zinc-900 dark:text-zinc-100"
            />
            {highlighted ? (
              <span data-testid="new-badge" className="rounded bg-emerald-600 px-1.5 py-px text-[10px] font-semibold tracking-wide text-white uppercase">
                {t('mainboard.new')}
              </span>
            ) : null}
            {lease.applyId ? (
              <span title={t('mainboard.working')} className="text-emerald-600 dark:text-emerald-400">
                <Icon name="terminal" size={13} />
              </span>
            ) : null}
          </div>
          <div className="mt-0.5 truncate text-xs text-zinc-500 dark:text-zinc-400">
            {[lease.boardName, lease.model, ...Object.entries(lease.attributes).map(([k, v]) => `${k} ${v}`)]
              .filter(Boolean)
              .join(' · ')}
          </div>
        </div>
      </div>
      <StateBadge state={lease.boardState} />
      <div className="w-44 shrink-0 text-right whitespace-nowrap">
        <div
          className={cx(
            'font-mono text-[13px] tabular-nums',
            urgent ? 'text-red-600 dark:text-red-400' : soon ? 'text-amber-600 dark:text-amber-400' : 'text-zinc-800 dark:text-zinc-200',
          )}
          data-testid="time-left"
          title={urgent ? t('mainboard.warn1h') : soon ? t('mainboard.warn24h') : t('timeLeft.label')}
        >
          {timeLeftText(t, left)}
        </div>
        <div className="text-[11px] text-zinc-400" data-testid="ends-at">
          {dateTimeText(i18n.language, lease.endsAt)}
        </div>
      </div>
      <div className={cx('flex items-center gap-0.5 transition-opacity', selected ? 'opacity-100' : 'opacity-60 group-hover:opacity-100')}>
        <Button
          size="sm"
          variant="ghost"
          data-testid="rename"
          onClick={(e) => {
            e.stopPropagation();
            beginRename(null, lease.deviceId);
          }}
        >
          {t('mainboard.rename')}
        </Button>
        <Button
          size="sm"
          variant="ghost"
          data-testid="renew"
          disabled={!!busy}
          onClick={(e) => {
            e.stopPropagation();
            leases.selected = lease.deviceId;
            leases.dialog = { kind: 'renew', deviceId: lease.deviceId };
          }}
        >
          {t('mainboard.renew')}
        </Button>
        <Button
          size="sm"
          variant="ghost"
          className="hover:text-red-600 dark:hover:text-red-400"
          data-testid="unlock"
          loading={busy === 'unlock'}
          disabled={!!busy}
          onClick={(e) => {
            e.stopPropagation();
            leases.selected = lease.deviceId;
            leases.dialog = { kind: 'unlock', deviceId: lease.deviceId };
          }}
        >
          {t('mainboard.unlock')}
        </Button>
      </div>
    </div>
  );
}
