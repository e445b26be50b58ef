import { describe, expect, it } from 'vitest';
import { allCommands, commandTitle, type PaletteCommand, registerCommands } from '#web/commands/registry.ts';

const cmd = (id: string, over: Partial<PaletteCommand> = {}): PaletteCommand => ({
  id,
  titleKey: `t.${id}`,
  section: 's',
  run: () => {},
  ...over,
});

describe('the palette command registry', () => {
  it('adds, replaces and removes the commands of a source', () => {
    const before = allCommands().length;
    const off1 = registerCommands('test.a', [cmd('a1'), cmd('a2')]);
    expect(allCommands().map((c) => c.id)).toEqual(expect.arrayContaining(['a1', 'a2']));
    registerCommands('test.a', [cmd('a3')]);
    const ids = allCommands().map((c) => c.id);
    expect(ids).toContain('a3');
    expect(ids).not.toContain('a1');
    // The first registration's remover no longer owns the source: it leaves the replacement alone.
    off1();
    expect(allCommands().map((c) => c.id)).toContain('a3');
    registerCommands('test.a', [])();
    expect(allCommands().length).toBe(before);
  });

  it('keeps the first of two commands with the same id', () => {
    const offA = registerCommands('test.x', [cmd('dup', { titleKey: 'first' })]);
    const offB = registerCommands('test.y', [cmd('dup', { titleKey: 'second' })]);
    expect(
      allCommands()
        .filter((c) => c.id === 'dup')
        .map((c) => c.titleKey),
    ).toEqual(['first']);
    offA();
    offB();
  });

  it('words parameters that are keys before the title', () => {
    const t = (key: string, params?: Record<string, string>) =>
      key === 'layout:routes.home' ? 'Home' : `${key}(${JSON.stringify(params ?? {})})`;
    expect(
      commandTitle(cmd('n', { titleKey: 'palette:nav.goto', paramKeys: { title: 'layout:routes.home' } }), t),
    ).toBe('palette:nav.goto({"title":"Home"})');
  });
});
