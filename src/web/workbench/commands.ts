// Palette commands of the workbench, registered while it is mounted: shells (new, serial, split, close,
// search, broadcast input, terminal theme, tabs), focus movement, pane visibility and the board's actions (renew, power
// reset, leave, unlock). A command named after a keymap action shows the user's chord for it
// (src/shared/keymap.ts; the palette looks it up by id), the one keys.ts binds.
import { proxy } from 'valtio';
import type { KeymapAction } from '#shared/keymap.ts';
import { call } from '#web/api/http.ts';
import { heldBoardChoices } from '#web/boards/choices.ts';
import { Calls, leases, messageOf } from '#web/boards/store.ts';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { t } from '#web/i18n/i18n.ts';
import { stepTermFont } from '#web/state/app.ts';
import { notify } from '#web/state/notices.ts';
import { broadcast } from '#web/terminal/broadcast.ts';
import { stopAllBroadcast } from './broadcast-slots.ts';
import { leaveWorkbench } from './close-shells.ts';
import { focusLastTerminal, focusPaneElement, moveFocus } from './focus.ts';
import { resizeFocused, swapFocused } from './pane-keys.ts';
import { shellOps } from './shell-ops.ts';
import {
  activeTab,
  closedShells,
  cycleTab,
  renameTab,
  TAB_TITLE_MAX,
  togglePane,
  validTabTitle,
} from './store.ts';

/** UI state of the workbench that commands open: the power-reset confirmation. */
export const workbenchUi = proxy({ resetOpen: false, maximized: null as string | null });

/**
 * Maximises the pane holding the focus over the whole workbench, or restores the maximised one
 * (tmux's zoom). The focus stays on (or returns to) that pane's primary target.
 */
export function toggleMaximize(): void {
  const pane = document.activeElement?.closest<HTMLElement>('[data-pane-id]');
  const id = workbenchUi.maximized ? null : (pane?.dataset.paneId ?? null);
  workbenchUi.maximized = id;
  const again = id ?? pane?.dataset.paneId;
  if (!again) return;
  requestAnimationFrame(() => {
    const el = document.querySelector<HTMLElement>(`[data-pane-id="${CSS.escape(again)}"]`);
    if (el && !el.contains(document.activeElement)) focusPaneElement(el);
  });
}

export interface WorkbenchContext {
  applyId: string;
  deviceId: string;
  navigate: (to: string) => void;
}

const SECTION = 'palette:sections.workbench';

/** Commands about the board as a whole; the others act on the focused shell. */
const BOARD_LEVEL = new Set([
  'toggleFiles',
  'toggleEditor',
  'toggleLoad',
  'reset',
  'renew',
  'leave',
  'unlock',
]);

/** Commands that end or release something (they confirm; a harmless match ranks above them). */
const DESTRUCTIVE = new Set(['unlock', 'leave']);

/** Other names users type for these commands (e.g. tmux's and VS Code's words). */
const ALIASES: Partial<Record<string, readonly string[]>> = {
  newShell: ['new terminal', 'open terminal', 'terminal'],
  split: ['split terminal', 'split pane', 'vsplit'],
  close: ['close terminal', 'kill shell', 'close shell'],
  reopenClosed: ['reopen', 'undo close', 'restore shell', 'reopen terminal', 'closed shell'],
  search: ['find', 'find in terminal'],
  broadcast: ['synchronize panes', 'synchronize-panes', 'sync panes', 'send input to all', 'multi-exec'],
  broadcastTab: ['synchronize panes', 'synchronize-panes', 'sync panes', 'broadcast tab'],
  broadcastAll: ['broadcast all', 'send input to all', 'type into all shells'],
  stopBroadcast: ['stop broadcast', 'broadcast off', 'unsynchronize', 'synchronize-panes off'],
  maximize: ['zoom', 'maximize', 'maximise', 'restore', 'fullscreen'],
  restart: ['respawn', 'reconnect', 'restart shell', 'restart terminal'],
  lastTerminal: ['back to terminal', 'focus terminal', 'go to terminal'],
  reset: ['reboot', 'power cycle', 'restart the board'],
  renew: ['extend', 'extend lease'],
  unlock: ['release', 'release board', 'give back'],
  leave: ['disconnect', 'end session'],
  toggleFiles: ['explorer', 'sidebar'],
  toggleLoad: ['cpu', 'metrics', 'cpu usage', 'memory', 'load', 'graphs', 'monitor', 'top', 'stats'],
  renameTab: ['rename tab', 'name tab', 'title'],
  fontBigger: ['zoom in', 'larger text', 'font size'],
  fontSmaller: ['zoom out', 'smaller text', 'font size'],
  fontReset: ['reset zoom', 'default font size'],
  paneWider: ['resize pane', 'grow pane', 'resize-pane'],
  paneNarrower: ['resize pane', 'shrink pane', 'resize-pane'],
  paneTaller: ['resize pane', 'grow pane', 'resize-pane'],
  paneShorter: ['resize pane', 'shrink pane', 'resize-pane'],
  swapPrev: ['swap pane', 'move pane', 'swap-pane', 'move shell'],
  swapNext: ['swap pane', 'move pane', 'swap-pane', 'move shell'],
};

export function workbenchCommands(ctx: WorkbenchContext): PaletteCommand[] {
  const c = (
    id:
      | KeymapAction
      | 'renew'
      | 'leave'
      | 'unlock'
      | 'renameTab'
      | 'broadcastTab'
      | 'broadcastAll'
      | 'stopBroadcast'
      | 'shellOnBoard',
    run: PaletteCommand['run'],
    icon?: PaletteCommand['icon'],
  ): PaletteCommand => ({
    id: `workbench.${id}`,
    titleKey: `workbench:palette.${id}`,
    section: SECTION,
    icon,
    keywords: ['workbench', 'shell', 'terminal'],
    aliases: ALIASES[id],
    context: BOARD_LEVEL.has(id) ? 'board' : 'shell',
    destructive: DESTRUCTIVE.has(id) || undefined,
    run,
  });
  // The palette closes before a command runs; focus moves after it has let go of the focus.
  const later = (fn: () => void) => () => {
    window.setTimeout(fn, 0);
  };
  return [
    c(
      'newShell',
      later(() => shellOps.newShell('login')),
      'terminal',
    ),
    c(
      'newSerial',
      later(() => shellOps.newShell('serial')),
      'terminal',
    ),
    c(
      'split',
      later(() => shellOps.split()),
      'panelLeft',
    ),
    c(
      'close',
      later(() => shellOps.closeFocused()),
      'x',
    ),
    {
      ...c(
        'reopenClosed',
        later(() => shellOps.reopenClosed()),
        'refresh',
      ),
      when: () => closedShells.list.length > 0,
    },
    c(
      'search',
      later(() => shellOps.search()),
      'search',
    ),
    c(
      'broadcast',
      later(() => shellOps.toggleBroadcast()),
    ),
    c(
      'broadcastTab',
      later(() => shellOps.broadcastTab()),
    ),
    c(
      'broadcastAll',
      later(() => shellOps.broadcastAll()),
    ),
    {
      // A shell of another held board in a tab of this workbench, so broadcast input reaches several
      // boards (the workbench itself stays on its own board: files, editor, load and actions).
      ...c('shellOnBoard', async (_p, { deviceId }) => {
        try {
          const r = await call(Calls.applyDevice, { deviceId }, { silent: true });
          const board = { applyId: r.applyId, deviceId, serverName: r.deviceDto.serverName };
          window.setTimeout(() => shellOps.newShell('login', board), 0);
        } catch (err) {
          notify('error', t('workbench:palette.shellOnBoardFailed', { error: messageOf(err) }));
        }
      }),
      icon: 'terminal',
      when: () => heldBoardChoices().some((o) => o.value !== ctx.deviceId),
      args: [
        {
          key: 'deviceId',
          promptKey: 'workbench:palette.shellOnBoardPrompt',
          options: () => heldBoardChoices().filter((o) => o.value !== ctx.deviceId),
        },
      ],
    },
    {
      ...c('stopBroadcast', () => stopAllBroadcast()),
      when: () => broadcast.members.length > 0,
    },
    {
      ...c('renameTab', (_ctx, { title }) => {
        const tab = activeTab();
        if (tab) renameTab(tab.id, title);
        window.setTimeout(() => shellOps.focusActive(), 0);
      }),
      // Below the board's own Rename, which is what "rename" means in the workbench (ranking table).
      context: undefined,
      when: () => activeTab() !== undefined,
      args: [
        {
          key: 'title',
          promptKey: 'workbench:palette.renameTabPrompt',
          promptParams: { max: String(TAB_TITLE_MAX) },
          options: () => [{ value: '', label: t('workbench:palette.renameTabAuto') }],
          freeText: true,
          validate: (v) =>
            validTabTitle(v) ? null : t('workbench:palette.renameTabBad', { max: TAB_TITLE_MAX }),
        },
      ],
    },
    c('termTheme', () => shellOps.toggleTheme(), 'moon'),
    c('fontBigger', () => stepTermFont(1)),
    c('fontSmaller', () => stepTermFont(-1)),
    c('fontReset', () => stepTermFont(0)),
    c(
      'nextTab',
      later(() => cycleTab(1)),
      'chevronRight',
    ),
    c(
      'prevTab',
      later(() => cycleTab(-1)),
      'chevronLeft',
    ),
    c(
      'focusLeft',
      later(() => void moveFocus('left')),
      'arrowLeft',
    ),
    c(
      'focusRight',
      later(() => void moveFocus('right')),
      'arrowRight',
    ),
    c(
      'focusUp',
      later(() => void moveFocus('up')),
    ),
    c(
      'focusDown',
      later(() => void moveFocus('down')),
    ),
    c(
      'maximize',
      later(() => toggleMaximize()),
      'panelLeft',
    ),
    c(
      'paneWider',
      later(() => void resizeFocused('x', 1)),
      'arrowRight',
    ),
    c(
      'paneNarrower',
      later(() => void resizeFocused('x', -1)),
      'arrowLeft',
    ),
    c(
      'paneTaller',
      later(() => void resizeFocused('y', 1)),
    ),
    c(
      'paneShorter',
      later(() => void resizeFocused('y', -1)),
    ),
    c(
      'swapPrev',
      later(() => void swapFocused(-1)),
      'chevronLeft',
    ),
    c(
      'swapNext',
      later(() => void swapFocused(1)),
      'chevronRight',
    ),
    c(
      'restart',
      later(() => shellOps.restartFocused()),
      'refresh',
    ),
    c(
      'lastTerminal',
      later(() => void focusLastTerminal()),
      'terminal',
    ),
    c('toggleFiles', () => togglePane('files'), 'layers'),
    c('toggleEditor', () => togglePane('editor'), 'book'),
    c('toggleLoad', () => togglePane('load'), 'dashboard'),
    c(
      'reset',
      () => {
        workbenchUi.resetOpen = true;
      },
      'rotate',
    ),
    c(
      'renew',
      () => {
        leases.dialog = { kind: 'renew', deviceId: ctx.deviceId };
      },
      'refresh',
    ),
    {
      ...c(
        'leave',
        async (p, { confirm }) => {
          if (confirm !== 'leave') return;
          try {
            await leaveWorkbench(ctx.applyId, ctx.deviceId);
            p.navigate('/mainboard');
          } catch (err) {
            notify('error', t('workbench:leave.failed', { error: messageOf(err) }));
          }
        },
        'logout',
      ),
      // Leaving ends the board's session and every shell of it: asked first (Stay is chosen).
      args: [
        {
          key: 'confirm',
          promptKey: 'workbench:palette.leaveAsk',
          options: () => [
            { value: 'stay', label: t('workbench:palette.leaveStay') },
            { value: 'leave', label: t('workbench:palette.leaveYes') },
          ],
        },
      ],
    },
    c(
      'unlock',
      () => {
        leases.dialog = { kind: 'unlock', deviceId: ctx.deviceId };
      },
      'lock',
    ),
  ];
}

export function installWorkbenchCommands(ctx: WorkbenchContext): () => void {
  return registerCommands('workbench', workbenchCommands(ctx));
}
