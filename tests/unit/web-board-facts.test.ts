import type { TFunction } from 'i18next';
import { describe, expect, it } from 'vitest';
import { archBadgeText, archBadgeTitle, archFamily, boardFacts, hasFacts } from '#web/boards/facts.ts';

/** A t() that shows the key and its values, so a test sees which wording was chosen with what. */
const t = ((key: string, values?: Record<string, unknown>) =>
  values ? `${key}${JSON.stringify(values)}` : key) as unknown as TFunction;

const ISA = 'rv64imafdch_zicntr_zicsr_zifencei_zihintpause_zihpm_zca_zcd_zba_zbb_zbc_zbs_sstc';

/** Attributes as a QEMU board has them once it booted. */
function riscvAttributes(overrides: Record<string, string | number | boolean> = {}) {
  return {
    arch: 'riscv64',
    cpu: 'QEMU rv64 (TCG)',
    cores: 2,
    memoryMb: 1024,
    isa: ISA,
    kernel: '6.12.117+deb13-riscv64',
    os: 'Debian GNU/Linux 13 (trixie)',
    image: 'debian-trixie-riscv64-developer',
    ...overrides,
  };
}

/** Attributes of a default-lab sandbox board. */
function sandboxAttributes(overrides: Record<string, string | number | boolean> = {}) {
  return {
    cpu: 'Intel Xeon',
    cores: 2,
    memoryMb: 2048,
    os: 'Bianbu 2.0',
    arch: 'x86_64',
    kind: 'sandbox',
    ...overrides,
  };
}

describe('the architecture family of an arch name', () => {
  it.each([
    ['riscv64', 'riscv'],
    ['RISCV32', 'riscv'],
    ['rv64gc', 'riscv'],
    ['x86_64', 'x86'],
    ['amd64', 'x86'],
    ['i686', 'x86'],
    ['aarch64', 'arm'],
    ['armv7l', 'arm'],
    ['mips64', 'other'],
    ['', 'other'],
    [null, 'other'],
  ])('%j is %s', (arch, family) => {
    expect(archFamily(arch)).toBe(family);
  });
});

describe('the facts of a board', () => {
  it('reads a booted riscv64 board: arch, ISA, kernel, OS and image, the rest left for the attribute list', () => {
    const f = boardFacts(riscvAttributes(), 'qemu');
    expect(f).toMatchObject({
      arch: 'riscv64',
      family: 'riscv',
      sandbox: false,
      isa: ISA,
      kernel: '6.12.117+deb13-riscv64',
      os: 'Debian GNU/Linux 13 (trixie)',
      image: 'debian-trixie-riscv64-developer',
    });
    expect(f.rest).toEqual([
      ['cpu', 'QEMU rv64 (TCG)'],
      ['cores', 2],
      ['memoryMb', 1024],
    ]);
  });

  it('leaves out what a board still booting has not said yet', () => {
    const f = boardFacts({ arch: 'riscv64', cores: 2, kernel: '  ', os: '' }, 'qemu');
    expect(f).toMatchObject({ arch: 'riscv64', kernel: null, os: null, image: null, isa: null });
    expect(hasFacts(f)).toBe(true);
  });

  it('knows a sandbox board by its kind attribute, without the driver (a lease has no driver)', () => {
    const f = boardFacts(sandboxAttributes());
    expect(f).toMatchObject({ arch: 'x86_64', family: 'x86', sandbox: true, os: 'Bianbu 2.0' });
    expect(f.rest.map(([k]) => k)).toEqual(['cpu', 'cores', 'memoryMb']);
  });

  it('knows a sandbox board by its local driver even without the kind attribute', () => {
    expect(boardFacts({ arch: 'x86_64' }, 'local').sandbox).toBe(true);
  });

  it('keeps a kind other than sandbox among the attributes', () => {
    const f = boardFacts({ arch: 'riscv64', kind: 'physical' }, 'ssh');
    expect(f.sandbox).toBe(false);
    expect(f.rest).toEqual([['kind', 'physical']]);
  });

  it('has nothing to show for a board with no arch, OS, image or kernel', () => {
    expect(hasFacts(boardFacts({ cores: 4 }, 'ssh'))).toBe(false);
  });
});

describe('the architecture badge', () => {
  it('names a riscv64 board by its arch, with the ISA string in its tooltip', () => {
    const f = boardFacts(riscvAttributes(), 'qemu');
    expect(archBadgeText(t, f)).toBe('riscv64');
    expect(archBadgeTitle(t, f).split('\n')).toEqual([
      'devices:facts.archTitle{"arch":"riscv64"}',
      `devices:facts.isaTitle{"isa":"${ISA}"}`,
    ]);
  });

  it('shows a sandbox board as a sandbox of its host arch, never as a RISC-V board', () => {
    const f = boardFacts(sandboxAttributes());
    expect(archBadgeText(t, f)).toBe('devices:facts.sandbox{"arch":"x86_64"}');
    expect(archBadgeTitle(t, f)).toBe('devices:facts.sandboxTitle{"arch":"x86_64"}');
  });

  it('still says sandbox when a sandbox board declares a RISC-V arch (a lab file may say anything)', () => {
    const f = boardFacts(sandboxAttributes({ arch: 'riscv64', isa: ISA }));
    expect(archBadgeText(t, f)).toBe('devices:facts.sandbox{"arch":"riscv64"}');
    expect(archBadgeTitle(t, f).split('\n')[0]).toBe('devices:facts.sandboxTitle{"arch":"riscv64"}');
  });

  it('says sandbox without an arch when a sandbox board has none', () => {
    const f = boardFacts({}, 'local');
    expect(archBadgeText(t, f)).toBe('devices:facts.sandboxNoArch');
    expect(archBadgeTitle(t, f)).toBe('devices:facts.sandboxTitleNoArch');
  });

  it('has no badge for a board of unknown arch that is not a sandbox', () => {
    const f = boardFacts({ os: 'Bianbu 2.0' }, 'ssh');
    expect(archBadgeText(t, f)).toBeNull();
    expect(archBadgeTitle(t, f)).toBe('');
  });
});
