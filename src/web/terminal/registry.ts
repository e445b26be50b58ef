// Live terminals by shell id, outside React (Cockpit keeps its terminal objects the same way): a
// pane that unmounts leaves its LiveShell here, scrollback and subscription intact; the workbench
// disposes it when the shell's tab is closed for good. Typed input is routed here: to the shell alone,
// or to every shell of the broadcast set when the shell is in it (broadcast.ts).
// The terminals themselves are made by get-shell.ts, which brings xterm: it comes with the terminal
// pane's chunk, so the workbench's own code (keys, broadcast, tabs) can look shells up without it.
import { appState, setDarkTermTheme } from '#web/state/app.ts';
import { leaveBroadcast } from './broadcast.ts';
import type { LiveShell } from './live-shell.ts';

const shells = new Map<string, LiveShell>();

/** Keeps a new live terminal (get-shell.ts makes them). */
export function addShell(shellId: string, shell: LiveShell): void {
  shells.set(shellId, shell);
}

export function findShell(shellId: string): LiveShell | undefined {
  return shells.get(shellId);
}

export function disposeShell(shellId: string): void {
  leaveBroadcast([shellId]);
  shells.get(shellId)?.dispose();
  shells.delete(shellId);
}

export function disposeAllShells(): void {
  for (const id of [...shells.keys()]) disposeShell(id);
}

export function liveShellIds(): string[] {
  return [...shells.keys()];
}

/** The dark/light terminal theme toggle, persisted in the termTheme cookie (spec section 4). */
export function toggleTerminalTheme(): void {
  setDarkTermTheme(!appState.darkTermTheme);
}
