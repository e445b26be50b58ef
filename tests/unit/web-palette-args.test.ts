// The palette's arguments (issue 38): choices searched by every word of their labels ("7" and "7 days"
// pick 7 days), commands typed with their arguments (`renew 7d`), and durations as people type them.
import { describe, expect, it } from 'vitest';
import { matchOptions, optionScore, quickMatches } from '#web/commands/options.ts';
import type { PaletteCommand } from '#web/commands/registry.ts';
import { parseDuration } from '#web/devices/renew-quick.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const renewChoices = [
  { value: '1', label: '2026/11/30 17:00', detail: 'Extend by 48 hours', keywords: ['48h', '48 hours'] },
  { value: '2', label: '2026/12/05 17:00', detail: 'Extend by 7 days', keywords: ['7d', '7 days'] },
  { value: '3', label: '2026/12/28 17:00', detail: 'Extend by 1 month', keywords: ['1m', '1 month'] },
];

describe('choices searched by their labels', () => {
  it.each([
    ['7', '2'],
    ['7 days', '2'],
    ['7d', '2'],
    ['48', '1'],
    ['month', '3'],
    ['1 month', '3'],
  ])('"%s" picks %s first', (typed, value) => {
    expect(matchOptions(typed, renewChoices)[0]?.value).toBe(value);
  });

  it('keeps every choice in order for empty text, and drops those a word misses', () => {
    expect(matchOptions('', renewChoices).map((o) => o.value)).toEqual(['1', '2', '3']);
    expect(matchOptions('7 weeks', renewChoices)).toEqual([]);
    expect(optionScore('zzz', renewChoices[0])).toBe(0);
  });

  it('puts a whole word above the start of one: "7" is 7 days, not 72 hours', () => {
    const list = [
      { value: 'a', label: '72 hours' },
      { value: 'b', label: '7 days' },
    ];
    expect(matchOptions('7', list)[0].value).toBe('b');
  });

  it('finds a board by its name before one whose detail mentions it', () => {
    const boards = [
      { value: 'd2', label: 'lab-2', detail: 'rv-main clone · K1' },
      { value: 'd1', label: 'rv-main', detail: 'k1-01 · K1' },
    ];
    expect(matchOptions('rv-main', boards)[0].value).toBe('d1');
  });
});

describe('commands typed with their arguments', () => {
  const renew = { id: 'renew', quick: { verbs: ['renew', '续期'] } } as unknown as PaletteCommand;
  const open = { id: 'open', quick: { verbs: ['open'] } } as unknown as PaletteCommand;
  const plain = { id: 'plain' } as unknown as PaletteCommand;
  const rows = [renew, open, plain].map((cmd) => ({ cmd }));

  it('offers the command of the verb with the text after it', () => {
    expect(quickMatches('renew 7d', rows).map((m) => [m.row.cmd.id, m.text])).toEqual([['renew', '7d']]);
    expect(quickMatches('  open  src/main.c ', rows).map((m) => m.text)).toEqual(['src/main.c']);
    expect(quickMatches('续期 7天', rows).map((m) => m.row.cmd.id)).toEqual(['renew']);
  });

  it('offers nothing for a lone verb or an unknown one', () => {
    expect(quickMatches('renew', rows)).toEqual([]);
    expect(quickMatches('renew ', rows)).toEqual([]);
    expect(quickMatches('rename 7d', rows)).toEqual([]);
  });
});

describe('durations as typed after "renew"', () => {
  it.each([
    ['7d', 7 * DAY],
    ['7 days', 7 * DAY],
    ['48h', 48 * HOUR],
    ['48 hours', 48 * HOUR],
    ['2w', 14 * DAY],
    ['1 month', 30 * DAY],
    ['7天', 7 * DAY],
    ['7日', 7 * DAY],
    ['48 小时', 48 * HOUR],
    ['3 時間', 3 * HOUR],
  ])('"%s"', (text, ms) => {
    expect(parseDuration(text)?.ms).toBe(ms);
  });

  it('keeps the rest of the text (a board name) and refuses text without a unit', () => {
    expect(parseDuration('k1-lab 7d')).toEqual({ ms: 7 * DAY, rest: 'k1-lab' });
    expect(parseDuration('7')).toBeNull();
    expect(parseDuration('rv-main')).toBeNull();
    expect(parseDuration('0d')).toBeNull();
  });
});
