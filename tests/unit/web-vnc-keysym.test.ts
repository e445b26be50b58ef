// The VNC pane's Type button: each character of the text as the X keysym a VNC server types.
import { describe, expect, it } from 'vitest';
import { keysymOf } from '#web/desktop/ops.ts';

describe('keysymOf', () => {
  it.each([
    ['r', 0x72, 'a lower-case letter is its code'],
    ['R', 0x52, 'an upper-case letter is its code'],
    [' ', 0x20, 'a space'],
    ['~', 0x7e, 'ASCII punctuation'],
    ['é', 0xe9, 'Latin-1 is its code'],
    ['\n', 0xff0d, 'a newline is Return'],
    ['\r', 0xff0d, 'a carriage return is Return'],
    ['\t', 0xff09, 'a tab is Tab'],
    ['中', 0x01004e2d, 'the rest of Unicode is 0x01000000 + its code point'],
    ['😀', 0x0101f600, 'a character beyond the BMP by its code point, not a surrogate'],
  ])('types %j as %i: %s', (ch, keysym) => {
    expect(keysymOf(ch)).toBe(keysym);
  });
});
