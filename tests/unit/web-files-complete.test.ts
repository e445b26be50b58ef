import { describe, expect, it } from 'vitest';
import { completionTarget, MAX_COMPLETIONS, matchFolders } from '#web/files/complete.ts';

describe('folder completion in the palette', () => {
  it.each([
    ['/root', '', { dir: '/root', prefix: '' }],
    ['/root', 'pro', { dir: '/root', prefix: 'pro' }],
    ['/root', 'projects/sr', { dir: '/root/projects', prefix: 'sr' }],
    ['/root', '/etc/', { dir: '/etc', prefix: '' }],
    ['/root', '/et', { dir: '/', prefix: 'et' }],
    ['/root', '../ho', { dir: '/', prefix: 'ho' }],
    ['/', '  /usr/lo ', { dir: '/usr', prefix: 'lo' }],
    ['/', '../../x', null],
  ])('from %s, %j lists %j', (root, typed, want) => {
    expect(completionTarget(root, typed)).toEqual(want);
  });

  it('offers names starting with the prefix, exact case first, hidden ones only when asked', () => {
    const names = ['Src', 'src', 'srv', 'bin', '.ssh', '.src', 'SRC-old'];
    expect(matchFolders(names, 'sr')).toEqual(['src', 'srv', 'Src', 'SRC-old']);
    expect(matchFolders(names, '.s')).toEqual(['.src', '.ssh']);
    expect(matchFolders(names, '')).toEqual(['bin', 'src', 'Src', 'SRC-old', 'srv']);
  });

  it('offers at most a bounded number', () => {
    const many = Array.from({ length: 500 }, (_, i) => `d${String(i).padStart(3, '0')}`);
    const got = matchFolders(many, 'd');
    expect(got).toHaveLength(MAX_COMPLETIONS);
    expect(got[0]).toBe('d000');
  });
});
