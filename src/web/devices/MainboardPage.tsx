// /mainboard: the boards the user holds, by the names they gave them, with state and a live countdown
// of the time left. One board is selected (mouse or ↑↓); Start opens it in the workbench. Every action
// has a button, a key (Enter, F2, R, Del, A, F flash, H flash history, Space to pick boards for a
// multi-board flash) and a palette command.
import { lazy, Suspense, useCallback, useEffect, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { FlashPerm } from '#shared/flash.ts';
import type { LeaseDto } from '#shared/leases.ts';
import { hasPermission } from '#shared/permissions.ts';
import { ArchBadge, BoardFactsLine } from '#web/boards/BoardFacts.tsx';
import { boardFacts } from '#web/boards/facts.ts';
import { Loadable, SkeletonRows } from '#web/boards/Loadable.tsx';
import { StateBadge } from '#web/boards/StateBadge.tsx';
import { startAndOpen } from '#web/boards/start.ts';
import { dataOf, leases, loadLeases, remainingAt } from '#web/boards/store.ts';
import { attrLabel, attrValueText, dateTimeText, timeLeftText, usePerfNow } from '#web/boards/time.ts';
import { paletteState } from '#web/commands/registry.ts';
import { Icon } from '#web/components/icons.tsx';
import { Button, Card, cx, EmptyState, IconButton, Kbd } from '#web/components/ui.tsx';
import { FlashRowActions } from '#web/flash/BoardFlash.tsx';
import { flash, openHistory, openWizard } from '#web/flash/state.ts';
import { useNavigate } from '#web/router/router.tsx';
import { session } from '#web/state/session.ts';
import { beginRename, hostLeaseDialogs, installDeviceCommands } from './commands.ts';
import { InlineName, LeaseDialogs } from './LeaseDialogs.tsx';

// The waiting list and the shells shared with me show only once they have entries: their code loads
// after the first paint, beside their data.
const WaitingList = lazy(() => import('#web/queue/QueuePanel.tsx').then((m) => ({ default: m.WaitingList })));
const SharedWithMe = lazy(() =>
  import('#web/share/SharedWithMe.tsx').then((m) => ({ default: m.SharedWithMe })),
);

const HOUR = 3_600_000;

export function isTypingTarget(el: EventTarget | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  return (
    el.isContentEditable ||
    ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName) ||
    !!el.closest('[role="dialog"],[role="alertdialog"]')
  );
}

export default function MainboardPage() {
  const { t } = useTranslation('devices');
  const navigate = useNavigate();
  const snap = useSnapshot(leases);
  const listRef = useRef<HTMLDivElement>(null);
  const { perms } = useSnapshot(session);
  const canFlash = hasPermission([FlashPerm.add], perms);
  // Boards picked for a multi-board flash (checkboxes, or Space on the selected row).
  const [picked, setPicked] = useState<string[]>([]);
  const togglePick = useCallback(
    (deviceId: string) =>
      setPicked((p) => (p.includes(deviceId) ? p.filter((x) => x !== deviceId) : [...p, deviceId])),
    [],
  );

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
      if (paletteState.open || leases.dialog || leases.renaming || flash.dialog || isTypingTarget(e.target))
        return;
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
        case 'f':
        case 'F':
          if (sel && canFlash) openWizard('one', [sel.deviceId]);
          else return;
          break;
        case 'h':
        case 'H':
          if (sel) openHistory(sel.deviceId);
          else return;
          break;
        case ' ':
          if (sel && canFlash && (e.target === document.body || listRef.current?.contains(e.target as Node)))
            togglePick(sel.deviceId);
          else return;
          break;
        default:
          return;
      }
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [items, navigate, canFlash, togglePick]);

  // Boards no longer held leave the multi-flash pick.
  const heldIds = items.map((l) => l.deviceId).join(',');
  useEffect(() => {
    setPicked((p) => {
      const held = heldIds.split(',');
      const kept = p.filter((id) => held.includes(id));
      return kept.length === p.length ? p : kept;
    });
  }, [heldIds]);

  return (
    <div className="mx-auto w-full max-w-5xl px-4 py-6 sm:px-6" data-testid="mainboard">
      <div className="mb-5 flex flex-wrap items-end justify-between gap-3">
        <div>
          <h1 className="text-lg font-semibold tracking-tight text-zinc-900 dark:text-zinc-50">
            {t('mainboard.title')}
          </h1>
          <p className="mt-0.5 text-[13px] text-zinc-500 dark:text-zinc-400">{t('mainboard.subtitle')}</p>
        </div>
        <div className="flex items-center gap-2">
          <IconButton icon="refresh" label={t('common.refresh')} onClick={() => void loadLeases()} />
          {canFlash && picked.length > 0 ? (
            <Button icon="upload" onClick={() => openWizard('many', picked)} data-testid="flash-picked">
              {t('flash:board.flashSelected', { count: picked.length })}
            </Button>
          ) : null}
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

      <Suspense fallback={null}>
        <WaitingList className="mb-4" />
      </Suspense>
      <div className="mb-4">
        <Suspense fallback={null}>
          <SharedWithMe hideWhenEmpty />
        </Suspense>
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
                className={cx(
                  'divide-y divide-zinc-100 outline-none dark:divide-zinc-800',
                  reloading && 'opacity-90',
                )}
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
                    canFlash={canFlash}
                    picked={picked.includes(l.deviceId)}
                    onPick={() => togglePick(l.deviceId)}
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
      <p
        className="mt-3 hidden items-center gap-1.5 text-[11px] text-zinc-400 sm:flex pointer-coarse:hidden!"
        data-key-hints
      >
        <Kbd>↑</Kbd>
        <Kbd>↓</Kbd>
        <span className="mr-2">{t('mainboard.keys')}</span>
        {canFlash ? <span>· {t('flash:board.keys')}</span> : null}
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
  canFlash,
  picked,
  onPick,
  onSelect,
  onStart,
}: {
  lease: LeaseDto;
  receivedAt: number;
  selected: boolean;
  highlighted: boolean;
  busy: string | undefined;
  canFlash: boolean;
  picked: boolean;
  onPick: () => void;
  onSelect: () => void;
  onStart: () => void;
}) {
  const { t, i18n } = useTranslation('devices');
  const now = usePerfNow(1000);
  const left = remainingAt(lease, receivedAt, now);
  const urgent = left > 0 && left <= HOUR;
  const soon = left > HOUR && left <= 24 * HOUR;
  const facts = boardFacts(lease.attributes);
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
        'group relative cursor-default px-4 py-3 transition-colors',
        selected ? 'bg-zinc-50 dark:bg-zinc-800/60' : 'hover:bg-zinc-50/60 dark:hover:bg-zinc-800/30',
        highlighted && 'animate-[pulse_1.2s_ease-in-out_2] bg-emerald-50/70 dark:bg-emerald-500/10',
      )}
    >
      <span
        aria-hidden="true"
        className={cx(
          'absolute inset-y-0 left-0 w-0.5',
          selected ? 'bg-zinc-900 dark:bg-zinc-100' : 'bg-transparent',
        )}
      />
      <div className="flex flex-wrap items-center gap-x-4 gap-y-2 sm:flex-nowrap">
        {/* On a phone the name has a line of its own (wrapped, never cut): it is what tells boards apart. */}
        <div className="flex min-w-0 grow basis-full items-center gap-3 sm:basis-0">
          {canFlash ? (
            <input
              type="checkbox"
              checked={picked}
              onChange={onPick}
              onClick={(e) => e.stopPropagation()}
              tabIndex={-1}
              aria-label={t('flash:board.select', { name: lease.serverName })}
              className="h-4 w-4 shrink-0 rounded border-zinc-300 accent-zinc-900 focus-ring dark:accent-zinc-100"
              data-testid="flash-pick"
            />
          ) : null}
          <div className="flex h-8 w-8 shrink-0 items-center justify-center rounded-md bg-zinc-100 text-zinc-500 dark:bg-zinc-800 dark:text-zinc-400">
            <Icon name="cpu" size={16} />
          </div>
          <div className="min-w-0 flex-1">
            <div className="flex min-w-0 items-center gap-2">
              <InlineName
                deviceId={lease.deviceId}
                name={lease.serverName}
                className="min-w-0 text-[13px] font-semibold [overflow-wrap:anywhere] text-zinc-900 sm:truncate dark:text-zinc-100"
              />
              <ArchBadge facts={facts} />
              {highlighted ? (
                <span
                  data-testid="new-badge"
                  className="rounded bg-emerald-600 px-1.5 py-px text-[10px] font-semibold tracking-wide text-white uppercase"
                >
                  {t('mainboard.new')}
                </span>
              ) : null}
              {lease.applyId ? (
                <span title={t('mainboard.working')} className="text-emerald-600 dark:text-emerald-400">
                  <Icon name="terminal" size={13} />
                </span>
              ) : null}
            </div>
            <div
              className="mt-0.5 truncate text-xs text-zinc-500 dark:text-zinc-400"
              data-testid="board-summary"
            >
              {[
                lease.boardName,
                lease.model,
                ...facts.rest.map(([k, v]) => `${attrLabel(t, k)} ${attrValueText(t, k, v)}`),
              ]
                .filter(Boolean)
                .join(' · ')}
            </div>
          </div>
        </div>
        <StateBadge state={lease.boardState} />
        <div className="shrink-0 whitespace-nowrap sm:w-44 sm:text-right">
          <div
            className={cx(
              'font-mono text-[13px] tabular-nums',
              urgent
                ? 'text-red-600 dark:text-red-400'
                : soon
                  ? 'text-amber-600 dark:text-amber-400'
                  : 'text-zinc-800 dark:text-zinc-200',
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
        <div
          className={cx(
            'flex items-center gap-0.5 transition-opacity',
            // A finger cannot hover: on a phone the actions are always fully shown.
            selected ? 'opacity-100' : 'opacity-100 sm:opacity-60 sm:group-hover:opacity-100',
          )}
        >
          <FlashRowActions deviceId={lease.deviceId} disabled={!!busy} />
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
      {/* What the board runs, on a line of its own under the name: long values are read whole here. */}
      <BoardFactsLine
        facts={facts}
        badge={false}
        className={cx('mt-1.5', canFlash ? 'pl-[72px]' : 'pl-11')}
      />
    </div>
  );
}
