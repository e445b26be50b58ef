// A riscv64 board's network policy (issue 36): parsing, defaults, which policy wins, the nftables text,
// the NIC backend's refusal to run unfiltered, and the machine's NIC arguments.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labFileSchema } from '#server/boards/labfile.ts';
import type { Firewall } from '#server/boards/qemu/firewall.ts';
import { NIC_FD, qemuArgs } from '#server/boards/qemu/machine.ts';
import {
  applyText,
  boardRules,
  chainUid,
  hasDefaultRoute,
  hostDefaultEgress,
  removeText,
  resolvePolicy,
} from '#server/boards/qemu/net-policy.ts';
import { BoardNetwork, passtArgv, socketPair } from '#server/boards/qemu/network.ts';
import {
  allowEntry,
  formatCidr,
  type NetworkPolicy,
  networkPolicy,
  parseCidr,
} from '#shared/board-network.ts';
import { qemuDriverOptions } from '#shared/boards.ts';

const nat = (allow: string[] = []): NetworkPolicy => ({ egress: 'nat', allow });
const none: NetworkPolicy = { egress: 'none', allow: [] };

describe('allow-list entries', () => {
  it.each([
    ['198.51.100.7', '198.51.100.7/32'],
    ['198.51.100.7/24', '198.51.100.0/24'],
    [' 10.0.0.0/8 ', '10.0.0.0/8'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:db8::/32', '2001:db8::/32'],
    ['2001:DB8:0:0:1::1/128', '2001:db8::1:0:0:1/128'],
    ['2001:db8:1:2:3:4:5:6/64', '2001:db8:1:2::/64'],
    ['::1', '::1/128'],
    ['::', '::/128'],
    ['::ffff:198.51.100.1', '::ffff:c633:6401/128'],
    ['fe80::1/10', 'fe80::/10'],
  ])('reads %s as %s', (text, canonical) => {
    const c = parseCidr(text);
    expect(c).not.toBeNull();
    expect(formatCidr(c!)).toBe(canonical);
    expect(allowEntry.parse(text)).toBe(canonical);
  });

  it.each([
    '',
    'example.org',
    '198.51.100.256',
    '198.51.100',
    '198.51.100.1/33',
    '198.051.100.1',
    '2001:db8::/129',
    '2001:db8:::1',
    '2001:db8::1::2',
    '1:2:3:4:5:6:7:8:9',
    '198.51.100.0/24/1',
    '198.51.100.0/-1',
    '198.51.100.1:80',
  ])('refuses %j', (text) => {
    expect(parseCidr(text)).toBeNull();
    expect(allowEntry.safeParse(text).success).toBe(false);
  });

  it('gives a policy an empty allow list by default and bounds its length', () => {
    expect(networkPolicy.parse({ egress: 'nat' })).toEqual({ egress: 'nat', allow: [] });
    expect(networkPolicy.safeParse({ egress: 'open' }).success).toBe(false);
    expect(networkPolicy.safeParse({ egress: 'nat', allow: Array(257).fill('10.0.0.1') }).success).toBe(
      false,
    );
  });

  it('takes a policy in the lab file, for the lab and for one board', () => {
    const lab = labFileSchema.parse({
      network: { egress: 'none' },
      boards: [
        {
          id: 'rv-1',
          name: 'rv-1',
          driver: 'qemu',
          options: { network: { egress: 'nat', allow: ['198.51.100.9/24'] } },
        },
      ],
    });
    expect(lab.network).toEqual({ egress: 'none', allow: [] });
    expect(lab.boards[0].options).toMatchObject({ network: { egress: 'nat', allow: ['198.51.100.0/24'] } });
    expect(qemuDriverOptions.parse({}).network).toBeUndefined();
    expect(
      labFileSchema.safeParse({
        boards: [
          {
            id: 'rv-1',
            name: 'rv-1',
            driver: 'qemu',
            options: { network: { egress: 'nat', allow: ['nope'] } },
          },
        ],
      }).success,
    ).toBe(false);
  });
});

const ROUTE_HEAD = 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT';
const V6_DEFAULT_LO =
  '00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo';
const V6_DEFAULT_ETH =
  '00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe8000000000000000fcfffffe000001 00000400 00000001 00000000 00450003     eth0';
const V6_LINK =
  'fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0';

describe("the host's default", () => {
  it.each([
    [
      'an IPv4 default route',
      `${ROUTE_HEAD}\neth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0`,
      '',
      true,
    ],
    [
      'only a subnet route',
      `${ROUTE_HEAD}\neth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0`,
      V6_LINK,
      false,
    ],
    [
      'a default route that is down',
      `${ROUTE_HEAD}\neth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0`,
      '',
      false,
    ],
    ['an IPv6 default route only', ROUTE_HEAD, `${V6_LINK}\n${V6_DEFAULT_ETH}`, true],
    ["the loopback's IPv6 unreachable default", ROUTE_HEAD, V6_DEFAULT_LO, false],
    ['nothing at all', '', '', false],
  ])('with %s: %s', (_what, v4, v6, want) => {
    expect(hasDefaultRoute(v4, v6)).toBe(want);
    expect(hostDefaultEgress((f) => (f.endsWith('ipv6_route') ? v6 : v4))).toBe(want ? 'nat' : 'none');
  });

  it('is none when /proc cannot be read', () => {
    expect(
      hostDefaultEgress(() => {
        throw new Error('ENOENT');
      }),
    ).toBe('none');
  });
});

describe('which policy a board gets', () => {
  it.each([
    [{ admin: none, board: nat(), lab: nat() }, 'nat', none, 'admin'],
    [{ admin: null, board: nat(['10.0.0.0/8']), lab: none }, 'none', nat(['10.0.0.0/8']), 'board'],
    [{ board: undefined, lab: none }, 'nat', none, 'lab'],
    [{}, 'nat', nat(), 'host'],
    [{}, 'none', none, 'host'],
  ] as const)('%j on a host defaulting to %s', (layers, host, policy, source) => {
    expect(resolvePolicy(layers, host)).toEqual({ policy, source });
  });
});

describe('the nftables rules of a board', () => {
  it('always refuses the host first', () => {
    for (const p of [none, nat(), nat(['198.51.100.0/24'])])
      expect(boardRules(p)[0]).toBe(
        'fib daddr type { local, broadcast, multicast } counter reject with icmpx type admin-prohibited comment "the host"',
      );
  });

  it.each([
    ['nat without a list: only the host', nat(), []],
    ['none: everything', none, ['counter reject with icmpx type admin-prohibited comment "egress none"']],
    [
      'an IPv4 list: IPv6 refused whole',
      nat(['198.51.100.0/24', '203.0.113.7/32', '198.51.100.0/24']),
      [
        'meta nfproto ipv4 ip daddr != { 198.51.100.0/24, 203.0.113.7/32 } counter reject with icmpx type admin-prohibited comment "allow list"',
        'meta nfproto ipv6 counter reject with icmpx type admin-prohibited comment "allow list"',
      ],
    ],
    [
      'both families',
      nat(['2001:db8::/32', '198.51.100.1/32']),
      [
        'meta nfproto ipv4 ip daddr != { 198.51.100.1/32 } counter reject with icmpx type admin-prohibited comment "allow list"',
        'meta nfproto ipv6 ip6 daddr != { 2001:db8::/32 } counter reject with icmpx type admin-prohibited comment "allow list"',
      ],
    ],
  ])('%s', (_what, policy, rest) => {
    expect(boardRules(policy).slice(1)).toEqual(rest);
  });

  it('replaces a board chain in one transaction, adding the map entry once', () => {
    const first = applyText(1_000_065_536, none, false);
    expect(first).toContain('add table inet bianbu_boards');
    expect(first).toContain(
      'add chain inet bianbu_boards output { type filter hook output priority 0; policy accept; }',
    );
    expect(first).toContain('add rule inet bianbu_boards output meta skuid vmap @boards');
    expect(first).toContain('flush chain inet bianbu_boards b_1000065536');
    expect(first).toContain('add element inet bianbu_boards boards { 1000065536 : jump b_1000065536 }');
    expect(first.indexOf('flush chain inet bianbu_boards b_1000065536')).toBeLessThan(
      first.indexOf('add rule inet bianbu_boards b_1000065536'),
    );
    expect(applyText(1_000_065_536, none, true)).not.toContain('add element');
    expect(removeText(1_000_065_536, { entry: true, chain: true }).trim().split('\n')).toEqual([
      'delete element inet bianbu_boards boards { 1000065536 }',
      'delete chain inet bianbu_boards b_1000065536',
    ]);
    expect(removeText(1_000_065_536, { entry: false, chain: false }).trim()).toBe('');
    expect(chainUid('b_1000065536')).toBe(1_000_065_536);
    expect(chainUid('output')).toBeNull();
  });

  // Needs root and nftables (`.ci/run` installs it).
  it('is text the host nft accepts (checked, not applied)', () => {
    for (const p of [
      none,
      nat(),
      nat(['198.51.100.0/24']),
      nat(['2001:db8::/32']),
      nat(['198.51.100.1', '::1']),
    ]) {
      for (const hasEntry of [false, true])
        execFileSync('/usr/sbin/nft', ['-c', '-f', '-'], { input: applyText(4_000_000_000, p, hasEntry) });
    }
  });
});

/** A firewall that records what it was asked. */
function fakeFirewall(opts: { unavailable?: string; failApply?: boolean } = {}) {
  const calls: string[] = [];
  const fw: Firewall = {
    unavailable: async () => opts.unavailable ?? null,
    apply: async (uid, p) => {
      calls.push(`apply ${uid} ${p.egress} ${p.allow.join(',')}`);
      if (opts.failApply) throw new Error('nft said no');
    },
    remove: async (uid) => {
      calls.push(`remove ${uid}`);
    },
    sweep: async () => [],
  };
  return { fw, calls };
}

// Every directory of this file under one, removed at the end.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-test-net-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

function network(fw: Firewall, policy = nat()) {
  const dir = fs.mkdtempSync(path.join(scratch, 'net-'));
  const changes: string[] = [];
  const n = new BoardNetwork({
    boardId: 'rv-1',
    uid: 1_000_000_000,
    runDir: dir,
    cgroupJoin: '',
    policy,
    firewall: fw,
    onChange: (s) => changes.push(`${s.state}${s.reason ? ` ${s.reason}` : ''}`),
  });
  return { n, dir, changes };
}

describe("a board's NIC backend", () => {
  it('gives the machine no NIC when the rules cannot be applied: never an unfiltered network', async () => {
    const { fw, calls } = fakeFirewall({ unavailable: 'not root' });
    const { n } = network(fw);
    await n.prepare();
    expect(await n.open()).toBeNull();
    expect(n.status()).toMatchObject({ state: 'off' });
    expect(n.status().reason).toMatch(/^network\.(firewall_unavailable|stack_missing)$/);
    expect(calls).toEqual([]);
  });

  it('gives none when nft refuses the rules either', async () => {
    const { fw } = fakeFirewall({ failApply: true });
    const { n } = network(fw);
    await n.prepare();
    expect(await n.open()).toBeNull();
    expect(n.status().state).toBe('off');
  });

  // Needs passt installed (`.ci/run` installs it): without it the backend is off before any rule.
  it('applies the rules before anything runs, replaces them live, removes them last', async () => {
    const { fw, calls } = fakeFirewall();
    const { n, changes } = network(fw, nat());
    await n.prepare();
    expect(calls).toEqual(['apply 1000000000 nat ']);
    await n.setPolicy(none);
    await n.setPolicy(nat(['198.51.100.0/24']));
    await n.remove();
    expect(calls).toEqual([
      'apply 1000000000 nat ',
      'apply 1000000000 none ',
      'apply 1000000000 nat 198.51.100.0/24',
      'remove 1000000000',
    ]);
    expect(changes.at(-1)).toBe('stopped');
  });

  it("hands passt a blocking socket: the shell before it clears the pair's O_NONBLOCK", async () => {
    const dir = fs.mkdtempSync(path.join(scratch, 'pair-'));
    const [a, b] = await socketPair(dir);
    const argv = passtArgv(process.getuid?.() ?? 0, '', 3);
    // The same shell text, then a look at the descriptor's flags instead of setpriv and passt.
    const p = spawn(
      argv[0],
      [argv[1], argv[2], argv[3], '/bin/sh', '-c', 'grep ^flags /proc/self/fdinfo/3'],
      {
        stdio: ['ignore', 'pipe', 'inherit', b],
      },
    );
    a.destroy();
    b.destroy();
    let out = '';
    p.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await new Promise((r) => p.once('close', r));
    const flags = Number.parseInt(/flags:\s+(\d+)/.exec(out)?.[1] ?? 'x', 8);
    expect(Number.isNaN(flags)).toBe(false);
    expect(flags & 0o4000).toBe(0);
  });

  it('makes a connected pair of stream sockets and leaves no socket file behind', async () => {
    const dir = fs.mkdtempSync(path.join(scratch, 'pair-'));
    const [a, b] = await socketPair(dir);
    const got = new Promise<string>((r) => b.once('data', (d: Buffer) => r(d.toString())));
    a.write('frame');
    expect(await got).toBe('frame');
    expect(fs.readdirSync(dir)).toEqual([]);
    a.destroy();
    b.destroy();
  });

  it('runs passt as the board, unprivileged, quiet, with no port in and no host mapping', () => {
    const argv = passtArgv(1_000_000_000, "echo $$ > '/sys/fs/cgroup/x/cgroup.procs' || exit 125; ", 3);
    expect(argv.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(argv[2]).toContain('cgroup.procs');
    // Its socket blocks (Node's are non-blocking; passt completes partial frames with blocking calls).
    expect(argv[2]).toContain('~O_NONBLOCK');
    expect(argv).toEqual(
      expect.arrayContaining(['--reuid=1000000000', '--regid=1000000000', '--no-new-privs']),
    );
    const passt = argv.slice(argv.indexOf('/usr/bin/passt'));
    expect(passt).toEqual([
      '/usr/bin/passt',
      '-f',
      '-q',
      '--one-off',
      '-F',
      '3',
      '-t',
      'none',
      '-u',
      'none',
      '--no-map-gw',
    ]);
  });

  it('gives QEMU a virtio NIC on its inherited stream socket, or no NIC at all', () => {
    const withNic = qemuArgs({ cores: 2, memoryMb: 1024, nicFd: NIC_FD }, '/run/board');
    const i = withNic.indexOf('-netdev');
    expect(withNic.slice(i, i + 4)).toEqual([
      '-netdev',
      `stream,id=net0,addr.type=fd,addr.str=${NIC_FD}`,
      '-device',
      'virtio-net-device,netdev=net0',
    ]);
    const without = qemuArgs({ cores: 2, memoryMb: 1024 }, '/run/board');
    expect(without).not.toContain('-netdev');
    expect(without.join(' ')).not.toContain('virtio-net');
  });
});
