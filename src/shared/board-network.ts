// A riscv64 board's network and the administrator's policy over it (issue 36).
//
// Each QEMU board has one NIC whose backend is a user-mode network stack (passt) running outside the
// machine, on the host, as the board's own host uid; an nftables chain keyed on that uid decides what
// leaves. What an administrator chooses:
//
//   egress  `none`  nothing leaves: the NIC exists (DHCP answers), every packet out is refused
//           `nat`   the board reaches the outside as a program of the host would, through the
//                   user-mode stack; with an allow list, only the listed destinations
//   allow   IPv4 and IPv6 addresses or CIDR blocks (`198.51.100.0/24`, `2001:db8::/32`); empty or
//           absent: every outside destination. Ports are not filtered.
//
// Whatever the policy, the host itself (its loopback, every address it owns, so its services and
// other boards' forwards) is never reachable from a board. Where the rules cannot be applied (no
// nftables, not root) a board gets no NIC backend at all: never an unfiltered network.
//
// Where the policy comes from, first found wins: an administrator's choice for the board
// (`POST /api/admin/boards/network/change`, kept in storage across restarts and lab file changes), the
// board's `options.network` in the lab file, the lab file's top-level `network`, and the host's
// default: `nat` when the host has a default route, `none` when it has none. A change is applied live
// to a running board (its rules are replaced; no reboot).
import { z } from 'zod';

export const Egress = { none: 'none', nat: 'nat' } as const;
export type Egress = (typeof Egress)[keyof typeof Egress];
export const egress = z.enum(['none', 'nat']);

/** An address or CIDR block parsed: its family, its 4 or 16 bytes (host bits cleared) and prefix. */
export interface Cidr {
  family: 4 | 6;
  bytes: number[];
  prefix: number;
}

function parseV4(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p.startsWith('0'))) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

function parseV6(text: string): number[] | null {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return null;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const words = (s: string): number[] | null => {
    if (s === '') return [];
    const out: number[] = [];
    const groups = s.split(':');
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i];
      if (i === groups.length - 1 && g.includes('.')) {
        const v4 = parseV4(g);
        if (!v4) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
        continue;
      }
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const head = words(halves[0]);
  const tail = halves.length === 2 ? words(halves[1]) : [];
  if (!head || !tail) return null;
  let all: number[];
  if (halves.length === 2) {
    const fill = 8 - head.length - tail.length;
    if (fill < 1) return null;
    all = [...head, ...Array(fill).fill(0), ...tail];
  } else all = head;
  if (all.length !== 8) return null;
  return all.flatMap((w) => [w >> 8, w & 0xff]);
}

/** `198.51.100.7`, `198.51.100.0/24`, `2001:db8::/32` …; host bits are cleared. Null: not one. */
export function parseCidr(raw: string): Cidr | null {
  const text = raw.trim();
  const [addr, bits, ...extra] = text.split('/');
  if (extra.length || !addr) return null;
  const family: 4 | 6 = addr.includes(':') ? 6 : 4;
  const bytes = family === 4 ? parseV4(addr) : parseV6(addr);
  if (!bytes) return null;
  const max = family === 4 ? 32 : 128;
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) return null;
  const prefix = bits === undefined ? max : Number(bits);
  if (prefix > max) return null;
  const masked = bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
  return { family, bytes: masked, prefix };
}

/** The canonical text of a parsed block: `198.51.100.0/24`, `2001:db8::/32` (RFC 5952 zeros). */
export function formatCidr(c: Cidr): string {
  if (c.family === 4) return `${c.bytes.join('.')}/${c.prefix}`;
  const words = Array.from({ length: 8 }, (_, i) => (c.bytes[2 * i] << 8) | c.bytes[2 * i + 1]);
  // The longest run of two or more zero words becomes `::`.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(':');
  const text = best < 0 ? hex(words) : `${hex(words.slice(0, best))}::${hex(words.slice(best + bestLen))}`;
  return `${text}/${c.prefix}`;
}

/** One allow-list entry: an address or CIDR block, kept in its canonical form. */
export const allowEntry = z
  .string()
  .trim()
  .max(64)
  .refine((s) => parseCidr(s) !== null, {
    message: 'an IPv4 or IPv6 address or CIDR block, e.g. 198.51.100.0/24 or 2001:db8::/32',
  })
  .transform((s) => formatCidr(parseCidr(s)!));

/** Longest allow list: each entry is one element of the board's nftables set. */
export const MAX_ALLOW_ENTRIES = 256;

export const networkPolicy = z.object({
  egress,
  /** Only these destinations under `nat`; empty: every outside destination. */
  allow: z.array(allowEntry).max(MAX_ALLOW_ENTRIES).default([]),
});
export type NetworkPolicy = z.output<typeof networkPolicy>;
export type NetworkPolicyInput = z.input<typeof networkPolicy>;

/** Where a board's policy came from (first found wins, see the header). */
export const NetworkSource = { admin: 'admin', board: 'board', lab: 'lab', host: 'host' } as const;
export type NetworkSource = (typeof NetworkSource)[keyof typeof NetworkSource];

/**
 * What the board has now: `on` (its NIC has a backend and its rules follow the policy), `off` (no NIC
 * backend: `reason` says why, e.g. the rules could not be applied) or `stopped` (the board's machine
 * is not running; the policy applies when it starts).
 */
export const NetworkState = { on: 'on', off: 'off', stopped: 'stopped' } as const;
export type NetworkState = (typeof NetworkState)[keyof typeof NetworkState];

/** Stable keys of the network's refusals and reasons (worded by locales/<lng>/boards.json). */
export const NetworkErrorKey = {
  /** The rules that keep the host out could not be applied: the board runs without a NIC backend. */
  firewallUnavailable: 'network.firewall_unavailable',
  /** The user-mode network stack (passt) is not installed. */
  stackMissing: 'network.stack_missing',
  /** The network stack ended while the machine ran; a power cycle brings it back. */
  stackExited: 'network.stack_exited',
  /** Only QEMU boards have a network the service runs. */
  unsupported: 'network.unsupported',
} as const;

export const boardNetworkDto = z.object({
  deviceId: z.string(),
  policy: networkPolicy,
  source: z.enum(['admin', 'board', 'lab', 'host']),
  /** What the host's routes make the default (`nat` with a default route, else `none`). */
  hostDefault: egress,
  state: z.enum(['on', 'off', 'stopped']),
  /** Why the state is `off` (a NetworkErrorKey), else null. */
  reason: z.string().nullable(),
});
export type BoardNetworkDto = z.infer<typeof boardNetworkDto>;
