// Live terminals by shell id, outside React (Cockpit keeps its terminal objects the same way): a
// pane that unmounts leaves its LiveShell here, scrollback and subscription intact; the workbench
// disposes it when the shell's tab is closed for good. Typed input is routed here: to the shell alone,
// or to every shell of the broadcast set when the shell is in it (broadcast.ts).
import { appState, setDarkTermTheme } from '#web/state/app.ts';
import { broadcast, inputRecipients, leaveBroadcast } from './broadcast.ts';
import { type InputRoute, LiveShell } from './live-shell.ts';

const shells = new Map<string, LiveShell>();

const route: InputRoute = (from, bytes, typed) => {
  for (const id of inputRecipients(broadcast.members, from.shellId, typed, findShell))
    (id === from.shellId ? from : shells.get(id))?.send(bytes);
};

export function getShell(shellId: string): LiveShell {
  let s = shells.get(shellId);
  if (!s) {
    s = new LiveShell(shellId, route);
    shells.set(shellId, s);
  }
  return s;
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
