import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shCommand, shQuote } from '#server/boards/ssh/quote.ts';

const hostile = [
  "it's",
  '$(id)',
  '`id`',
  '; rm -rf /',
  '"double" and \'single\'',
  'a\nb',
  '  spaces  ',
  '',
  '*',
  '~root',
  '$HOME',
  '\\',
  "'",
  "''",
  '-n',
  'ünïcödé ✓',
  '!event',
  'a|b&c>d<e',
];

describe('quoting for the remote shell', () => {
  it.each(hostile)('passes %j through sh as exactly one argument', (value) => {
    const out = execFileSync('/bin/sh', ['-c', `printf '%s\\0' ${shQuote(value)}`]);
    expect(out.toString()).toBe(`${value}\0`);
  });

  it('joins an argv into a command line whose words are the argv', () => {
    const argv = ['printf', '%s\\0', ...hostile];
    const out = execFileSync('/bin/sh', ['-c', shCommand(argv)]);
    expect(out.toString()).toBe(hostile.map((h) => `${h}\0`).join(''));
  });

  it('leaves plain words unquoted and refuses NUL bytes and empty commands', () => {
    expect(shQuote('/usr/bin/picocom')).toBe('/usr/bin/picocom');
    expect(() => shQuote('a\0b')).toThrow(/NUL/);
    expect(() => shCommand([])).toThrow(/Empty/);
  });
});
