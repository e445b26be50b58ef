// /workbench: the terminal-first work surface on the board of the current apply. The apply comes from
// the applyInfo cookie written by "Start"; it is checked first (a stale one shows why it ended). Then:
// a header with the board's name, state, live time left and its actions (renew, power reset, leave),
// and resizable panes — file tree, editor, shells (tabs and side-by-side splits) and load graphs —
// whose sizes, visibility and open shells are kept per user in localStorage. Ctrl+Alt+Arrow moves the
// focus between panes; every action is also a palette command.
import { useEffect, useMemo, useState } from 'react';
import { Group, type Layout, Panel } from 'react-resizable-panels';
import { useTranslation } from 'react-i18next';
import { Link, useNavigate } from 'react-router-dom';
import { useSnapshot } from 'valtio';
import { Modal } from '#web/components/Modal.tsx';
import { Icon, type IconName } from '#web/components/icons.tsx';
import { Alert, Button, cx, EmptyState, IconButton, Spinner } from '#web/components/ui.tsx';
import { InlineName, LeaseDialogs } from '#web/devices/LeaseDialogs.tsx';
import { hostLeaseDialogs, installDeviceCommands } from '#web/devices/commands.ts';
import { watchBoardState, watchLeaseNotices } from '#web/devices/live.ts';
import { realtime } from '#web/realtime/client.ts';
import { StateBadge } from '#web/devices/StateBadge.tsx';
import { dateTimeText, timeLeftText, usePerfNow } from '#web/devices/time.ts';
import { EditorPane } from '#web/files/EditorPane.tsx';
import { FileTreePane } from '#web/files/FileTreePane.tsx';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { readApplyInfo } from '#web/state/storage.ts';
import {
  checkApply,
  dataOf,
  forgetApply,
  leaseOf,
  leases,
  leaveApply,
  loadLeases,
  messageOf,
  powerReset,
  remainingAt,
} from '#web/state/devices.ts';
import { installWorkbenchCommands, workbenchUi } from './commands.ts';
import { LoadPane } from './LoadPane.tsx';
import { PaneFrame, ResizeHandle } from './PaneFrame.tsx';
import { ShellArea } from './ShellArea.tsx';
import { useWorkbenchKeys } from './keys.ts';
import { bindWorkbench, setGroupLayout, togglePane, unbindWorkbench, workbench } from './store.ts';

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
  const [phase, setPhase] = useState<Phase>(() => (applyId ? { kind: 'checking', applyId } : { kind: 'none' }));
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    installDeviceCommands();
    return hostLeaseDialogs();
  }, []);

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
          setPhase({ kind: 'ready', applyId, deviceId: res.deviceId, serverName: res.serverName ?? res.deviceId });
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
            <Link to="/mainboard" className="inline-flex h-8 items-center gap-2 rounded-md bg-zinc-900 px-3 text-[13px] font-medium text-white hover:bg-zinc-700 dark:bg-zinc-100 dark:text-zinc-900">
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
            <Link to="/mainboard" className="inline-flex h-8 items-center gap-2 rounded-md bg-zinc-900 px-3 text-[13px] font-medium text-white hover:bg-zinc-700 dark:bg-zinc-100 dark:text-zinc-900">
              {t('ended.action')}
            </Link>
          }
        >
          <span data-testid="workbench-ended">{reasonKey ? t(reasonKey, { defaultValue: t('ended.generic') }) : t('ended.generic')}</span>
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

  useEffect(() => {
    realtime.start();
    watchLeaseNotices();
    return watchBoardState(deviceId);
  }, [deviceId]);

  const ctx = useMemo(() => ({ applyId, deviceId, navigate }), [applyId, deviceId, navigate]);
  useEffect(() => installWorkbenchCommands(ctx), [ctx]);
  useWorkbenchKeys();

  const wb = useSnapshot(workbench);
  const show = wb.layout.show;
  if (!bound) return null;

  const mainIds = [show.files && 'files', 'center', show.load && 'load'].filter(Boolean) as string[];
  const mainKey = `main:${mainIds.join('+')}`;
  const centerIds = [show.editor && 'editor', 'shells'].filter(Boolean) as string[];
  const centerKey = `center:${centerIds.join('+')}`;

  return (
    <div className="flex min-h-0 flex-1 flex-col overflow-hidden bg-zinc-100 dark:bg-zinc-900" data-testid="workbench">
      <WorkbenchHeader applyId={applyId} deviceId={deviceId} serverName={serverName} onEnded={onEnded} />
      <Group
        key={mainKey}
        id={mainKey}
        orientation="horizontal"
        className="min-h-0 flex-1"
        defaultLayout={wb.layout.groups[mainKey] as Layout | undefined}
        onLayoutChanged={(layout) => setGroupLayout(mainKey, layout)}
      >
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
          <Group
            key={centerKey}
            id={centerKey}
            orientation="vertical"
            className="h-full"
            defaultLayout={wb.layout.groups[centerKey] as Layout | undefined}
            onLayoutChanged={(layout) => setGroupLayout(centerKey, layout)}
          >
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
              <ShellArea applyId={applyId} deviceId={deviceId} />
            </Panel>
          </Group>
        </Panel>
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
      </Group>
      <LeaseDialogs
        onUnlocked={() => {
          forgetApply();
          navigate('/mainboard');
        }}
      />
      <ResetDialog applyId={applyId} deviceId={deviceId} />
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
}: {
  applyId: string;
  deviceId: string;
  serverName: string;
  onEnded: (reason: string | null) => void;
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
      await leaveApply(applyId, deviceId);
      notify('info', t('leave.done', { name }));
      navigate('/mainboard');
    } catch (err) {
      notify('error', t('leave.failed', { error: messageOf(err) }));
    }
  };

  return (
    <header className="flex h-11 shrink-0 items-center gap-3 border-b border-zinc-200 bg-white px-3 dark:border-zinc-800 dark:bg-zinc-950" data-testid="workbench-header">
      <Link to="/mainboard" className="flex items-center gap-1 rounded text-xs text-zinc-500 hover:text-zinc-900 focus-ring dark:hover:text-zinc-100">
        <Icon name="chevronLeft" size={14} />
        <span className="hidden sm:inline">{t('header.back')}</span>
      </Link>
      <div className="h-4 w-px bg-zinc-200 dark:bg-zinc-800" />
      <div className="flex min-w-0 items-center gap-2">
        <Icon name="cpu" size={15} className="shrink-0 text-zinc-400" />
        {lease ? (
          <InlineName deviceId={deviceId} name={name} className="truncate text-[13px] font-semibold text-zinc-900 dark:text-zinc-100" />
        ) : (
          <span className="truncate text-[13px] font-semibold text-zinc-900 dark:text-zinc-100" data-testid="board-name">
            {name}
          </span>
        )}
        {lease ? <StateBadge state={lease.boardState} /> : null}
      </div>
      {lease && left !== null ? (
        <div className="hidden items-baseline gap-1.5 text-xs md:flex" title={t('header.endsAt', { date: dateTimeText(i18n.language, lease.endsAt) })}>
          <span
            className={cx(
              'font-mono tabular-nums',
              left <= 3_600_000 ? 'text-red-600 dark:text-red-400' : left <= 86_400_000 ? 'text-amber-600 dark:text-amber-400' : 'text-zinc-700 dark:text-zinc-300',
            )}
            data-testid="workbench-time-left"
          >
            {timeLeftText(t, left)}
          </span>
          <span className="text-zinc-400">{t('header.timeLeft')}</span>
        </div>
      ) : null}
      <div className="ml-auto flex items-center gap-1">
        <fieldset className="mr-1 flex items-center rounded-md border border-zinc-200 p-0.5 dark:border-zinc-800" aria-label={t('header.panes')}>
          {paneToggles.map(({ pane, icon }) => (
            <button
              key={pane}
              type="button"
              aria-pressed={wb.layout.show[pane]}
              title={t(wb.layout.show[pane] ? 'panes.hide' : 'panes.show', { pane: t(`panes.${pane}`) })}
              onClick={() => togglePane(pane)}
              className={cx(
                'inline-flex h-6 w-7 items-center justify-center rounded text-zinc-400 transition-colors focus-ring',
                wb.layout.show[pane] ? 'bg-zinc-100 text-zinc-800 dark:bg-zinc-800 dark:text-zinc-100' : 'hover:text-zinc-700 dark:hover:text-zinc-200',
              )}
            >
              <Icon name={icon} size={14} />
            </button>
          ))}
        </fieldset>
        <Button size="sm" variant="ghost" icon="refresh" disabled={!lease || !!busy} onClick={() => (leases.dialog = { kind: 'renew', deviceId })} data-testid="wb-renew">
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
        <Button size="sm" icon="logout" loading={busy === 'leave'} disabled={!!busy} onClick={() => void leave()} data-testid="wb-leave">
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
