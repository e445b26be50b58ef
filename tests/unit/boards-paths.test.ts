import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { likePattern } from '#server/boards/catalogue.ts';
import type { DriverError } from '#server/boards/driver.ts';
import { isWithin, normaliseBoardPath, resolveInRoot, splitBoardPath } from '#server/boards/paths.ts';

const keyOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as DriverError).key;
  }
  return 'ok';
};

describe('board path containment', () => {
  it.each([
    ['/x/board1', '/x/board1', true],
    ['/x/board1', '/x/board1/a/b', true],
    ['/x/board1', '/x/board10', false],
    ['/x/board1', '/x/board10/a', false],
    ['/x/board1', '/x', false],
    ['/', '/anything', true],
  ])('decides %s contains %s: %s', (root, candidate, expected) => {
    expect(isWithin(root, candidate)).toBe(expected);
  });

  it.each([
    ['/a/b/../c', ['a', 'c']],
    ['a//./b/', ['a', 'b']],
    ['/', []],
  ])('normalises %j', (p, comps) => {
    expect(normaliseBoardPath(p)).toEqual(comps);
  });

  it.each([
    ['..', 'path.outside_root'],
    ['/a/../..', 'path.outside_root'],
    ['a\0b', 'path.invalid'],
    [`/${'n'.repeat(256)}`, 'path.name_too_long'],
    [`/${'é'.repeat(128)}`, 'path.name_too_long'],
    [`/${'d/'.repeat(2049)}`, 'path.too_long'],
  ])('refuses %j with %s', (p, key) => {
    expect(keyOf(() => normaliseBoardPath(p))).toBe(key);
  });

  it('accepts a 255-byte name', () => {
    expect(splitBoardPath(`/${'n'.repeat(255)}`)).toHaveLength(1);
  });
});

describe('resolving inside a root', () => {
  let dir: string;
  let root: string;
  beforeAll(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-paths-')));
    root = path.join(dir, 'board1');
    fs.mkdirSync(path.join(root, 'etc'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'board10'));
    fs.writeFileSync(path.join(dir, 'board10', 'secret'), 's');
    fs.writeFileSync(path.join(root, 'etc', 'passwd'), 'board passwd');
    fs.symlinkSync('/etc/passwd', path.join(root, 'abs'));
    fs.symlinkSync('../board10/secret', path.join(root, 'sibling'));
    fs.symlinkSync('etc', path.join(root, 'etc-link'));
    fs.symlinkSync('loop2', path.join(root, 'loop1'));
    fs.symlinkSync('loop1', path.join(root, 'loop2'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('takes an absolute symlink target from the board root', async () => {
    expect((await resolveInRoot(root, '/abs')).hostPath).toBe(path.join(root, 'etc', 'passwd'));
  });

  it('refuses a relative symlink that leaves the root for a sibling with the same prefix', async () => {
    await expect(resolveInRoot(root, '/sibling')).rejects.toMatchObject({ key: 'path.outside_root' });
  });

  it('follows links inside the root and reports missing files', async () => {
    expect((await resolveInRoot(root, '/etc-link/passwd')).boardPath).toBe('/etc/passwd');
    await expect(resolveInRoot(root, '/etc/none')).rejects.toMatchObject({ key: 'path.not_found' });
    expect(await resolveInRoot(root, '/etc/none', { allowMissing: true })).toMatchObject({
      exists: false,
      boardPath: '/etc/none',
    });
  });

  it('stops at symlink loops', async () => {
    await expect(resolveInRoot(root, '/loop1')).rejects.toMatchObject({ key: 'path.invalid' });
  });

  it('answers the link itself when asked not to follow it', async () => {
    expect((await resolveInRoot(root, '/sibling', { followFinal: false })).hostPath).toBe(
      path.join(root, 'sibling'),
    );
  });
});

describe('keyword patterns', () => {
  it.each([
    ['k1', '%k1%'],
    ['50%', '%50\\%%'],
    ['a_b', '%a\\_b%'],
    ['c:\\', '%c:\\\\%'],
  ])('escapes %j', (k, p) => {
    expect(likePattern(k)).toBe(p);
  });
});
