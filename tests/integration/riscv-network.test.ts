// A riscv64 board's network under an administrator's policy (issue 36), attacked from inside the
// board. "The outside" is a network namespace of the test's own (outside-netns.ts: a veth pair on
// 198.51.100.0/24 and our HTTP server serving a tiny Debian repository); one minimal riscv64 board
// boots under `nat`, and every command runs in the guest as its root through the board's agent.
// Needs root, QEMU and the board images (as riscv-boards), passt and nftables.
//
// What leaves this machine: nothing. The probes at addresses outside it (the guest's gateway, its DNS
// server, slirp's 10.0.2.2) are sent only while the board's rules refuse everything but the outside
// namespace, and each such phase checks those rules are in force first.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SLOT_REGISTRY, SLOT_SIZE, UID_BASE } from '#server/boards/local/uid-slots.ts';
import { hostFirewall } from '#server/boards/qemu/firewall.ts';
import { NFT_TABLE } from '#server/boards/qemu/net-policy.ts';
import type { QemuDriver } from '#server/boards/qemu/qemu-driver.ts';
import { shQuote } from '#server/boards/ssh/quote.ts';
import type { SshDriver } from '#server/boards/ssh/ssh-driver.ts';
import type { BoardNetworkDto, NetworkPolicyInput } from '#shared/board-network.ts';
import type { TestApp } from './helpers/app.ts';
import {
  OUTSIDE,
  type Outside,
  outsideMissing,
  startOutside,
  writeAptRepo,
} from './helpers/outside-netns.ts';
import {
  boardImagesDir,
  missingBoardImages,
  noImageBuilds,
  startRiscvLab,
  untilDriver,
} from './helpers/riscv-lab.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

const IMAGES = boardImagesDir();
const BOARD = 'rvn-test';
const SOURCES = '/etc/apt/bianbu-test.list';
/** Only the outside's repository: the image's own sources (Debian's mirrors) are never asked. */
const APT_SOURCES = `-o Dir::Etc::SourceList=${SOURCES} -o Dir::Etc::SourceParts=/nonexistent`;
const APT = `timeout 240 apt-get update --error-on=any -o Acquire::Retries=0 -o Acquire::http::Timeout=15 ${APT_SOURCES} -o APT::Get::List-Cleanup=0`;

let t: TestApp;
let work: string;
let outside: Outside;
let admin: TestUser;
let decoy: net.Server;
let decoyPort = 0;
let decoyHits = 0;
let servicePort = 0;

let driver: () => QemuDriver;
/** A uid slot no board holds (near the top of the range): its rules are a dead service's. */
const STALE_SLOT = 50_000;
const STALE_UID = UID_BASE + STALE_SLOT * SLOT_SIZE;

/** A bash command line in the guest, as its root, through the board's agent. */
async function guest(cmd: string, timeoutMs = 300_000): Promise<{ code: number | null; out: string }> {
  const ssh = (driver() as unknown as { ssh: SshDriver }).ssh;
  const r = await ssh.exec(`bash -c ${shQuote(cmd)}`, timeoutMs);
  return { code: r.code, out: `${r.stdout}${r.stderr}` };
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const api = async (method: 'GET' | 'POST', payload?: object, who: TestUser = admin) => {
  const r = await t.app.inject({
    method,
    url:
      method === 'GET' ? `/api/admin/boards/network?deviceId=${BOARD}` : '/api/admin/boards/network/change',
    headers: who.headers,
    payload,
  });
  return r.json() as { code: number; data: BoardNetworkDto };
};

const setPolicy = async (policy: NetworkPolicyInput | null) => {
  const r = await api('POST', { deviceId: BOARD, policy });
  expect(r.code, JSON.stringify(r)).toBe(20000);
  return r.data;
};

/** The board's passt: a child of this process (the service), found by its name. */
function passtProcess(): { pid: number; uid: number; cgroup: string } | null {
  for (const d of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'latin1');
      const comm = /\((.*)\)/.exec(stat)?.[1] ?? '';
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!comm.startsWith('passt') || ppid !== process.pid) continue;
      const status = fs.readFileSync(`/proc/${d}/status`, 'utf8');
      return {
        pid: Number(d),
        uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]),
        cgroup: fs.readFileSync(`/proc/${d}/cgroup`, 'utf8'),
      };
    } catch {}
  }
  return null;
}

/** The catalogue's `network` attribute of the board comes to `want` (facts are written as they come). */
async function catalogueSays(want: string): Promise<void> {
  let seen: unknown;
  await until(
    `the catalogue to say network ${want}`,
    async () => {
      seen = (await t.app.boards.row(BOARD))?.attributes.network;
      return seen === want;
    },
    10_000,
  ).catch(() => {
    throw new Error(`the catalogue says network ${String(seen)}, not ${want}`);
  });
}

/** The board's QEMU process: the one of its uid. */
function qemuPid(uid: number): number {
  for (const d of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      if (!fs.readFileSync(`/proc/${d}/comm`, 'latin1').startsWith('qemu-system')) continue;
      if (Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${d}/status`, 'utf8'))?.[1]) === uid)
        return Number(d);
    } catch {}
  }
  throw new Error(`no QEMU process of uid ${uid}`);
}

/** The comments of the board's chain's rules, and what each rule refused so far. */
function chainRules(uid: number): Array<{ comment: string; packets: number }> {
  let text: string;
  try {
    text = execFileSync('/usr/sbin/nft', ['-j', 'list', 'chain', 'inet', NFT_TABLE, `b_${uid}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return [];
  }
  const doc = JSON.parse(text) as { nftables: Array<{ rule?: { comment?: string; expr: unknown[] } }> };
  return doc.nftables
    .filter((x) => x.rule)
    .map((x) => {
      const counter = x.rule!.expr.find((e) => (e as { counter?: unknown }).counter) as
        | { counter: { packets: number } }
        | undefined;
      return { comment: x.rule!.comment ?? '', packets: counter?.counter.packets ?? 0 };
    });
}

/** The host's own addresses (no link-local ones: those need an interface the guest cannot name). */
function hostAddresses(): string[] {
  const doc = JSON.parse(execFileSync('/usr/sbin/ip', ['-j', 'addr'], { encoding: 'utf8' })) as Array<{
    addr_info: Array<{ local: string; scope: string }>;
  }>;
  return doc
    .flatMap((i) => i.addr_info)
    .filter((a) => a.scope !== 'link')
    .map((a) => a.local);
}

/**
 * Connects from inside the guest to each address and port at once (bash's /dev/tcp, 4 s each) and
 * answers those that opened.
 */
async function probeFromGuest(addrs: string[], ports: number[]): Promise<string[]> {
  const pairs = addrs.flatMap((a) => ports.map((p) => `${a} ${p}`));
  const script = [
    'probe() { if timeout 4 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; then echo "open $1 $2"; else echo "closed $1 $2"; fi; }',
    ...pairs.map((p) => `probe ${p} &`),
    'wait',
  ].join('\n');
  const r = await guest(script, 120_000);
  const lines = r.out.split('\n').filter((l) => /^(open|closed) /.test(l));
  expect(lines.length, r.out).toBe(pairs.length);
  return lines.filter((l) => l.startsWith('open '));
}

/** The guest's own gateway and DNS server as DHCP gave them (aliases a user-mode stack may map). */
async function guestAliases(): Promise<string[]> {
  const r = await guest(
    "ip -4 route show default | awk '{print $3}'; sed -n 's/^nameserver //p' /run/systemd/resolve/resolv.conf 2>/dev/null",
  );
  return [
    ...new Set(
      r.out
        .split('\n')
        .map((s) => s.trim())
        .filter((s) => net.isIPv4(s)),
    ),
  ];
}

describe('a riscv64 board on a network under an administrator policy, attacked from inside', () => {
  beforeAll(async () => {
    const missing = [
      outsideMissing(),
      fs.existsSync('/usr/bin/passt') ? null : 'passt is not installed',
      fs.existsSync('/usr/sbin/nft') ? null : 'nftables is not installed',
      missingBoardImages(IMAGES, ['minimal']),
    ].filter(Boolean);
    if (missing.length) throw new Error(`cannot run: ${missing.join('; ')}`);
    noImageBuilds();
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-rvnet-'));
    writeAptRepo(path.join(work, 'repo'));
    outside = await startOutside(path.join(work, 'repo'));
    // Stands for whatever listens on the host's addresses (the service, other boards' forwards): it
    // answers anyone who reaches it, on every address of the host, IPv4 and IPv6.
    decoy = net.createServer((s) => {
      decoyHits++;
      s.destroy();
    });
    await new Promise<void>((r) => decoy.listen({ port: 0, host: '::', ipv6Only: false }, r));
    decoyPort = (decoy.address() as net.AddressInfo).port;
    // What a killed service would have left: the rules of a board whose slot nobody holds.
    if (fs.existsSync(path.join(DEFAULT_SLOT_REGISTRY, String(STALE_SLOT))))
      throw new Error(`slot ${STALE_SLOT} is held: pick another for the stale rules`);
    await hostFirewall.apply(STALE_UID, { egress: 'none', allow: [] });
    expect(chainRules(STALE_UID).length).toBe(2);
    ({ t, driver } = await startRiscvLab({
      work,
      imagesDir: IMAGES,
      board: { id: BOARD, image: 'minimal', cores: 2, memoryMb: 1024, network: { egress: 'nat' } },
      probeIntervalMs: 2000,
    }));
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    servicePort = (t.app.server.address() as net.AddressInfo).port;
    admin = await makeUser(t.app, { perms: ['device.change_device'] });
    await untilDriver(driver, 'the board agent', (d) => d.state.agent === 'ready', 900_000);
    // The agent answers before udev and networkd are done on a loaded host: wait for DHCP's address.
    await until(
      "the guest's DHCP address on eth0",
      async () => /inet \d/.test((await guest('ip -4 -o addr show dev eth0 2>/dev/null')).out),
      300_000,
    );
    await guest(`printf 'deb [trusted=yes] ${outside.url} ${OUTSIDE.suite} main\\n' > ${SOURCES}`);
  }, 960_000);

  afterAll(async () => {
    await t?.close();
    outside?.stop();
    decoy?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('removed at its start the rules a killed service left for a board nobody holds', () => {
    expect(chainRules(STALE_UID)).toEqual([]);
  });

  it('gives the board a NIC whose stack runs as the board, unprivileged, with rules keyed on it', async () => {
    const st = await api('GET');
    expect(st.code).toBe(20000);
    expect(st.data).toMatchObject({
      policy: { egress: 'nat', allow: [] },
      source: 'board',
      state: 'on',
      reason: null,
    });
    expect((await guest('ls /sys/class/net')).out.split('\n')).toContain('eth0');
    const p = passtProcess();
    expect(p, 'passt runs as a child of the service').not.toBeNull();
    expect(p!.uid).toBeGreaterThanOrEqual(1_000_000_000);
    const status = fs.readFileSync(`/proc/${p!.pid}/status`, 'utf8');
    expect(/^CapEff:\s+(\S+)/m.exec(status)?.[1]).toBe('0000000000000000');
    // In the board's cgroups, with its machine.
    expect(p!.cgroup).toContain('bianbu-boards');
    expect(p!.cgroup).toBe(fs.readFileSync(`/proc/${qemuPid(p!.uid)}/cgroup`, 'utf8'));
    // It listens on no TCP port: nothing connects in through it (its UDP sockets: docs/riscv-network.md).
    const listening = execFileSync('ss', ['-Hltnp'], { encoding: 'utf8' });
    expect(listening).not.toContain(`pid=${p!.pid},`);
    expect(chainRules(p!.uid).map((r) => r.comment)).toEqual(['the host']);
    // The catalogue says what the board has.
    await catalogueSays('nat');
    // A member without the permission is refused.
    const member = await makeUser(t.app, { perms: ['device.view_device'] });
    expect((await api('GET', undefined, member)).code).toBe(40300);
    expect((await api('POST', { deviceId: BOARD, policy: { egress: 'nat' } }, member)).code).toBe(40300);
    expect(
      (await api('POST', { deviceId: BOARD, policy: { egress: 'nat', allow: ['10.0.0.0/33'] } })).code,
    ).toBe(40000);
  }, 120_000);

  it('under nat, apt-get update against the outside works and the network graph moves', async () => {
    const before = await driver().sampleMetrics();
    const seen = outside.requests.length;
    const r = await guest(APT);
    expect(r.code, r.out).toBe(0);
    expect((await guest(`apt-cache ${APT_SOURCES} policy bianbu-hello`)).out).toMatch(/Candidate: 1\.0/);
    expect(outside.requests.slice(seen).some((l) => / \/dists\/bianbu-test\/Release 200 /.test(l))).toBe(
      true,
    );
    // Two MB more from the outside: the guest NIC's counters (never lo's) carry them.
    const blob = await guest(
      `exec 3<>/dev/tcp/${OUTSIDE.addr}/80 && printf 'GET /blob/2000000 HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3 | wc -c`,
    );
    expect(Number(blob.out.trim())).toBeGreaterThan(2_000_000);
    const after = await driver().sampleMetrics();
    expect(after.netRx - before.netRx).toBeGreaterThan(2_000_000);
    expect(after.netTx - before.netTx).toBeGreaterThan(500);
    const eth = await guest("awk '/eth0:/{print $2}' /proc/net/dev");
    expect(Math.abs(Number(eth.out.trim()) - after.netRx)).toBeLessThan(200_000);
  }, 600_000);

  it('under nat, never reaches the host: its loopback services, its addresses, other forwards', async () => {
    const uid = passtProcess()!.uid;
    // The decoy answers from the host (so a closed probe below means the board was kept out).
    await new Promise<void>((resolve, reject) =>
      net.connect(decoyPort, OUTSIDE.hostAddr, resolve).once('error', reject),
    );
    const hits = decoyHits;
    const refusedBefore = chainRules(uid)[0].packets;
    const targets = [...hostAddresses(), OUTSIDE.hostAddr];
    // The rules refused them, not chance: the host rule counted the board's attempts. A probe gives up
    // after 4 s; on a starved host (QEMU niced beside the other suites) every probe of a round once
    // gave up before the guest's bash had sent anything, so up to three rounds, none ever open.
    for (let round = 0; round < 3 && chainRules(uid)[0].packets <= refusedBefore; round++) {
      const open = await probeFromGuest(targets, [5432, 6379, servicePort, decoyPort]);
      expect(open).toEqual([]);
      expect(decoyHits).toBe(hits);
    }
    expect(chainRules(uid)[0].packets).toBeGreaterThan(refusedBefore);
  }, 300_000);

  it("reaches a port of the board only through its agent (the holder's path), none through the network", async () => {
    // sshd returns as it daemonizes; on a loaded host it may listen a moment later: wait for the port.
    await guest(
      'mkdir -p /run/sshd && /usr/sbin/sshd -p 2222 -o ListenAddress=127.0.0.1 -o PidFile=/run/sshd-2222.pid && ' +
        'for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/2222) 2>/dev/null && exit 0; sleep 0.2; done; exit 1',
    );
    const s = await driver().connectPort(2222);
    const banner = await new Promise<string>((resolve) =>
      s.once('data', (d: Buffer) => resolve(d.toString())),
    );
    s.destroy();
    expect(banner).toMatch(/^SSH-2\.0-OpenSSH/);
    await guest('kill $(cat /run/sshd-2222.pid)');
  }, 120_000);

  it('under none (changed live, no reboot), apt-get update fails and nothing leaves', async () => {
    const boots = driver().state.boots;
    const st = await setPolicy({ egress: 'none' });
    expect(st).toMatchObject({ policy: { egress: 'none' }, source: 'admin', state: 'on' });
    const uid = passtProcess()!.uid;
    // In force before anything is sent at an address outside this machine.
    expect(chainRules(uid).map((r) => r.comment)).toEqual(['the host', 'egress none']);
    await catalogueSays('none');
    const seen = outside.requests.length;
    const r = await guest(APT);
    expect(r.code, r.out).not.toBe(0);
    expect(outside.requests.length).toBe(seen);
    const hits = decoyHits;
    const open = await probeFromGuest(
      [...hostAddresses(), OUTSIDE.hostAddr, OUTSIDE.addr, '10.0.2.2', '10.0.2.3', ...(await guestAliases())],
      [80, 5432, 6379, servicePort, decoyPort],
    );
    expect(open).toEqual([]);
    expect(decoyHits).toBe(hits);
    expect(outside.requests.length).toBe(seen);
    expect(chainRules(uid)[1].packets).toBeGreaterThan(0);
    expect(driver().state.boots).toBe(boots);
    // Kept across a restart of the service: the administrator's choice is stored.
    expect(
      (await t.app.storage.query<{ n: number }>('select count(*)::int as n from board_network'))[0].n,
    ).toBe(1);
  }, 600_000);

  it('under an allow list, only the listed destinations are reached', async () => {
    const st = await setPolicy({ egress: 'nat', allow: [`${OUTSIDE.nobody}/32`, '2001:db8::/32'] });
    expect(st.policy.allow).toEqual([`${OUTSIDE.nobody}/32`, '2001:db8::/32']);
    const uid = passtProcess()!.uid;
    expect(chainRules(uid).map((r) => r.comment)).toEqual(['the host', 'allow list', 'allow list']);
    await catalogueSays('limited');
    const seen = outside.requests.length;
    expect((await guest(APT)).code).not.toBe(0);
    expect(outside.requests.length).toBe(seen);
    const open = await probeFromGuest(
      [...hostAddresses(), OUTSIDE.hostAddr, OUTSIDE.addr, '10.0.2.2', ...(await guestAliases())],
      [80, 5432, 6379, decoyPort],
    );
    expect(open).toEqual([]);
    // The server listed: reached again.
    await setPolicy({ egress: 'nat', allow: [`${OUTSIDE.addr}/32`] });
    const r = await guest(APT);
    expect(r.code, r.out).toBe(0);
    expect(outside.requests.length).toBeGreaterThan(seen);
  }, 600_000);

  it("drops the administrator's choice back to the lab file's policy", async () => {
    const st = await setPolicy(null);
    expect(st).toMatchObject({ policy: { egress: 'nat', allow: [] }, source: 'board', state: 'on' });
    expect(chainRules(passtProcess()!.uid).map((r) => r.comment)).toEqual(['the host']);
  }, 120_000);

  it('ends the stack with the machine, a fresh one each power-on, and the rules with the board', async () => {
    const first = passtProcess()!;
    await driver().powerOff();
    await until('passt to end with the machine', () => passtProcess() === null, 60_000);
    expect((await api('GET')).data.state).toBe('stopped');
    await driver().powerOn();
    // The stack is started through setpriv, which becomes passt once it has exec'd: on a loaded host a
    // moment after the machine runs.
    await until('passt to run for the new machine', () => passtProcess() !== null, 60_000);
    const second = passtProcess();
    expect(second).not.toBeNull();
    expect(second!.pid).not.toBe(first.pid);
    expect(second!.uid).toBe(first.uid);
    expect((await api('GET')).data.state).toBe('on');
    await t.app.boards.stop();
    expect(passtProcess()).toBeNull();
    expect(chainRules(first.uid)).toEqual([]);
  }, 300_000);
});
