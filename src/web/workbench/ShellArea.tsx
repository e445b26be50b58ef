// The shells of the workbench: a tab bar, and in each tab one shell or several side by side in a
// resizable group. Tabs that are not shown stay mounted (hidden), so their terminals keep streaming and
// keep their scrollback; the terminal objects themselves live in the terminal registry, outside React.
// A tab whose shells broadcast input carries an amber band and a toggle showing how many shells the
// keys go to (broadcast-slots.ts).
import { useEffect } from 'react';
import { useTranslation } from 'react-i18next';
import { Panel } from 'react-resizable-panels';
import { useSnapshot } from 'valtio';
import { Icon } from '#web/components/icons.tsx';
import { cx, IconButton } from '#web/components/ui.tsx';
import { appState, setDarkTermTheme } from '#web/state/app.ts';
import { notify } from '#web/state/notices.ts';
import { broadcast } from '#web/terminal/broadcast.ts';
import { BroadcastIcon } from './BroadcastMarks.tsx';
import { broadcastAllSlots, slotsBroadcasting, toggleSlotsBroadcast } from './broadcast-slots.ts';
import { CloseShellDialog } from './CloseShellDialog.tsx';
import { requestClose } from './close-shells.ts';
import { PaneFrame, ResizeHandle, SavedGroup } from './PaneFrame.tsx';
import { installShellOps } from './shell-ops.ts';
import {
  addTab,
  reopenLastClosed,
  type ShellSlot,
  type ShellTab,
  selectTab,
  setActiveSlot,
  splitActive,
  workbench,
} from './store.ts';
import { focusSlot, restartSlot, searchSlot, TerminalSlot } from './TerminalSlot.tsx';

/** The slot whose pane holds the focus, else the active slot of the active tab. */
function focusedSlot(): ShellSlot | undefined {
  const el = document.activeElement?.closest<HTMLElement>('[data-slot-id]');
  const id = el?.dataset.slotId;
  const l = workbench.layout;
  for (const tab of l.tabs) {
    const s = tab.slots.find((x) => x.id === id);
    if (s) return s;
  }
  const tab = l.tabs.find((t) => t.id === l.activeTab);
  return tab?.slots.find((s) => s.id === tab.activeSlot);
}

function focusLater(slotId: string): void {
  // The new panel mounts on the next render; focus it once it is in the document.
  requestAnimationFrame(() => requestAnimationFrame(() => focusSlot(slotId)));
}

export function ShellArea({ applyId, deviceId }: { applyId: string; deviceId: string }) {
  const { t } = useTranslation('workbench');
  const wb = useSnapshot(workbench);
  const tabs = wb.layout.tabs as readonly ShellTab[];
  const { members } = useSnapshot(broadcast);

  useEffect(
    () =>
      installShellOps({
        newShell: (kind, board) => focusLater(addTab(kind, board).id),
        split: () => {
          const cur = focusedSlot();
          if (cur) setActiveSlot(cur.id);
          focusLater(splitActive('login').id);
        },
        closeFocused: () => {
          const cur = focusedSlot();
          if (!cur) return;
          void requestClose(applyId, [cur.id], () => {
            const next = focusedSlot();
            if (next) focusLater(next.id);
          });
        },
        reopenClosed: () => {
          const slot = reopenLastClosed();
          if (slot) focusLater(slot.id);
          else notify('info', t('reopen.none'));
        },
        restartFocused: () => {
          const cur = focusedSlot();
          if (cur) restartSlot(applyId, cur);
        },
        search: () => {
          const cur = focusedSlot();
          if (cur) searchSlot(cur.id);
        },
        toggleBroadcast: () => {
          const cur = focusedSlot();
          if (cur) toggleSlotsBroadcast([cur]);
        },
        broadcastTab: () => {
          const cur = focusedSlot();
          const tab = workbench.layout.tabs.find((x) => x.slots.some((s) => s.id === cur?.id));
          if (tab) toggleSlotsBroadcast(tab.slots);
        },
        broadcastAll: () => broadcastAllSlots(workbench.layout),
        toggleTheme: () => setDarkTermTheme(!appState.darkTermTheme),
        focusActive: () => {
          const cur = focusedSlot();
          if (cur) focusSlot(cur.id);
        },
      }),
    [applyId, t],
  );

  // The first visit opens one shell, so the workbench is never an empty room.
  useEffect(() => {
    if (workbench.layout.tabs.length === 0) addTab('login');
  }, []);

  // Shells are numbered per board and kind; a shell of another board carries that board's name.
  const counters = new Map<string, number>();
  const labels = new Map<string, string>();
  for (const tab of tabs) {
    for (const s of tab.slots) {
      const key = `${s.board?.deviceId ?? ''}:${s.kind}`;
      const n = (counters.get(key) ?? 0) + 1;
      counters.set(key, n);
      const label = t(s.kind === 'serial' ? 'shells.serial' : 'shells.shell', { n });
      labels.set(s.id, s.board ? t('shells.ofBoard', { board: s.board.serverName, shell: label }) : label);
    }
  }

  return (
    <div className="flex h-full min-h-0 flex-col bg-white dark:bg-zinc-950" data-testid="shell-area">
      <CloseShellDialog />
      <div
        role="tablist"
        aria-label={t('shells.tabs')}
        className="flex h-8 shrink-0 items-stretch gap-px overflow-x-auto border-b border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-900"
      >
        {tabs.map((tab) => {
          const active = tab.id === wb.layout.activeTab;
          const name = tab.title ?? tab.slots.map((s) => labels.get(s.id)).join(' | ');
          const casting = slotsBroadcasting(tab.slots, members);
          return (
            <div
              key={tab.id}
              data-broadcast={casting ? 'on' : 'off'}
              className={cx(
                'group flex shrink-0 items-center border-r border-zinc-200 text-xs dark:border-zinc-800',
                active
                  ? 'bg-white text-zinc-900 dark:bg-zinc-950 dark:text-zinc-100'
                  : 'text-zinc-500 hover:text-zinc-800 dark:hover:text-zinc-200',
                casting && 'bg-amber-50 shadow-[inset_0_3px_0_0_var(--color-amber-500)] dark:bg-amber-950/40',
              )}
            >
              <button
                type="button"
                role="tab"
                aria-selected={active}
                data-testid="shell-tab"
                onClick={() => {
                  selectTab(tab.id);
                  focusLater(tab.activeSlot);
                }}
                className="flex h-full items-center gap-1.5 pr-1 pl-3 outline-none focus-visible:underline"
              >
                <Icon name="terminal" size={12} className={active ? 'text-emerald-500' : ''} />
                <span className="max-w-48 truncate">{name}</span>
                {casting ? (
                  <span className="sr-only">{`, ${t('broadcast.bar', { count: members.length })}`}</span>
                ) : null}
              </button>
              <button
                type="button"
                aria-pressed={casting}
                aria-label={t('broadcast.toggleTab', { name })}
                title={
                  casting ? t('broadcast.bar', { count: members.length }) : t('broadcast.toggleTab', { name })
                }
                onClick={() => toggleSlotsBroadcast(tab.slots)}
                data-testid="tab-broadcast"
                className={cx(
                  'mr-0.5 flex items-center gap-0.5 rounded px-1 py-0.5',
                  casting
                    ? 'bg-amber-400 font-semibold text-amber-950 hover:bg-amber-300'
                    : 'opacity-0 group-hover:opacity-100 hover:bg-zinc-200 focus-visible:opacity-100 dark:hover:bg-zinc-800',
                )}
              >
                <BroadcastIcon size={11} />
                {casting ? <span aria-hidden>{members.length}</span> : null}
              </button>
              <button
                type="button"
                aria-label={t('shells.closeTab', { name })}
                onClick={() =>
                  void requestClose(
                    applyId,
                    tab.slots.map((s) => s.id),
                    () => {
                      const next = focusedSlot();
                      if (next) focusLater(next.id);
                    },
                  )
                }
                className="mr-1 rounded p-0.5 opacity-0 group-hover:opacity-100 hover:bg-zinc-200 focus-visible:opacity-100 dark:hover:bg-zinc-800"
              >
                <Icon name="x" size={11} />
              </button>
            </div>
          );
        })}
        <div className="ml-auto flex items-center gap-0.5 px-1">
          <IconButton
            icon="terminal"
            size={13}
            className="h-6 w-6"
            label={t('shells.newShell')}
            onClick={() => focusLater(addTab('login').id)}
            data-testid="new-shell"
          />
          <IconButton
            icon="cpu"
            size={13}
            className="h-6 w-6"
            label={t('shells.newSerial')}
            onClick={() => focusLater(addTab('serial').id)}
            data-testid="new-serial"
          />
          <IconButton
            icon="panelLeft"
            size={13}
            className="h-6 w-6"
            label={t('shells.split')}
            onClick={() => focusLater(splitActive('login').id)}
            data-testid="split-shell"
          />
        </div>
      </div>
      <div className="relative min-h-0 flex-1">
        {tabs.length === 0 ? (
          <div className="flex h-full flex-col items-center justify-center gap-2 text-[13px] text-zinc-500">
            <span>{t('shells.empty')}</span>
            <span className="text-[11px] text-zinc-400">{t('shells.keys')}</span>
          </div>
        ) : null}
        {tabs.map((tab) => (
          <div
            key={tab.id}
            className={cx('absolute inset-0', tab.id !== wb.layout.activeTab && 'invisible')}
            data-tab-id={tab.id}
          >
            <TabBody
              applyId={applyId}
              deviceId={deviceId}
              tab={tab}
              labels={labels}
              hidden={tab.id !== wb.layout.activeTab}
            />
          </div>
        ))}
      </div>
    </div>
  );
}

function TabBody({
  applyId,
  deviceId,
  tab,
  labels,
  hidden,
}: {
  applyId: string;
  deviceId: string;
  tab: ShellTab;
  labels: Map<string, string>;
  hidden: boolean;
}) {
  const { t } = useTranslation('workbench');
  const groupId = `split-${tab.id}`;
  const ids = tab.slots.map((s) => s.id).join('+');
  return (
    <SavedGroup key={ids} id={groupId} orientation="horizontal" className="h-full" keys={false}>
      {tab.slots.map((slot, i) => (
        <SlotPanel key={slot.id} first={i === 0}>
          <Panel id={slot.id} minSize="120px">
            <PaneFrame
              paneId={`shell:${slot.id}`}
              // A lone shell is named by its tab; split shells need their own title bar to tell them apart.
              title={tab.slots.length > 1 ? labels.get(slot.id) : undefined}
              actions={
                tab.slots.length > 1 ? (
                  <IconButton
                    icon="x"
                    size={12}
                    className="-mr-1 h-6 w-6"
                    label={t('shells.close')}
                    onClick={() => void requestClose(applyId, [slot.id])}
                  />
                ) : undefined
              }
              bodyClassName="bg-zinc-950"
            >
              <div className="h-full" data-slot-id={slot.id} onFocusCapture={() => setActiveSlot(slot.id)}>
                <TerminalSlot applyId={applyId} deviceId={deviceId} slot={slot} hidden={hidden} />
              </div>
            </PaneFrame>
          </Panel>
        </SlotPanel>
      ))}
    </SavedGroup>
  );
}

function SlotPanel({ first, children }: { first: boolean; children: React.ReactNode }) {
  return (
    <>
      {first ? null : <ResizeHandle />}
      {children}
    </>
  );
}
