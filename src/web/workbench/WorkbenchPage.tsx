// /workbench: the terminal-first work surface on the board of the current apply. The apply comes from
// the applyInfo cookie written by "Start"; it is checked first (a stale one shows why it ended). Then:
// a header with the board's name, state, live time left and its actions (renew, power reset, leave),
// and resizable panes — file tree, editor, shells (tabs and side-by-side splits) and load graphs —
// whose sizes, visibility and open shells are kept per user in localStorage. Ctrl+Alt+Arrow moves the
// focus between panes; every action is also a palette command.

import { Menu, MenuButton, MenuItem, MenuItems } from '@headlessui/react';
import { type ComponentProps, lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { Panel } from 'react-resizable-panels';
import { Link, useNavigate } from 'react-router-dom';
import { useSnapshot } from 'valtio';
import { watchBoardState, watchLeaseNotices } from '#web/boards/live.ts';
import { StateBadge } from '#web/boards/StateBadge.tsx';
import {
  checkApply,
  dataOf,
  forgetApply,
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
import { Alert, Button, cx, EmptyState, IconButton, Spinner } from '#web/components/ui.tsx';
import { useCoarsePointer, useNarrow } from '#web/components/useMedia.ts';
import { CodePane } from '#web/desktop/CodePane.tsx';
import { useDesktopCommands } from '#web/desktop/commands.ts';
import { codeWindow, toggleCode, toggleVnc, vncWindow } from '#web/desktop/state.ts';
import { hostLeaseDialogs, installDeviceCommands } from '#web/devices/commands.ts';
import { InlineName, LeaseDialogs } from '#web/devices/LeaseDialogs.tsx';
import { FileTreePane } from '#web/files/FileTreePane.tsx';
import { installWorkbenchFlashCommands } from '#web/flash/commands.ts';
import { FlashJobView } from '#web/flash/FlashJobView.tsx';
import { isFinal } from '#web/flash/format.ts';
import { flash, hostFlashPane, latestJob, openWizard } from '#web/flash/state.ts';
import { realtime } from '#web/realtime/client.ts';
import { recordStep } from '#web/sequences/state.ts';
import { provideFrontShell } from '#web/state/front-shell.ts';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { readApplyInfo } from '#web/state/storage.ts';
import { stopBroadcast } from '#web/terminal/broadcast.ts';
import { leaveWorkbench } from './close-shells.ts';
import { installWorkbenchCommands, workbenchUi } from './commands.ts';
import { KeyRow } from './KeyRow.tsx';
import { useWorkbenchKeys } from './keys.ts';
import { PaneFrame, ResizeHandle, SavedGroup } from './PaneFrame.tsx';
import { type PhonePaneDef, PhoneWorkbench } from './PhoneWorkbench.tsx';
import { ShellArea } from './ShellArea.tsx';
import { shellOps } from './shell-ops.ts';
import { activeTab, bindWorkbench, togglePane, unbindWorkbench, workbench } from './store.ts';

/** noVNC loads only when the desktop pane first opens. */
const VncPane = lazy(() => import('#web/desktop/VncPane.tsx'));
// The editor (CodeMirror) and the load graphs (uPlot) load when their pane first shows, as the desktop
// does; the terminal loads with the first shell slot (TerminalSlot.tsx).
const LazyEditorPane = lazy(() =>
  import('#web/files/EditorPane.tsx').then((m) => ({ default: m.EditorPane })),
);
const LazyLoadPane = lazy(() => import('./LoadPane.tsx').then((m) => ({ default: m.LoadPane })));

function EditorPane(props: ComponentProps<typeof LazyEditorPane>) {
  return (
    <Suspense fallback={<Spinner size={14} />}>
      <LazyEditorPane {...props} />
    </Suspense>
  );
}

function LoadPane(props: ComponentProps<typeof LazyLoadPane>) {
  return (
    <Suspense fallback={<Spinner size={14} />}>
      <LazyLoadPane {...props} />
    </Suspense>
  );
}

type Phase =
  | { kind: 'none' }
  | { kind: 'checking'; applyId: string }
  | { kind: 'ended'; reason: string | null }
  | { kind: 'failed'; applyId: string; error: string }
  | { kind: 'ready'; applyId: string; deviceId: string; serverName: string };

/** How often the apply is checked again, so an expiry or an unlock elsewhere shows here. */
const RECHECK_MS = 30_000;

export default function WorkbenchPage() {
  const { t } = useTranslation('workbench');
  const { applyInfo, id: userId, name: userName } = useSnapshot(session);
  const applyId = applyInfo?.applyId ?? readApplyInfo()?.applyId ?? null;
  const [phase, setPhase] = useState<Phase>(() =>
    applyId ? { kind: 'checking', applyId } : { kind: 'none' },
  );
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    installDeviceCommands();
    return hostLeaseDialogs();
  }, []);
  // The shell in front, for commands of features below the workbench (share this shell).
  useEffect(
    () =>
      provideFrontShell(() => {
        const tab = activeTab();
        return tab?.slots.find((x) => x.id === tab.activeSlot)?.clientId ?? null;
      }),
    [],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` re-runs the check on Retry.
  useEffect(() => {
    if (!applyId) {
      setPhase({ kind: 'none' });
      return;
    }
    let stopped = false;
    const check = async (first: boolean) => {
      try {
        const res = await checkApply(applyId);
        if (stopped) return;
        if (!res.valid || !res.deviceId) {
          forgetApply();
          setPhase({ kind: 'ended', reason: res.reason });
          return;
        }
        if (first) {
          setPhase({
            kind: 'ready',
            applyId,
            deviceId: res.deviceId,
            serverName: res.serverName ?? res.deviceId,
          });
          void loadLeases();
        }
      } catch (err) {
        if (!stopped && first) setPhase({ kind: 'failed', applyId, error: messageOf(err) });
      }
    };
    void check(true);
    const id = window.setInterval(() => void check(false), RECHECK_MS);
    return () => {
      stopped = true;
      window.clearInterval(id);
    };
  }, [applyId, attempt]);

  if (phase.kind === 'none') {
    return (
      <Centered>
        <EmptyState
          icon="workbench"
          title={t('noApply.title')}
          action={
            <Link
              to="/mainboard"
              className="inline-flex h-8 items-center gap-2 rounded-md bg-zinc-900 px-3 text-[13px] font-medium text-white hover:bg-zinc-700 dark:bg-zinc-100 dark:text-zinc-900"
            >
              {t('noApply.action')}
            </Link>
          }
        >
          {t('noApply.body')}
        </EmptyState>
      </Centered>
    );
  }
  if (phase.kind === 'checking') {
    return (
      <Centered>
        <div className="flex items-center gap-2 text-[13px] text-zinc-500" data-testid="workbench-checking">
          <Spinner size={14} /> {t('checking')}
        </div>
      </Centered>
    );
  }
  if (phase.kind === 'ended') {
    const reasonKey = phase.reason ? `ended.reason.${phase.reason}` : '';
    return (
      <Centered>
        <EmptyState
          icon="alert"
          title={t('ended.title')}
          action={
            <Link
              to="/mainboard"
              className="inline-flex h-8 items-center gap-2 rounded-md bg-zinc-900 px-3 text-[13px] font-medium text-white hover:bg-zinc-700 dark:bg-zinc-100 dark:text-zinc-900"
            >
              {t('ended.action')}
            </Link>
          }
        >
          <span data-testid="workbench-ended">
            {reasonKey ? t(reasonKey, { defaultValue: t('ended.generic') }) : t('ended.generic')}
          </span>
        </EmptyState>
      </Centered>
    );
  }
  if (phase.kind === 'failed') {
    return (
      <Centered>
        <Alert tone="danger">
          <span className="flex items-center gap-3">
            {t('checkFailed', { error: phase.error })}
            <Button size="sm" onClick={() => setAttempt((a) => a + 1)}>
              {t('devices:common.retry')}
            </Button>
          </span>
        </Alert>
      </Centered>
    );
  }
  return (
    <Workbench
      key={phase.applyId}
      applyId={phase.applyId}
      deviceId={phase.deviceId}
      serverName={phase.serverName}
      userKey={userId || userName}
      onEnded={(reason) => setPhase({ kind: 'ended', reason })}
    />
  );
}

function Centered({ children }: { children: React.ReactNode }) {
  return <div className="flex flex-1 items-center justify-center p-6">{children}</div>;
}

function Workbench({
  applyId,
  deviceId,
  serverName,
  userKey,
  onEnded,
}: {
  applyId: string;
  deviceId: string;
  serverName: string;
  userKey: string;
  onEnded: (reason: string | null) => void;
}) {
  const { t } = useTranslation('workbench');
  const navigate = useNavigate();
  const [bound, setBound] = useState(false);

  useEffect(() => {
    bindWorkbench(userKey, applyId);
    setBound(true);
    return () => unbindWorkbench();
  }, [userKey, applyId]);
  // Broadcast input is for this visit of the workbench only (terminal/broadcast.ts): leaving it, or
  // another apply, turns it off.
  useEffect(() => () => stopBroadcast(), []);

  useEffect(() => {
    realtime.start();
    watchLeaseNotices();
    return watchBoardState(deviceId);
  }, [deviceId]);

  const ctx = useMemo(() => ({ applyId, deviceId, navigate }), [applyId, deviceId, navigate]);
  useEffect(() => installWorkbenchCommands(ctx), [ctx]);
  useEffect(() => {
    const release = hostFlashPane(deviceId);
    const off = installWorkbenchFlashCommands(deviceId);
    return () => {
      off();
      release();
    };
  }, [deviceId]);
  useWorkbenchKeys();
  useDesktopCommands();

  const wb = useSnapshot(workbench);
  const vnc = useSnapshot(vncWindow);
  const code = useSnapshot(codeWindow);
  const fl = useSnapshot(flash);
  const show = wb.layout.show;
  const showFlash = fl.paneOpen && fl.paneDevice === deviceId;
  const narrow = useNarrow();
  const coarse = useCoarsePointer();
  if (!bound) return null;

  const dialogs = (
    <>
      <LeaseDialogs
        onUnlocked={() => {
          forgetApply();
          navigate('/mainboard');
        }}
      />
      <ResetDialog applyId={applyId} deviceId={deviceId} />
    </>
  );

  const flashPane = (
    <FlashJobView
      deviceId={deviceId}
      compact
      actions={
        isFinal(latestJob(deviceId)?.job) ? (
          <Button
            size="sm"
            icon="terminal"
            onClick={() => shellOps.newShell('serial')}
            data-testid="flash-open-serial"
          >
            {t('flash:job.openSerial')}
          </Button>
        ) : null
      }
    />
  );
  const closeFlash = (
    <IconButton
      icon="x"
      size={13}
      className="-mr-1 h-6 w-6"
      label={t('panes.hide', { pane: t('flash:job.pane') })}
      onClick={() => {
        flash.paneOpen = false;
      }}
    />
  );
  const vncPane = (
    <Suspense fallback={<Spinner size={14} />}>
      <VncPane applyId={applyId} />
    </Suspense>
  );
  const codePane = (
    <CodePane
      applyId={applyId}
      onOpenFiles={() => togglePane('files', true)}
      onOpenEditor={() => togglePane('editor', true)}
    />
  );

  if (narrow) {
    // One pane at a time: every pane is a tab; the desktop, code and flash panes while they are open.
    const phonePanes: PhonePaneDef[] = [
      {
        id: 'shells',
        label: t('panes.shells'),
        icon: 'terminal',
        node: (
          <>
            <KeyRow />
            <div className="min-h-0 flex-1">
              <ShellArea applyId={applyId} deviceId={deviceId} />
            </div>
          </>
        ),
      },
      {
        id: 'files',
        label: t('panes.files'),
        icon: 'layers',
        node: (
          <PaneFrame paneId="files">
            <FileTreePane applyId={applyId} deviceId={deviceId} className="h-full" />
          </PaneFrame>
        ),
      },
      {
        id: 'editor',
        label: t('panes.editor'),
        icon: 'book',
        node: (
          <PaneFrame paneId="editor">
            <EditorPane applyId={applyId} deviceId={deviceId} className="h-full" />
          </PaneFrame>
        ),
      },
      {
        id: 'load',
        label: t('panes.load'),
        icon: 'dashboard',
        node: (
          <PaneFrame paneId="load" bodyClassName="overflow-auto">
            <LoadPane deviceId={deviceId} serverName={serverName} />
          </PaneFrame>
        ),
      },
    ];
    if (vnc.opened)
      phonePanes.push({
        id: 'vnc',
        label: t('desktop:panes.vnc'),
        icon: 'board',
        node: (
          <PaneFrame paneId="vnc" title={t('desktop:panes.vnc')} actions={<DesktopHideButton which="vnc" />}>
            {vncPane}
          </PaneFrame>
        ),
      });
    if (code.opened)
      phonePanes.push({
        id: 'code',
        label: t('desktop:panes.code'),
        icon: 'terminal',
        node: (
          <PaneFrame
            paneId="code"
            title={t('desktop:panes.code')}
            actions={<DesktopHideButton which="code" />}
          >
            {codePane}
          </PaneFrame>
        ),
      });
    if (showFlash)
      phonePanes.push({
        id: 'flash',
        label: t('flash:job.pane'),
        icon: 'upload',
        node: (
          <PaneFrame
            paneId="flash"
            title={t('flash:job.pane')}
            actions={closeFlash}
            bodyClassName="overflow-auto"
          >
            {flashPane}
          </PaneFrame>
        ),
      });
    return (
      <div
        className="flex min-h-0 flex-1 flex-col overflow-hidden bg-zinc-100 dark:bg-zinc-900"
        data-testid="workbench"
        data-layout="phone"
      >
        <WorkbenchHeader
          applyId={applyId}
          deviceId={deviceId}
          serverName={serverName}
          onEnded={onEnded}
          narrow
        />
        <PhoneWorkbench applyId={applyId} panes={phonePanes} />
        {dialogs}
      </div>
    );
  }

  const mainIds = [
    show.files && 'files',
    'center',
    vnc.opened && 'vnc',
    code.opened && 'code',
    show.load && 'load',
    showFlash && 'flash',
  ].filter(Boolean) as string[];
  const mainKey = `main:${mainIds.join('+')}`;
  const centerIds = [show.editor && 'editor', 'shells'].filter(Boolean) as string[];
  const centerKey = `center:${centerIds.join('+')}`;

  return (
    <div
      className="flex min-h-0 flex-1 flex-col overflow-hidden bg-zinc-100 dark:bg-zinc-900"
      data-testid="workbench"
      data-layout="columns"
    >
      <WorkbenchHeader applyId={applyId} deviceId={deviceId} serverName={serverName} onEnded={onEnded} />
      <SavedGroup key={mainKey} id={mainKey} orientation="horizontal" className="min-h-0 flex-1">
        {show.files ? (
          <>
            <Panel id="files" defaultSize="20%" minSize="160px">
              <PaneFrame paneId="files" title={t('panes.files')} actions={<HideButton pane="files" />}>
                <FileTreePane applyId={applyId} deviceId={deviceId} className="h-full" />
              </PaneFrame>
            </Panel>
            <ResizeHandle />
          </>
        ) : null}
        <Panel id="center" minSize="30%">
          <SavedGroup key={centerKey} id={centerKey} orientation="vertical" className="h-full">
            {show.editor ? (
              <>
                <Panel id="editor" defaultSize="38%" minSize="80px">
                  <PaneFrame paneId="editor" title={t('panes.editor')} actions={<HideButton pane="editor" />}>
                    <EditorPane applyId={applyId} deviceId={deviceId} className="h-full" />
                  </PaneFrame>
                </Panel>
                <ResizeHandle vertical />
              </>
            ) : null}
            <Panel id="shells" minSize="120px">
              {coarse ? (
                // A tablet: the columns fit, the soft keyboard still lacks Esc, Ctrl and the arrows.
                <div className="flex h-full flex-col">
                  <KeyRow />
                  <div className="min-h-0 flex-1">
                    <ShellArea applyId={applyId} deviceId={deviceId} />
                  </div>
                </div>
              ) : (
                <ShellArea applyId={applyId} deviceId={deviceId} />
              )}
            </Panel>
          </SavedGroup>
        </Panel>
        {vnc.opened ? (
          <>
            <ResizeHandle />
            <Panel id="vnc" defaultSize="45%" minSize="240px">
              <PaneFrame
                paneId="vnc"
                title={t('desktop:panes.vnc')}
                actions={<DesktopHideButton which="vnc" />}
              >
                {vncPane}
              </PaneFrame>
            </Panel>
          </>
        ) : null}
        {code.opened ? (
          <>
            <ResizeHandle />
            <Panel id="code" defaultSize="30%" minSize="200px">
              <PaneFrame
                paneId="code"
                title={t('desktop:panes.code')}
                actions={<DesktopHideButton which="code" />}
              >
                {codePane}
              </PaneFrame>
            </Panel>
          </>
        ) : null}
        {show.load ? (
          <>
            <ResizeHandle />
            <Panel id="load" defaultSize="24%" minSize="200px">
              <PaneFrame paneId="load" title={t('panes.load')} actions={<HideButton pane="load" />}>
                <LoadPane deviceId={deviceId} serverName={serverName} />
              </PaneFrame>
            </Panel>
          </>
        ) : null}
        {showFlash ? (
          <>
            <ResizeHandle />
            <Panel id="flash" defaultSize="28%" minSize="260px">
              <PaneFrame
                paneId="flash"
                title={t('flash:job.pane')}
                actions={closeFlash}
                bodyClassName="overflow-auto"
              >
                {flashPane}
              </PaneFrame>
            </Panel>
          </>
        ) : null}
      </SavedGroup>
      {dialogs}
    </div>
  );
}

function HideButton({ pane }: { pane: 'files' | 'editor' | 'load' }) {
  const { t } = useTranslation('workbench');
  return (
    <IconButton
      icon="x"
      size={13}
      className="-mr-1 h-6 w-6"
      label={t('panes.hide', { pane: t(`panes.${pane}`) })}
      onClick={() => togglePane(pane, false)}
    />
  );
}

function DesktopHideButton({ which }: { which: 'vnc' | 'code' }) {
  const { t } = useTranslation('desktop');
  return (
    <IconButton
      icon="x"
      size={13}
      className="-mr-1 h-6 w-6"
      label={t('panes.hide', { pane: t(`panes.${which}`) })}
      onClick={() => (which === 'vnc' ? toggleVnc(false) : toggleCode(false))}
      data-testid={`${which}-hide`}
    />
  );
}

const paneToggles: { pane: 'files' | 'editor' | 'load'; icon: IconName }[] = [
  { pane: 'files', icon: 'layers' },
  { pane: 'editor', icon: 'book' },
  { pane: 'load', icon: 'dashboard' },
];

function WorkbenchHeader({
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
      </div>
      {lease && left !== null ? (
        <div
          className="hidden items-baseline gap-1.5 text-xs md:flex"
          title={t('header.endsAt', { date: dateTimeText(i18n.language, lease.endsAt) })}
        >
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

function ResetDialog({ applyId, deviceId }: { applyId: string; deviceId: string }) {
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
