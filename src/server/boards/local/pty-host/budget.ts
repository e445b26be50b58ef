// How many terminals one local board may hold at once: its devpts's `max=`, set by the terminal helper
// at the board's boot (pty-host.ts). Linux counts terminals machine-wide: `kernel.pty.max` in all, of
// which `kernel.pty.reserve` only for the host's own devpts, so every board's devpts draws on one pool
// of max − reserve (3,072 by default). A board's root who opens terminals in a loop stops at its own
// max; the boards of one service together must stay inside the pool, or the last ones to ask find it
// empty ("open /dev/ptmx: No space left on device") and the hostile board has taken their shells.
import fs from 'node:fs';

/** Terminals a board may hold when the pool has room for every board at this many. */
export const BOARD_TERMINALS = 512;
/** A board keeps at least this many, however many boards share the pool (the service then warns). */
export const MIN_BOARD_TERMINALS = 16;

export interface TerminalPool {
  max: number;
  reserve: number;
}

/** The machine's pool from /proc/sys/kernel/pty (Linux's defaults where it cannot be read). */
export function machineTerminals(read = (p: string) => fs.readFileSync(p, 'latin1')): TerminalPool {
  const num = (p: string, fallback: number) => {
    try {
      const n = Number(read(p).trim());
      return Number.isSafeInteger(n) && n >= 0 ? n : fallback;
    } catch {
      return fallback;
    }
  };
  return { max: num('/proc/sys/kernel/pty/max', 4096), reserve: num('/proc/sys/kernel/pty/reserve', 1024) };
}

/**
 * Each board's share of the pool when `boards` local boards share it: BOARD_TERMINALS while they all
 * fit, less when they do not (`fits` false when even MIN_BOARD_TERMINALS each overfills it).
 */
export function terminalBudget(boards: number, pool: TerminalPool): { perBoard: number; fits: boolean } {
  const room = Math.max(0, pool.max - pool.reserve);
  const n = Math.max(1, Math.floor(boards));
  const share = Math.floor(room / n);
  const perBoard = Math.min(BOARD_TERMINALS, Math.max(MIN_BOARD_TERMINALS, share));
  return { perBoard, fits: perBoard * n <= room };
}
