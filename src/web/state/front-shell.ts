// The shell in front of the user (the workbench's active tab and slot), for commands of features below
// the workbench (share this shell). The workbench provides it while mounted. Kept apart from the
// terminal registry, which pulls xterm in: the share commands are in every page's first load.
let frontShellOf: () => string | null = () => null;

export function provideFrontShell(of: () => string | null): () => void {
  frontShellOf = of;
  return () => {
    if (frontShellOf === of) frontShellOf = () => null;
  };
}

/** The shell id of the terminal in front, or null off the workbench. */
export function frontShell(): string | null {
  return frontShellOf();
}
