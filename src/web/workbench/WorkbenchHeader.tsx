// The workbench's header: the board's name (renamed in place), its state, what it is (architecture,
// OS and image, kernel), the live time left, and its actions — pane toggles, flash, renew, power
// reset, leave. On a phone the name and time left take a line each and the actions sit in a menu.
// The reset confirmation is here too: the header opens it.

import { Menu, MenuButton, MenuItem, MenuItems } from '@headlessui/react';
import { useEffect } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { ArchBadge, BoardFactsLine } from '#web/boards/BoardFacts.tsx';
import { boardFacts } from '#web/boards/facts.ts';
import { StateBadge } from '#web/boards/StateBadge.tsx';
import {
  dataOf,
  leaseOf,
  leases,
  loadLeases,
  messageOf,
  powerReset,
  remainingAt,
} from '#web/boards/store.ts';
import { dateTimeText, timeLeftText, usePerfNow } from '#web/boards/time.ts';
import { Icon, type IconName } from '#web/components/icons.tsx';
import { Modal } from '#web/components/Modal.tsx';
import { Button, cx, Spinner } from '#web/components/ui.tsx';
import { codeWindow, toggleCode, toggleVnc, vncWindow } from '#web/desktop/state.ts';
import { InlineName } from '#web/devices/LeaseDialogs.tsx';
import { openWizard } from '#web/flash/state.ts';
import { Link, useNavigate } from '#web/router/router.tsx';
import { recordStep } from '#web/sequences/state.ts';
import { notify } from '#web/state/notices.ts';
import { leaveWorkbench } from './close-shells.ts';
import { workbenchUi } from './commands.ts';
import { openSnapshots } from './snapshots.ts';
import { togglePane, workbench } from './store.ts';

const paneToggles: { pane: 'files' | 'editor' | 'load'; icon: IconName }[] = [
  { pane: 'files', icon: 'layers' },
  { pane: 'editor', icon: 'book' },
  { pane: 'load', icon: 'dashboard' },
];

export function WorkbenchHeader({
  applyId,
  deviceId,
  serverName,
  onEnded,
  narrow,
}: {
  applyId: string;
  deviceId: string;
  serverName: string;
  onEnded: (reason: string | null) => void;
  /** A phone: the name and the time left on their own lines, the actions in a menu. */
  narrow?: boolean;
}) {
  const { t, i18n } = useTranslation('workbench');
  const navigate = useNavigate();
  const l = useSnapshot(leases);
  const wb = useSnapshot(workbench);
  const now = usePerfNow(1000);
  const list = dataOf(l.mine as typeof leases.mine);
  const lease = list?.items.find((x) => x.deviceId === deviceId);
  const left = lease && list ? remainingAt(lease, list.receivedAt, now) : null;
  const name = lease?.serverName ?? serverName;
  const busy = l.busy[deviceId];
  const facts = lease ? boardFacts(lease.attributes) : null;

  useEffect(() => {
    if (left === 0) onEnded('apply.lease_ended');
  }, [left, onEnded]);

  const leave = async () => {
    try {
      await leaveWorkbench(applyId, deviceId);
      notify('info', t('leave.done', { name }));
      navigate('/mainboard');
    } catch (err) {
      notify('error', t('leave.failed', { error: messageOf(err) }));
    }
  };

  const timeLeft =
    lease && left !== null ? (
      <span
        className={cx(
          'font-mono tabular-nums',
          left <= 3_600_000
            ? 'text-red-600 dark:text-red-400'
            : left <= 86_400_000
              ? 'text-amber-600 dark:text-amber-400'
              : 'text-zinc-700 dark:text-zinc-300',
        )}
        data-testid="workbench-time-left"
      >
        {timeLeftText(t, left)}
      </span>
    ) : null;

  if (narrow) {
    const actions = [
      {
        id: 'wb-flash',
        icon: 'upload' as IconName,
        label: t('flash:board.flash'),
        disabled: !lease || !!busy,
        run: () => openWizard('one', [deviceId]),
      },
      {
        id: 'wb-renew',
        icon: 'refresh' as IconName,
        label: t('header.renew'),
        disabled: !lease || !!busy,
        run: () => {
          leases.dialog = { kind: 'renew', deviceId };
        },
      },
      {
        id: 'wb-reset',
        icon: 'rotate' as IconName,
        label: t('header.reset'),
        disabled: !!busy,
        run: () => {
          workbenchUi.resetOpen = true;
        },
      },
      {
        id: 'wb-snapshots',
        icon: 'image' as IconName,
        label: t('snapshots:open'),
        disabled: !!busy,
        run: () => openSnapshots(applyId),
      },
      {
        id: 'wb-leave',
        icon: 'logout' as IconName,
        label: t('header.leave'),
        disabled: !!busy,
        run: () => void leave(),
      },
    ];
    return (
      <header
        className="flex min-h-12 shrink-0 items-center gap-1 border-b border-zinc-200 bg-white py-0.5 pr-1 dark:border-zinc-800 dark:bg-zinc-950"
        data-testid="workbench-header"
      >
        <Link
          to="/mainboard"
          aria-label={t('header.back')}
          title={t('header.back')}
          className="inline-flex h-11 w-11 shrink-0 items-center justify-center rounded-md text-zinc-500 focus-ring active:bg-zinc-100 dark:active:bg-zinc-800"
        >
          <Icon name="chevronLeft" size={18} />
        </Link>
        <div className="min-w-0 flex-1 py-1">
          <div className="flex min-w-0 flex-wrap items-center gap-x-2 gap-y-0.5">
            {lease ? (
              <InlineName
                deviceId={deviceId}
                name={name}
                className="min-w-0 text-sm leading-5 font-semibold [overflow-wrap:anywhere] text-zinc-900 dark:text-zinc-100"
              />
            ) : (
              <span
                className="min-w-0 text-sm leading-5 font-semibold [overflow-wrap:anywhere] text-zinc-900 dark:text-zinc-100"
                data-testid="board-name"
              >
                {name}
              </span>
            )}
            {lease ? <StateBadge state={lease.boardState} /> : null}
            {facts ? <ArchBadge facts={facts} /> : null}
          </div>
          {timeLeft ? (
            <div
              className="flex items-baseline gap-1 text-[11px] leading-4"
              title={
                lease ? t('header.endsAt', { date: dateTimeText(i18n.language, lease.endsAt) }) : undefined
              }
            >
              {timeLeft}
              <span className="text-zinc-400">{t('header.timeLeft')}</span>
            </div>
          ) : null}
        </div>
        <Menu as="div" className="relative shrink-0">
          <MenuButton
            aria-label={t('header.actions')}
            title={t('header.actions')}
            data-testid="wb-actions"
            className="inline-flex h-11 w-11 items-center justify-center rounded-md text-zinc-600 focus-ring active:bg-zinc-100 data-[open]:bg-zinc-100 dark:text-zinc-300 dark:active:bg-zinc-800 dark:data-[open]:bg-zinc-800"
          >
            {busy ? <Spinner size={16} /> : <Icon name="menu" size={18} />}
          </MenuButton>
          <MenuItems
            anchor="bottom end"
            className="z-50 mt-1 w-56 rounded-lg border border-zinc-200 bg-white p-1 shadow-lg focus:outline-none dark:border-zinc-800 dark:bg-zinc-900"
          >
            {actions.map((a) => (
              <MenuItem key={a.id} disabled={a.disabled}>
                <button
                  type="button"
                  onClick={a.run}
                  data-testid={a.id}
                  className="flex min-h-11 w-full items-center gap-3 rounded-md px-3 text-left text-sm text-zinc-700 data-[disabled]:opacity-40 data-[focus]:bg-zinc-100 dark:text-zinc-200 dark:data-[focus]:bg-zinc-800"
                >
                  <Icon name={a.icon} size={16} className="text-zinc-400" />
                  {a.label}
                </button>
              </MenuItem>
            ))}
          </MenuItems>
        </Menu>
      </header>
    );
  }

  return (
    <header
      className="flex h-11 shrink-0 items-center gap-3 border-b border-zinc-200 bg-white px-3 dark:border-zinc-800 dark:bg-zinc-950"
      data-testid="workbench-header"
    >
      <Link
        to="/mainboard"
        className="flex items-center gap-1 rounded text-xs text-zinc-500 hover:text-zinc-900 focus-ring dark:hover:text-zinc-100"
      >
        <Icon name="chevronLeft" size={14} />
        <span className="hidden sm:inline">{t('header.back')}</span>
      </Link>
      <div className="h-4 w-px bg-zinc-200 dark:bg-zinc-800" />
      <div className="flex min-w-0 items-center gap-2">
        <Icon name="cpu" size={15} className="shrink-0 text-zinc-400" />
        {lease ? (
          <InlineName
            deviceId={deviceId}
            name={name}
            className="truncate text-[13px] font-semibold text-zinc-900 dark:text-zinc-100"
          />
        ) : (
          <span
            className="truncate text-[13px] font-semibold text-zinc-900 dark:text-zinc-100"
            data-testid="board-name"
          >
            {name}
          </span>
        )}
        {lease ? <StateBadge state={lease.boardState} /> : null}
        {facts ? <ArchBadge facts={facts} /> : null}
      </div>
      {/* The rest of what the board is takes the room left over, cut first when the header is short. */}
      {facts ? (
        <BoardFactsLine
          facts={facts}
          oneLine
          badge={false}
          className="hidden max-w-xl flex-[1_1_0%] xl:flex"
        />
      ) : null}
      {lease && left !== null ? (
        <div
          className="hidden shrink-0 items-baseline gap-1.5 text-xs whitespace-nowrap md:flex"
          title={t('header.endsAt', { date: dateTimeText(i18n.language, lease.endsAt) })}
        >
          {timeLeft}
          <span className="text-zinc-400">{t('header.timeLeft')}</span>
        </div>
      ) : null}
      <div className="ml-auto flex items-center gap-1">
        <fieldset
          className="mr-1 flex items-center rounded-md border border-zinc-200 p-0.5 dark:border-zinc-800"
          aria-label={t('header.panes')}
        >
          {paneToggles.map(({ pane, icon }) => (
            <button
              key={pane}
              type="button"
              aria-pressed={wb.layout.show[pane]}
              title={t(wb.layout.show[pane] ? 'panes.hide' : 'panes.show', { pane: t(`panes.${pane}`) })}
              onClick={() => togglePane(pane)}
              className={cx(
                'inline-flex h-6 w-7 items-center justify-center rounded text-zinc-400 transition-colors focus-ring',
                wb.layout.show[pane]
                  ? 'bg-zinc-100 text-zinc-800 dark:bg-zinc-800 dark:text-zinc-100'
                  : 'hover:text-zinc-700 dark:hover:text-zinc-200',
              )}
            >
              <Icon name={icon} size={14} />
            </button>
          ))}
          <DesktopToggles />
        </fieldset>
        <Button
          size="sm"
          variant="ghost"
          icon="upload"
          disabled={!lease || !!busy}
          onClick={() => openWizard('one', [deviceId])}
          data-testid="wb-flash"
        >
          {t('flash:board.flash')}
        </Button>
        <Button
          size="sm"
          variant="ghost"
          icon="refresh"
          disabled={!lease || !!busy}
          onClick={() => (leases.dialog = { kind: 'renew', deviceId })}
          data-testid="wb-renew"
        >
          {t('header.renew')}
        </Button>
        <Button
          size="sm"
          variant="ghost"
          icon="rotate"
          loading={busy === 'reset'}
          disabled={!!busy}
          onClick={() => (workbenchUi.resetOpen = true)}
          data-testid="wb-reset"
        >
          {t('header.reset')}
        </Button>
        <Button
          size="sm"
          variant="ghost"
          icon="image"
          disabled={!!busy}
          onClick={() => openSnapshots(applyId)}
          data-testid="wb-snapshots"
        >
          {t('snapshots:open')}
        </Button>
        <Button
          size="sm"
          icon="logout"
          loading={busy === 'leave'}
          disabled={!!busy}
          onClick={() => void leave()}
          data-testid="wb-leave"
        >
          {t('header.leave')}
        </Button>
      </div>
    </header>
  );
}

export function ResetDialog({ applyId, deviceId }: { applyId: string; deviceId: string }) {
  const { t } = useTranslation('workbench');
  const ui = useSnapshot(workbenchUi);
  const name = leaseOf(deviceId)?.serverName ?? deviceId;
  const close = () => {
    workbenchUi.resetOpen = false;
  };
  const confirm = async () => {
    close();
    notify('info', t('reset.running', { name }));
    try {
      await powerReset(applyId, deviceId);
      recordStep({ reset: {} });
      notify('success', t('reset.done', { name }));
    } catch (err) {
      const key = (err as { key?: string }).key;
      if (key === 'request.timeout') notify('info', t('reset.slow', { name }));
      else notify('error', t('reset.failed', { error: messageOf(err) }));
    }
    void loadLeases();
  };
  return (
    <Modal
      open={ui.resetOpen}
      onClose={close}
      title={t('reset.title', { name })}
      role="alertdialog"
      testId="reset-dialog"
      footer={
        <>
          <Button onClick={close} autoFocus>
            {t('devices:common.cancel')}
          </Button>
          <Button variant="danger" icon="rotate" onClick={() => void confirm()} data-testid="reset-confirm">
            {t('reset.confirm')}
          </Button>
        </>
      }
    >
      <p>{t('reset.body')}</p>
    </Modal>
  );
}

/** Header toggles of the desktop and code panes (the showVnc / showCode cookies). */
function DesktopToggles() {
  const { t } = useTranslation('desktop');
  const vnc = useSnapshot(vncWindow);
  const code = useSnapshot(codeWindow);
  const items = [
    { which: 'vnc' as const, on: vnc.opened, icon: 'board' as IconName, toggle: () => toggleVnc() },
    { which: 'code' as const, on: code.opened, icon: 'terminal' as IconName, toggle: () => toggleCode() },
  ];
  return items.map(({ which, on, icon, toggle }) => (
    <button
      key={which}
      type="button"
      aria-pressed={on}
      title={t(on ? 'panes.hide' : 'panes.show', { pane: t(`panes.${which}`) })}
      onClick={toggle}
      data-testid={`toggle-${which}`}
      className={cx(
        'inline-flex h-6 w-7 items-center justify-center rounded text-zinc-400 transition-colors focus-ring',
        on
          ? 'bg-zinc-100 text-zinc-800 dark:bg-zinc-800 dark:text-zinc-100'
          : 'hover:text-zinc-700 dark:hover:text-zinc-200',
      )}
    >
      <Icon name={icon} size={14} />
    </button>
  ));
}
