// What a board is, read from its attributes for the device pages and the workbench header. A riscv64
// QEMU board's attributes come from the machine as it boots (arch, isa, kernel, os, the image tag), so
// any of them may still be missing; a sandbox board (driver 'local', attribute kind 'sandbox') carries
// the host's arch and is always shown as a sandbox, never as a RISC-V board.
import type { TFunction } from 'i18next';

type AttrValue = string | number | boolean;
export type ArchFamily = 'riscv' | 'x86' | 'arm' | 'other';

export interface BoardFacts {
  arch: string | null;
  family: ArchFamily;
  sandbox: boolean;
  os: string | null;
  /** Tag of the catalogue image the board runs. */
  image: string | null;
  /** `uname -r` of the running kernel. */
  kernel: string | null;
  isa: string | null;
  /** The other attributes (cpu, cores, memory, ...) in their stored order, for pages that list them. */
  rest: [string, AttrValue][];
}

/** Attributes the facts show themselves: lists leave them out of their generic attribute chips. */
const OWN = new Set(['arch', 'isa', 'kernel', 'os', 'image']);

export function archFamily(arch: string | null): ArchFamily {
  const a = (arch ?? '').trim().toLowerCase();
  if (/^(riscv|rv(32|64))/.test(a)) return 'riscv';
  if (/^(x86|amd64|x64|i[3-6]86)/.test(a)) return 'x86';
  if (/^(aarch64|arm)/.test(a)) return 'arm';
  return 'other';
}

function text(v: AttrValue | undefined): string | null {
  if (v === undefined || typeof v === 'boolean') return null;
  const s = String(v).trim();
  return s === '' ? null : s;
}

/** `driver` when the caller knows it (the board DTO has it, a lease does not). */
export function boardFacts(attributes: Readonly<Record<string, AttrValue>>, driver?: string): BoardFacts {
  const sandbox = attributes.kind === 'sandbox' || driver === 'local';
  const arch = text(attributes.arch);
  return {
    arch,
    family: archFamily(arch),
    sandbox,
    os: text(attributes.os),
    image: text(attributes.image),
    kernel: text(attributes.kernel),
    isa: text(attributes.isa),
    rest: Object.entries(attributes).filter(
      ([k]) => !OWN.has(k) && !(k === 'kind' && attributes.kind === 'sandbox'),
    ),
  };
}

/** Whether there is anything for the facts line to show. */
export function hasFacts(f: BoardFacts): boolean {
  return !!(f.arch || f.sandbox || f.os || f.image || f.kernel);
}

/** The architecture badge's text: `riscv64`, or `x86_64 sandbox` in the page's language. */
export function archBadgeText(t: TFunction, f: BoardFacts): string | null {
  if (f.sandbox)
    return f.arch ? t('devices:facts.sandbox', { arch: f.arch }) : t('devices:facts.sandboxNoArch');
  return f.arch;
}

/** The badge's tooltip, one sentence a line: what the board is, then its ISA string (long). */
export function archBadgeTitle(t: TFunction, f: BoardFacts): string {
  const lines: string[] = [];
  if (f.sandbox)
    lines.push(
      f.arch ? t('devices:facts.sandboxTitle', { arch: f.arch }) : t('devices:facts.sandboxTitleNoArch'),
    );
  else if (f.arch) lines.push(t('devices:facts.archTitle', { arch: f.arch }));
  if (f.isa) lines.push(t('devices:facts.isaTitle', { isa: f.isa }));
  return lines.join('\n');
}
