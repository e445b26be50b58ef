import { describe, expect, it } from 'vitest';
import {
  BOARD_TERMINALS,
  MIN_BOARD_TERMINALS,
  machineTerminals,
  terminalBudget,
} from '#server/boards/local/pty-host/budget.ts';

// Linux's defaults: 4,096 terminals, 1,024 of them only for the host's own devpts.
const DEFAULT_POOL = { max: 4096, reserve: 1024 };

describe("a local board's share of the machine's terminals", () => {
  it('is the full 512 while every board fits in the pool at that', () => {
    expect(terminalBudget(1, DEFAULT_POOL)).toEqual({ perBoard: BOARD_TERMINALS, fits: true });
    expect(terminalBudget(4, DEFAULT_POOL)).toEqual({ perBoard: 512, fits: true });
    expect(terminalBudget(6, DEFAULT_POOL)).toEqual({ perBoard: 512, fits: true }); // 3,072 exactly
  });

  it('shrinks so that all the boards together stay inside the pool', () => {
    for (const boards of [7, 8, 12, 50, 192]) {
      const { perBoard, fits } = terminalBudget(boards, DEFAULT_POOL);
      expect(perBoard).toBeLessThan(512);
      expect(perBoard * boards).toBeLessThanOrEqual(3072);
      expect(3072 - perBoard * boards).toBeLessThan(boards); // what is left over is less than one each
      expect(fits).toBe(true);
    }
    expect(terminalBudget(7, DEFAULT_POOL).perBoard).toBe(438);
  });

  it('keeps a floor, and says the pool is overfilled, when there are too many boards for it', () => {
    expect(terminalBudget(1000, DEFAULT_POOL)).toEqual({ perBoard: MIN_BOARD_TERMINALS, fits: false });
    expect(terminalBudget(3, { max: 1024, reserve: 1024 })).toEqual({
      perBoard: MIN_BOARD_TERMINALS,
      fits: false,
    });
  });

  it('follows a raised kernel.pty.max', () => {
    expect(terminalBudget(20, { max: 16384, reserve: 1024 })).toEqual({ perBoard: 512, fits: true });
  });

  it("reads the pool from /proc/sys/kernel/pty, with Linux's defaults where it cannot", () => {
    const here = machineTerminals();
    expect(here.max).toBeGreaterThan(here.reserve);
    const files: Record<string, string> = {
      '/proc/sys/kernel/pty/max': '8192\n',
      '/proc/sys/kernel/pty/reserve': '512\n',
    };
    expect(machineTerminals((p) => files[p])).toEqual({ max: 8192, reserve: 512 });
    const none = (): string => {
      throw new Error('ENOENT');
    };
    expect(machineTerminals(none)).toEqual(DEFAULT_POOL);
    expect(machineTerminals(() => 'lots')).toEqual(DEFAULT_POOL);
  });
});
