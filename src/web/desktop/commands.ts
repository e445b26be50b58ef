// Palette commands of the desktop panes, registered while the workbench is mounted: show or hide the
// VNC and code panes, send Ctrl+Alt+Del and the other keys a browser keeps for itself, toggle view-only
// and scaling, reconnect. Their keys (Ctrl+Alt+V / C / End by default) are the keymap's
// toggleDesktop, toggleCode and ctrlAltDel (src/shared/keymap.ts), run by workbench/keys.ts.
import { useEffect } from 'react';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { SPECIAL_KEYS, type SpecialKey, vncOps } from './ops.ts';
import { saveVncSettings, toggleCode, toggleVnc, vncWindow } from './state.ts';

const SECTION = 'desktop:palette.section';

const later = (fn: () => void) => () => {
  window.setTimeout(fn, 0);
};

export function desktopCommands(): PaletteCommand[] {
  const open = () => vncWindow.opened;
  const keys = (Object.keys(SPECIAL_KEYS) as SpecialKey[]).filter((k) => k !== 'ctrlAltDel');
  return [
    {
      id: 'desktop.toggleVnc',
      titleKey: 'desktop:palette.toggleVnc',
      section: SECTION,
      context: 'desktop',
      icon: 'board',
      keywords: ['vnc', 'desktop', 'x11', 'gui', 'remote'],
      run: later(() => {
        toggleVnc();
        if (vncWindow.opened) window.setTimeout(() => vncOps.focus(), 50);
      }),
    },
    {
      id: 'desktop.toggleCode',
      titleKey: 'desktop:palette.toggleCode',
      section: SECTION,
      context: 'desktop',
      icon: 'book',
      keywords: ['code', 'vscode', 'code-server', 'editor'],
      run: () => toggleCode(),
    },
    {
      id: 'desktop.ctrlAltDel',
      titleKey: 'desktop:palette.ctrlAltDel',
      section: SECTION,
      context: 'desktop',
      icon: 'keyboard',
      keywords: ['vnc', 'keys'],
      when: open,
      run: later(() => vncOps.sendKeys('ctrlAltDel')),
    },
    ...keys.map(
      (k): PaletteCommand => ({
        id: `desktop.key.${k}`,
        titleKey: 'desktop:palette.sendKey',
        paramKeys: { key: `desktop:keys.${k}` },
        section: SECTION,
        context: 'desktop',
        icon: 'keyboard',
        keywords: ['vnc', 'keys', k],
        when: open,
        run: later(() => vncOps.sendKeys(k)),
      }),
    ),
    {
      id: 'desktop.viewOnly',
      titleKey: 'desktop:palette.viewOnly',
      section: SECTION,
      context: 'desktop',
      icon: 'lock',
      keywords: ['vnc', 'view', 'read only'],
      when: open,
      run: () => {
        vncWindow.viewOnly = !vncWindow.viewOnly;
        saveVncSettings();
      },
    },
    {
      id: 'desktop.scale',
      titleKey: 'desktop:palette.scale',
      section: SECTION,
      context: 'desktop',
      icon: 'zoomIn',
      keywords: ['vnc', 'scale', 'fit', '1:1', 'zoom'],
      when: open,
      run: () => {
        vncWindow.scale = vncWindow.scale === 'fit' ? 'real' : 'fit';
        saveVncSettings();
      },
    },
    {
      id: 'desktop.reconnect',
      titleKey: 'desktop:palette.reconnect',
      section: SECTION,
      context: 'desktop',
      icon: 'refresh',
      keywords: ['vnc', 'reconnect'],
      when: open,
      run: () => vncOps.reconnect(),
    },
  ];
}

/** Palette commands of the desktop panes, while the workbench is mounted (their keys are in the keymap). */
export function useDesktopCommands(): void {
  useEffect(() => registerCommands('desktop', desktopCommands()), []);
}
