import { describe, expect, it } from 'vitest';
import { foregroundIn, foregroundOf, type ProcStat, parseStat } from '#server/shells/foreground.ts';

describe('parseStat', () => {
  it.each([
    [
      '120 (bash) S 110 120 120 34816 140 4194560 1 2 3',
      { pid: 120, comm: 'bash', ppid: 110, pgrp: 120, session: 120, ttyNr: 34816, tpgid: 140 },
    ],
    [
      '77 (a) (b c)) R 1 77 77 0 -1 0',
      { pid: 77, comm: 'a) (b c)', ppid: 1, pgrp: 77, session: 77, ttyNr: 0, tpgid: -1 },
    ],
  ])('reads %s', (text, want) => {
    expect(parseStat(text)).toEqual(want);
  });

  it.each(['', 'garbage', '12 (x) S a b c d e'])('refuses %j', (text) => {
    expect(parseStat(text)).toBeNull();
  });
});

const p = (
  pid: number,
  comm: string,
  ppid: number,
  pgrp: number,
  session: number,
  tty = 0,
  tpgid = -1,
): ProcStat => ({
  pid,
  comm,
  ppid,
  pgrp,
  session,
  ttyNr: tty,
  tpgid,
});
const table = (...ps: ProcStat[]) => new Map(ps.map((x) => [x.pid, x]));
const HOST_TTY = 34820;
const BOARD_TTY = 34816;
// nsenter (the PTY's child, leader of the host PTY's session) → script → bash -l (leader of the board's PTY).
const chain = (bashTpgid: number) => [
  p(100, 'nsenter', 1, 100, 100, HOST_TTY, 100),
  p(101, 'script', 100, 100, 100, HOST_TTY, 100),
  p(102, 'bash', 101, 102, 102, BOARD_TTY, bashTpgid),
];

describe('foregroundIn', () => {
  it.each<[string, ProcStat[], ReturnType<typeof foregroundIn>]>([
    ['a prompt holding its terminal', chain(102), { busy: false }],
    [
      'sleep in the foreground',
      [...chain(103), p(103, 'sleep', 102, 103, 102, BOARD_TTY, 103)],
      { busy: true, command: 'sleep' },
    ],
    [
      'a background job only',
      [...chain(102), p(103, 'sleep', 102, 103, 102, BOARD_TTY, 102)],
      { busy: false },
    ],
    [
      'a pipeline: the group leader is named',
      [
        ...chain(103),
        p(103, 'yes', 102, 103, 102, BOARD_TTY, 103),
        p(104, 'head', 102, 103, 102, BOARD_TTY, 103),
      ],
      { busy: true, command: 'yes' },
    ],
    [
      'a job whose group leader already exited: another member is named',
      [...chain(103), p(104, 'cat', 102, 103, 102, BOARD_TTY, 103)],
      { busy: true, command: 'cat' },
    ],
    [
      'script run from the prompt: the outer job wins over the idle inner shell',
      [
        ...chain(103),
        p(103, 'script', 102, 103, 102, BOARD_TTY, 103),
        p(104, 'bash', 103, 104, 104, 34817, 104),
      ],
      { busy: true, command: 'script' },
    ],
    [
      'a foreground group outside the shell’s tree is not named',
      [...chain(900), p(900, 'secret', 1, 900, 900, BOARD_TTY, 900)],
      { busy: true, command: null },
    ],
    ['a shell that has gone', [p(5, 'other', 1, 5, 5)], null],
  ])('%s', (_name, ps, want) => {
    expect(foregroundIn(table(...ps), 100)).toEqual(want);
  });

  it('does not look at processes outside the tree (another board’s busy shell)', () => {
    const ps = [
      ...chain(102),
      p(200, 'bash', 1, 200, 200, 34900, 201),
      p(201, 'vim', 200, 201, 200, 34900, 201),
    ];
    expect(foregroundIn(table(...ps), 100)).toEqual({ busy: false });
  });
});

describe('foregroundOf', () => {
  it('reads /proc once more when the job started while it was read, so the job is named', async () => {
    // The first table was listed before bash forked `sleep`, and read bash after it had given sleep its terminal.
    const scans: boolean[] = [];
    const tables = async (fresh: boolean) => {
      scans.push(fresh);
      return fresh
        ? table(...chain(103), p(103, 'sleep', 102, 103, 102, BOARD_TTY, 103))
        : table(...chain(103));
    };
    expect(await foregroundOf(100, tables)).toEqual({ busy: true, command: 'sleep' });
    expect(scans).toEqual([false, true]);
  });

  it('reads once at a prompt or with the job named, and stays unnamed when the job is still not there', async () => {
    const scans: boolean[] = [];
    const seen = (ps: ProcStat[]) => async (fresh: boolean) => {
      scans.push(fresh);
      return table(...ps);
    };
    expect(await foregroundOf(100, seen(chain(102)))).toEqual({ busy: false });
    expect(
      await foregroundOf(100, seen([...chain(103), p(103, 'vim', 102, 103, 102, BOARD_TTY, 103)])),
    ).toEqual({
      busy: true,
      command: 'vim',
    });
    expect(scans).toEqual([false, false]);
    expect(await foregroundOf(100, seen(chain(103)))).toEqual({ busy: true, command: null });
    expect(scans).toEqual([false, false, false, true]);
  });
});
