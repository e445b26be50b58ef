// A shell's live terminal, made on first use and kept in the registry (registry.ts). This module
// brings xterm (live-shell.ts): only the terminal pane and its share bar import it, so xterm loads
// with the first terminal pane, not with the workbench.
import { broadcast, inputRecipients } from './broadcast.ts';
import { type InputRoute, LiveShell } from './live-shell.ts';
import { addShell, findShell } from './registry.ts';

/** Typed input goes to the shell alone, or to every shell of the broadcast set when it is in it. */
const route: InputRoute = (from, bytes, typed) => {
  for (const id of inputRecipients(broadcast.members, from.shellId, typed, findShell))
    (id === from.shellId ? from : findShell(id))?.send(bytes);
};

export function getShell(shellId: string): LiveShell {
  let s = findShell(shellId);
  if (!s) {
    s = new LiveShell(shellId, route);
    addShell(shellId, s);
  }
  return s;
}
