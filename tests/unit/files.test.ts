// Pure helpers of the files feature: board path normalisation and validation, protected paths,
// text encoding detection and encoding, and the tree's mode column.
import iconv from 'iconv-lite';
import { describe, expect, it } from 'vitest';
import { decodeText, encodeText, looksBinary } from '#server/files/codec.ts';
import { boardPath, fileName, isProtectedPath, normalizeBoardPath } from '#shared/files.ts';
import { modeString } from '#web/files/format.ts';

describe('board paths', () => {
  it.each([
    ['/home/user/a.txt', '/', '/home/user/a.txt'],
    ['a.txt', '/home/user', '/home/user/a.txt'],
    ['./x/../y', '/home', '/home/y'],
    ['//etc///passwd/', '/', '/etc/passwd'],
    ['..', '/home/user', '/home'],
    ['', '/srv', '/srv'],
    ['/', '/anything', '/'],
  ])('normalises %j against %j to %j', (p, base, want) => {
    expect(normalizeBoardPath(p, base)).toBe(want);
  });

  it.each([
    ['../../etc/passwd', '/home'],
    ['/../etc', '/'],
    ['a/../../..', '/x'],
  ])('refuses %j against %j because it climbs above the root', (p, base) => {
    expect(normalizeBoardPath(p, base)).toBeNull();
  });

  it.each([
    ['a\0b', false],
    ['line\nbreak', false],
    ['cr\rhere', false],
    [`/${'n'.repeat(255)}`, true],
    [`/${'n'.repeat(256)}`, false],
    [`/${'中'.repeat(85)}`, true],
    [`/${'中'.repeat(86)}`, false],
    ['$(rm -rf /);`id`', true],
  ])('validates %j as a board path: %s', (p, ok) => {
    expect(boardPath.safeParse(p).success).toBe(ok);
  });

  it.each([
    ['a.txt', true],
    ['', false],
    ['.', false],
    ['..', false],
    ['a/b', false],
    ['new\nline', false],
  ])('validates %j as a file name: %s', (n, ok) => {
    expect(fileName.safeParse(n).success).toBe(ok);
  });

  it.each([
    ['/', true],
    ['/root', true],
    ['/home', true],
    ['/home/user', true],
    ['/home/user/x', false],
    ['/etc', false],
  ])('treats %j as protected: %s', (p, want) => {
    expect(isProtectedPath(p)).toBe(want);
  });
});

describe('text encodings', () => {
  const bom = Buffer.from([0xef, 0xbb, 0xbf]);
  it.each([
    ['plain ASCII', Buffer.from('hello\n'), 'utf-8', 'hello\n'],
    ['UTF-8', Buffer.from('héllo 世界'), 'utf-8', 'héllo 世界'],
    ['UTF-8 with BOM', Buffer.concat([bom, Buffer.from('x')]), 'utf-8-bom', 'x'],
    ['GBK', iconv.encode('中文，测试', 'gbk'), 'gbk', '中文，测试'],
    ['empty', Buffer.alloc(0), 'utf-8', ''],
  ])('detects %s', (_label, buf, encoding, content) => {
    expect(decodeText(buf)).toEqual({ kind: 'text', encoding, content });
  });

  it.each([
    ['NUL bytes', Buffer.from([0x41, 0, 0x42])],
    ['an ELF header', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])],
    ['control characters', Buffer.from(Array.from({ length: 100 }, (_, i) => (i % 3 === 0 ? 0x01 : 0x41)))],
    ['bytes valid in neither UTF-8 nor GBK', Buffer.from([0xff, 0xfe, 0xfd, 0x80, 0x81])],
  ])('calls %s binary', (_label, buf) => {
    expect(decodeText(buf).kind).toBe('binary');
  });

  it('keeps escape sequences and tabs as text', () => {
    expect(looksBinary(Buffer.from('\x1b[31mred\x1b[0m\tok\r\n'))).toBe(false);
  });

  it('encodes back to the same bytes in each encoding', () => {
    for (const [text, enc] of [
      ['héllo', 'utf-8'],
      ['x', 'utf-8-bom'],
      ['中文', 'gbk'],
    ] as const) {
      const bytes = encodeText(text, enc);
      const back = decodeText(bytes, enc);
      expect(back).toMatchObject({ kind: 'text', content: text });
    }
  });

  it('refuses text GBK cannot represent instead of saving question marks', () => {
    expect(() => encodeText('emoji 😀', 'gbk')).toThrowError(/GBK/);
  });
});

describe('mode column', () => {
  it.each([
    [0o40755, 'dir', 'drwxr-xr-x'],
    [0o100644, 'file', '-rw-r--r--'],
    [0o104755, 'file', '-rwsr-xr-x'],
    [0o41777, 'dir', 'drwxrwxrwt'],
    [0o120777, 'symlink', 'lrwxrwxrwx'],
    [0o102640, 'file', '-rw-r-S---'],
  ] as const)('shows %o as %s', (mode, type, want) => {
    expect(modeString(mode, type)).toBe(want);
  });
});
