import { describe, expect, it } from 'vitest';
import { regexProblem, searchLabel } from '#web/terminal/search-label.ts';

describe('the terminal search bar’s result label', () => {
  it.each([
    ['', null, false, null],
    ['foo', null, false, null],
    ['foo', { resultIndex: -1, resultCount: 0 }, false, { key: 'search.none' }],
    [
      'foo',
      { resultIndex: 2, resultCount: 17 },
      false,
      { key: 'search.position', params: { index: 3, count: 17 } },
    ],
    [
      'foo',
      { resultIndex: 0, resultCount: 1 },
      false,
      { key: 'search.position', params: { index: 1, count: 1 } },
    ],
    ['foo', { resultIndex: -1, resultCount: 5 }, false, { key: 'search.results', params: { count: 5 } }],
    ['foo', { resultIndex: -1, resultCount: 1000 }, false, { key: 'search.many', params: { count: 1000 } }],
    ['a(b', { resultIndex: 0, resultCount: 3 }, true, { key: 'search.badRegex' }],
    [
      'a(b',
      { resultIndex: 0, resultCount: 3 },
      false,
      { key: 'search.position', params: { index: 1, count: 3 } },
    ],
    ['[', null, true, { key: 'search.badRegex' }],
    [
      'a.c',
      { resultIndex: 1, resultCount: 2 },
      true,
      { key: 'search.position', params: { index: 2, count: 2 } },
    ],
  ] as const)('%j with %j (regex %s) reads %j', (query, results, regex, want) => {
    expect(searchLabel(query, results, { regex })).toEqual(want);
  });

  it('says what is wrong with a regular expression, and nothing for a valid one', () => {
    expect(regexProblem('(?<x')).toMatch(/./);
    expect(regexProblem('\\bword\\b')).toBeNull();
  });
});
