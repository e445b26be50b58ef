// The shell operations that palette commands and keys call. The mounted shell area installs the real
// ones; until it mounts (or after it unmounts) they do nothing, except the terminal theme, which is a
// cookie-backed preference that does not need a shell to exist.
import { appState, setDarkTermTheme } from '#web/state/app.ts';
import type { ShellKind, SlotBoard } from './store.ts';

export interface ShellOps {
  /** A new tab with a shell of the workbench's board, or of another held board when given. */
  newShell: (kind: ShellKind, board?: SlotBoard) => void;
  split: () => void;
  /** Closes the focused shell, asking first when it runs a foreground job (close-shells.ts). */
  closeFocused: () => void;
  /** Opens a new shell where the last closed one was (store.ts, closedShells). */
  reopenClosed: () => void;
  restartFocused: () => void;
  search: () => void;
  /** Broadcast input (terminal/broadcast.ts): the focused shell in or out of the set. */
  toggleBroadcast: () => void;
  /** Every shell of the focused shell's tab in the set (tmux's synchronize-panes), or out of it. */
  broadcastTab: () => void;
  /** Every open shell in the set. */
  broadcastAll: () => void;
  toggleTheme: () => void;
  focusActive: () => void;
}

const idle: ShellOps = {
  newShell: () => {},
  split: () => {},
  closeFocused: () => {},
  reopenClosed: () => {},
  restartFocused: () => {},
  search: () => {},
  toggleBroadcast: () => {},
  broadcastTab: () => {},
  broadcastAll: () => {},
  toggleTheme: () => setDarkTermTheme(!appState.darkTermTheme),
  focusActive: () => {},
};

export const shellOps: ShellOps = { ...idle };

export function installShellOps(ops: Partial<ShellOps>): () => void {
  Object.assign(shellOps, ops);
  return () => {
    Object.assign(shellOps, idle);
  };
}
