// Ctrl+C while bianbu follows work it started (flash jobs, a sequence run): on a terminal it asks
// first, once at a time; without one it acts at once. A second Ctrl+C after acting exits 130.
import readline from 'node:readline';
import { ExitCode } from './errors.ts';

export async function askYes(q: string): Promise<boolean> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  return new Promise((resolve) =>
    rl.question(`${q} [y/N] `, (a) => (rl.close(), resolve(/^y(es)?$/i.test(a.trim())))),
  );
}

export interface Interrupt {
  /** Whether a question is on screen (the caller holds its redraws meanwhile). */
  readonly asking: boolean;
  /** Stops listening for Ctrl+C. */
  off(): void;
}

/**
 * Runs `start`, the call that starts work bianbu then follows, keeping a Ctrl+C that comes meanwhile
 * (when `keep`): it is acted on once the work is known (`onInterrupt`'s `already`), instead of killing
 * bianbu and leaving the work going.
 */
export async function startKeepingInterrupt<T>(
  keep: boolean,
  start: () => Promise<T>,
): Promise<{ value: T; interrupted: boolean }> {
  let interrupted = false;
  const kept = () => {
    interrupted = true;
  };
  if (keep) process.on('SIGINT', kept);
  try {
    return { value: await start(), interrupted };
  } finally {
    // Removed after the caller's onInterrupt is on (it follows in the same turn): Node restores
    // SIGINT's default, which kills, when its last listener goes, so a gap would let one through.
    if (keep) setImmediate(() => process.off('SIGINT', kept));
  }
}

/**
 * Listens for SIGINT: `beforeAsk` (e.g. end a live table), the question, then `act` on yes. `already`:
 * a Ctrl+C came before (startKeepingInterrupt), handled now as one.
 */
export function onInterrupt(o: {
  question: string;
  beforeAsk?: () => void;
  act: () => Promise<void>;
  already?: boolean;
}): Interrupt {
  let asking = false;
  let acted = false;
  const handler = async () => {
    if (asking) return;
    if (acted) process.exit(ExitCode.interrupt);
    asking = true;
    o.beforeAsk?.();
    const ok = process.stdin.isTTY ? await askYes(o.question) : true;
    asking = false;
    if (!ok) return;
    acted = true;
    await o.act();
  };
  process.on('SIGINT', handler);
  if (o.already) void handler();
  return {
    get asking() {
      return asking;
    },
    off: () => process.off('SIGINT', handler),
  };
}
