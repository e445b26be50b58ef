// Palette commands of the workbench, registered while it is mounted: shells (new, serial, split, close,
// search, terminal theme, tabs), focus movement, pane visibility and the board's actions (renew, power
// reset, leave, unlock). Each has the same keyboard shortcut the workbench binds (see keys.ts).
import { proxy } from 'valtio';
import { notify } from '#web/state/notices.ts';
import { type PaletteCommand, registerCommands } from '#web/palette/registry.ts';
import { leases, leaveApply, messageOf } from '#web/state/devices.ts';
import { t } from '#web/i18n/i18n.ts';
import { moveFocus } from './focus.ts';
import { shellOps } from './shell-ops.ts';
import { cycleTab, togglePane } from './store.ts';

/** UI state of the workbench that commands open: the power-reset confirmation. */
export const workbenchUi = proxy({ resetOpen: false });

export interface WorkbenchContext {
  applyId: string;
  deviceId: string;
  navigate: (to: string) => void;
}

const SECTION = 'workbench:palette.section';

/** The shortcuts, shown in the palette and bound in keys.ts. */
export const SHORTCUTS = {
  newShell: ['Ctrl', 'Alt', 'N'],
  newSerial: ['Ctrl', 'Alt', 'Shift', 'N'],
  split: ['Ctrl', 'Alt', '\\'],
  close: ['Ctrl', 'Alt', 'W'],
  search: ['Ctrl', 'Alt', 'F'],
  termTheme: ['Ctrl', 'Alt', 'M'],
  nextTab: ['Ctrl', 'Alt', 'PgDn'],
  prevTab: ['Ctrl', 'Alt', 'PgUp'],
  focusLeft: ['Ctrl', 'Alt', '←'],
  focusRight: ['Ctrl', 'Alt', '→'],
  focusUp: ['Ctrl', 'Alt', '↑'],
  focusDown: ['Ctrl', 'Alt', '↓'],
  toggleFiles: ['Ctrl', 'Alt', 'B'],
  toggleEditor: ['Ctrl', 'Alt', 'E'],
  toggleLoad: ['Ctrl', 'Alt', 'G'],
  reset: ['Ctrl', 'Alt', 'R'],
} as const;

export function workbenchCommands(ctx: WorkbenchContext): PaletteCommand[] {
  const c = (
    id: keyof typeof SHORTCUTS | 'renew' | 'leave' | 'unlock',
    run: PaletteCommand['run'],
    icon?: PaletteCommand['icon'],
  ): PaletteCommand => ({
    id: `workbench.${id}`,
    titleKey: `workbench:palette.${id}`,
    section: SECTION,
    shortcut: id in SHORTCUTS ? SHORTCUTS[id as keyof typeof SHORTCUTS] : undefined,
    icon,
    keywords: ['workbench', 'shell', 'terminal'],
    run,
  });
  // The palette closes before a command runs; focus moves after it has let go of the focus.
  const later = (fn: () => void) => () => {
    window.setTimeout(fn, 0);
  };
  return [
    c('newShell', later(() => shellOps.newShell('login')), 'terminal'),
    c('newSerial', later(() => shellOps.newShell('serial')), 'terminal'),
    c('split', later(() => shellOps.split()), 'panelLeft'),
    c('close', later(() => shellOps.closeFocused()), 'x'),
    c('search', later(() => shellOps.search()), 'search'),
    c('termTheme', () => shellOps.toggleTheme(), 'moon'),
    c('nextTab', later(() => cycleTab(1)), 'chevronRight'),
    c('prevTab', later(() => cycleTab(-1)), 'chevronLeft'),
    c('focusLeft', later(() => void moveFocus('left')), 'arrowLeft'),
    c('focusRight', later(() => void moveFocus('right')), 'arrowRight'),
    c('focusUp', later(() => void moveFocus('up'))),
    c('focusDown', later(() => void moveFocus('down'))),
    c('toggleFiles', () => togglePane('files'), 'layers'),
    c('toggleEditor', () => togglePane('editor'), 'book'),
    c('toggleLoad', () => togglePane('load'), 'dashboard'),
    c('reset', () => {
      workbenchUi.resetOpen = true;
    }, 'rotate'),
    c('renew', () => {
      leases.dialog = { kind: 'renew', deviceId: ctx.deviceId };
    }, 'refresh'),
    c('leave', async (p) => {
      try {
        await leaveApply(ctx.applyId, ctx.deviceId);
        p.navigate('/mainboard');
      } catch (err) {
        notify('error', t('workbench:leave.failed', { error: messageOf(err) }));
      }
    }, 'logout'),
    c('unlock', () => {
      leases.dialog = { kind: 'unlock', deviceId: ctx.deviceId };
    }, 'lock'),
  ];
}

export function installWorkbenchCommands(ctx: WorkbenchContext): () => void {
  return registerCommands('workbench', workbenchCommands(ctx));
}
