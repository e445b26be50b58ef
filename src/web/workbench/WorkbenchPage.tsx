// /workbench: the terminal-first work surface on the board of the current apply. The apply comes from
// the applyInfo cookie written by "Start"; it is checked first (a stale one shows why it ended). Then:
// a header (WorkbenchHeader.tsx: the board, its state, time left and actions),
// and resizable panes — file tree, editor, shells (tabs and side-by-side splits) and load graphs —
// whose sizes, visibility and open shells are kept per user in localStorage. Ctrl+Alt+Arrow moves the
// focus between panes; every action is also a palette command.

import { type ComponentProps, lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { Panel } from 'react-resizable-panels';
import { useSnapshot } from 'valtio';
import { watchBoardState, watchLeaseNotices } from '#web/boards/live.ts';
import { checkApply, forgetApply, loadLeases, messageOf } from '#web/boards/store.ts';
import { Alert, Button, EmptyState, IconButton, Spinner } from '#web/components/ui.tsx';
import { useCoarsePointer, useNarrow } from '#web/components/useMedia.ts';
import { CodePane } from '#web/desktop/CodePane.tsx';
import { useDesktopCommands } from '#web/desktop/commands.ts';
import { codeWindow, toggleCode, toggleVnc, vncWindow } from '#web/desktop/state.ts';
import { hostLeaseDialogs, installDeviceCommands } from '#web/devices/commands.ts';
import { LeaseDialogs } from '#web/devices/LeaseDialogs.tsx';
import { FileTreePane } from '#web/files/FileTreePane.tsx';
import { installWorkbenchFlashCommands } from '#web/flash/commands.ts';
import { FlashJobView } from '#web/flash/FlashJobView.tsx';
import { isFinal } from '#web/flash/format.ts';
import { flash, hostFlashPane, latestJob } from '#web/flash/state.ts';
import { usePluginCommands } from '#web/plugins/commands.ts';
import { PluginDialog } from '#web/plugins/PluginDialog.tsx';
import { realtime } from '#web/realtime/client.ts';
import { Link, useNavigate } from '#web/router/router.tsx';
import { provideFrontShell } from '#web/state/front-shell.ts';
import { session } from '#web/state/session.ts';
import { readApplyInfo } from '#web/state/storage.ts';
import { stopBroadcast } from '#web/terminal/broadcast.ts';
import { installWorkbenchCommands } from './commands.ts';
import { KeyRow } from './KeyRow.tsx';
import { useWorkbenchKeys } from './keys.ts';
import { PaneFrame, ResizeHandle, SavedGroup } from './PaneFrame.tsx';
import { type PhonePaneDef, PhoneWorkbench } from './PhoneWorkbench.tsx';
import { ShellArea } from './ShellArea.tsx';
import { SnapshotsDialog } from './SnapshotsDialog.tsx';
import { shellOps } from './shell-ops.ts';
import { installSnapshotCommands } from './snapshots.ts';
import { activeTab, bindWorkbench, togglePane, unbindWorkbench, workbench } from './store.ts';
import { ResetDialog, WorkbenchHeader } from './WorkbenchHeader.tsx';

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
  useEffect(() => installSnapshotCommands(ctx), [ctx]);
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
  usePluginCommands(applyId);

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
      <SnapshotsDialog applyId={applyId} deviceId={deviceId} />
      <PluginDialog applyId={applyId} />
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
            <div className="min-h-0 flex-1">
              <ShellArea applyId={applyId} deviceId={deviceId} />
            </div>
            {/* Under the terminal: just above the soft keyboard. */}
            <KeyRow />
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
                  <div className="min-h-0 flex-1">
                    <ShellArea applyId={applyId} deviceId={deviceId} />
                  </div>
                  <KeyRow />
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
