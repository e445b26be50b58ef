// Broadcast input's set (src/web/terminal/broadcast.ts): which shells join, which are skipped when input
// is sent, and what leaves the set.
import { beforeEach, describe, expect, it } from 'vitest';
import {
  type BroadcastReceiver,
  broadcast,
  broadcastTargets,
  canJoin,
  inputRecipients,
  isBroadcastInput,
  isBroadcasting,
  joinBroadcast,
  leaveBroadcast,
  stopBroadcast,
  toggleBroadcast,
} from '#web/terminal/broadcast.ts';

const shell = (over: Partial<BroadcastReceiver> = {}): BroadcastReceiver => ({
  live: true,
  ended: false,
  readOnly: false,
  ...over,
});

/** A page of shells by id: a, b (board 1), c (board 2) live; guest read-only; gone ended; down disconnected. */
const makeShells = (): Record<string, BroadcastReceiver> => ({
  a: shell(),
  b: shell(),
  c: shell(),
  guest: shell({ readOnly: true }),
  granted: shell(),
  gone: shell({ live: false, ended: true }),
  down: shell({ live: false }),
});

describe('broadcast set', () => {
  let shells: Record<string, BroadcastReceiver>;
  const lookup = (id: string) => shells[id];

  beforeEach(() => {
    shells = makeShells();
    stopBroadcast();
  });

  it('lets live and disconnected shells join, and refuses ended, read-only and unknown ones', () => {
    const refused = joinBroadcast(['a', 'c', 'down', 'guest', 'gone', 'nope'], lookup);
    expect(refused).toEqual(['guest', 'gone', 'nope']);
    expect(broadcast.members).toEqual(['a', 'c', 'down']);
    expect(canJoin(undefined)).toBe(false);
  });

  it('adds a shell once however often it joins', () => {
    joinBroadcast(['a', 'b'], lookup);
    joinBroadcast(['b', 'a'], lookup);
    expect(broadcast.members).toEqual(['a', 'b']);
  });

  it('toggles one shell in and out, and says whether it is on', () => {
    expect(toggleBroadcast('a', lookup)).toBe(true);
    expect(isBroadcasting('a')).toBe(true);
    expect(toggleBroadcast('a', lookup)).toBe(false);
    expect(isBroadcasting('a')).toBe(false);
    expect(toggleBroadcast('guest', lookup)).toBe(false);
    expect(broadcast.members).toEqual([]);
    expect(isBroadcasting(null)).toBe(false);
  });

  it('loses a shell that leaves (turned off, closed, ended) and keeps the others', () => {
    joinBroadcast(['a', 'b', 'c'], lookup);
    leaveBroadcast(['b']);
    expect(broadcast.members).toEqual(['a', 'c']);
    leaveBroadcast(['not-a-member']);
    expect(broadcast.members).toEqual(['a', 'c']);
  });

  it('stops for every shell at once', () => {
    joinBroadcast(['a', 'b', 'c'], lookup);
    stopBroadcast();
    expect(broadcast.members).toEqual([]);
  });
});

describe('where typed input goes', () => {
  const shells = makeShells();
  const lookup = (id: string) => shells[id];

  it.each<[string, string[], string, boolean, string[]]>([
    ['a shell outside the set: to itself alone', ['b', 'c'], 'a', true, ['a']],
    ['a member: to every member, across boards', ['a', 'b', 'c'], 'b', true, ['a', 'b', 'c']],
    ['a member: skipping a guest without an input grant', ['a', 'guest', 'b'], 'a', true, ['a', 'b']],
    ['a member: to a guest whose host granted input', ['a', 'granted'], 'a', true, ['a', 'granted']],
    ['a member: skipping an ended shell', ['a', 'gone', 'b'], 'b', true, ['a', 'b']],
    ['a member: skipping a disconnected shell', ['a', 'down'], 'a', true, ['a']],
    ['a member: skipping a member that went away', ['a', 'closed', 'b'], 'a', true, ['a', 'b']],
    ['a report of the terminal, not typed: to itself alone', ['a', 'b'], 'a', false, ['a']],
  ])('from %s', (_what, members, from, typed, want) => {
    expect(inputRecipients(members, from, typed, lookup)).toEqual(want);
  });

  it('answers no targets for a shell outside the set (its input is not broadcast)', () => {
    expect(broadcastTargets(['b'], 'a', lookup)).toBeNull();
  });

  it('sends a read-only member’s typing to the others only', () => {
    expect(broadcastTargets(['guest', 'a'], 'guest', lookup)).toEqual(['a']);
  });

  it('follows a grant taken back while broadcasting', () => {
    const live: Record<string, BroadcastReceiver> = { a: shell(), g: shell() };
    const members = ['a', 'g'];
    expect(inputRecipients(members, 'a', true, (id) => live[id])).toEqual(['a', 'g']);
    live.g = shell({ readOnly: true });
    expect(inputRecipients(members, 'a', true, (id) => live[id])).toEqual(['a']);
  });
});

describe('what counts as typed input', () => {
  it.each<[string, string, boolean, boolean]>([
    ['a typed command', 'echo hi\r', true, true],
    ['a pasted text', '\x1b[200~ls\x1b[201~', true, true],
    ['an arrow key', '\x1b[A', true, true],
    ['Shift+F3 (shaped like a cursor report)', '\x1b[1;2R', true, true],
    ['a cursor position report', '\x1b[12;40R', false, false],
    ['a focus report', '\x1b[I', false, false],
    ['device attributes', '\x1b[?1;2c', false, false],
    ['an SGR mouse click', '\x1b[<0;10;5M', true, false],
    ['an SGR mouse release', '\x1b[<0;10;5m', true, false],
    ['a normal mouse report', '\x1b[M !!', true, false],
    ['a urxvt mouse report', '\x1b[32;10;5M', true, false],
  ])('%s', (_what, data, wasUserInput, want) => {
    expect(isBroadcastInput(data, wasUserInput)).toBe(want);
  });
});
