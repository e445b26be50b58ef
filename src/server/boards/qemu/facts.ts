// What a riscv64 board says it is, as the catalogue shows it: facts read from the machine (QMP) and
// the guest (its agent, its serial console), never from the lab file.
import { Egress, type NetworkPolicy, NetworkState } from '#shared/board-network.ts';

/**
 * A fact as the guest said it, made fit for the catalogue: the board's root chooses what its `uname`
 * prints, so a fact is one line of printable text, at most 200 characters, or nothing.
 */
export function cleanFact(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const text = raw
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
    .trim()
    .slice(0, 200);
  return text || undefined;
}

/** What the machine says it is: what the catalogue shows of a QEMU board. */
export interface BoardFacts {
  arch?: string;
  isa?: string;
  cores?: number;
  memoryMb?: number;
  kernel?: string;
  os?: string;
  image?: string;
  /** What the board's network does now (networkFact): `nat`, `limited`, `none` or `off`. */
  network?: string;
}

/** The catalogue's word for a board's network: its egress, `limited` under an allow list, `off` without a NIC backend. */
export function networkFact(s: { state: string; policy: NetworkPolicy }): string {
  if (s.state === NetworkState.off) return 'off';
  if (s.policy.egress === Egress.none) return 'none';
  return s.policy.allow.length ? 'limited' : 'nat';
}
