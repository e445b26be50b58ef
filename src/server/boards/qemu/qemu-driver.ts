// A riscv64 board on this host: a QEMU `virt` machine (machine.ts) booted by OpenSBI and U-Boot from
// its own raw disk (`<boardDir>/disk.img`), the image's own extlinux.conf, kernel and initrd.
// Lifecycle: `start()` gives the board its host uid and cgroups, writes its default image onto its
// disk when it has none, and powers it on; the board then boots on its own (a minute or so under TCG)
// while the service goes on. Serial console: the machine's ttyS0, every byte from power-on kept in a
// ring across resets and flashes; the service writes nothing into it. Shells, files, metrics and
// plugins go through the board's agent (bianbu-agent in the images: sshd on a virtio-serial port), an
// SSH connection over a stream only the host reaches; an image without the agent still has its serial
// console, and calls that need the agent say so (`board.no_agent`). Power: QMP `system_reset`, off and
// on by ending and starting the process. Facts (ISA, harts, memory, kernel, OS) are read from the
// machine, never from the lab file.
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { Egress, type NetworkPolicy, NetworkState } from '#shared/board-network.ts';
import type { QemuDriverOptions } from '#shared/boards.ts';
import {
  type BoardDriver,
  type BoardSnapshots,
  Capability,
  DriverError,
  type FlashOptions,
  type FlashProgress,
  imageKind,
  type MetricsSample,
  type PtyHandle,
  type PtySize,
} from '../driver.ts';
import { BoardCgroups, cpuBound } from '../local/cgroups.ts';
import { hostSupport } from '../local/host-support.ts';
import { DEFAULT_RUN_DIR } from '../local/local-driver.ts';
import { claimIdentity, DEFAULT_SLOT_REGISTRY } from '../local/uid-slots.ts';
import { shQuote } from '../ssh/quote.ts';
import { SshDriver } from '../ssh/ssh-driver.ts';
import { ByteRing, sleep, withTimeout } from '../util.ts';
import type { BoardImages } from './board-images.ts';
import { type Firewall, hostFirewall } from './firewall.ts';
import { DISK_NODE, Machine } from './machine.ts';
import { BoardNetwork } from './network.ts';
import { RawImageError, verifyRawImage, writeRawImage } from './raw-image.ts';
import { BoardDisk } from './snapshot-disk.ts';

/** Largest disk a flash may write (decompressed): bombs stop here. */
export const MAX_DISK_BYTES = 64 * 1024 ** 3;
/** How long a flash waits for the new image to boot. */
const BOOT_WAIT_MS = 300_000;
/**
 * How long a user's call that needs the agent waits for it: within the spec's 5 s per call, then
 * `board.booting` (the console and the CLI try again).
 */
const CALL_AGENT_WAIT_MS = 3500;
/** How long after the serial console's `login:` an agent that never answered counts as absent. */
const AGENT_GRACE_MS = 45_000;
const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** Serial output a paused viewer may hold back before the oldest is dropped (a UART drops too). */
const SERIAL_HELD_MAX = 1024 * 1024;

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
const MAX_PLUGIN_BYTES = 96 * 1024;

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

export interface QemuBoardInit {
  boardId: string;
  name: string;
  options: QemuDriverOptions;
  boardDir: string;
  images: BoardImages;
  runDir?: string;
  uidRegistry?: string;
  /** The lab's plugins directory (host files; a riscv64 board runs scripts of it). */
  pluginsDir?: string;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
  /** Facts read from the machine as they come (each boot, each flash). */
  onFacts?: (facts: BoardFacts) => void;
  /** The board's network policy as the lab resolved it (board-network.ts); default `none`. */
  network?: NetworkPolicy;
  /** The host's firewall for the board's rules (default: nftables). */
  firewall?: Firewall;
}

type AgentState = 'booting' | 'ready' | 'absent';

export class QemuDriver implements BoardDriver {
  readonly kind = 'qemu' as const;
  readonly flashes = 'disk' as const;
  readonly boardId: string;
  readonly files: BoardDriver['files'];
  private readonly o: QemuDriverOptions;
  private machine: Machine | null = null;
  private ssh: SshDriver | null = null;
  private cgroups: BoardCgroups | null = null;
  private readonly ring = new ByteRing(512 * 1024);
  private readonly serialOut = new EventEmitter();
  private serialText = '';
  private agent: AgentState = 'booting';
  private readonly agentEvents = new EventEmitter();
  private loginSeenAt = 0;
  private boot = 0;
  private facts: BoardFacts = {};
  private stopped = false;
  private net: BoardNetwork | null = null;
  private readonly diskFile: string;
  /** The disk's files: the raw base, the qcow2 overlay the machine writes, its snapshots. */
  private readonly disk: BoardDisk;

  constructor(private readonly init: QemuBoardInit) {
    this.boardId = init.boardId;
    this.o = init.options;
    if (init.network) this.networkPolicy = init.network;
    this.diskFile = path.join(init.boardDir, 'disk.img');
    this.disk = new BoardDisk(init.boardDir, init.log);
    this.serialOut.setMaxListeners(0);
    this.agentEvents.setMaxListeners(0);
    const wrap =
      <A extends unknown[], R>(fn: (f: BoardDriver['files']) => (...a: A) => Promise<R>) =>
      async (...a: A): Promise<R> => {
        const ssh = await this.untilAgent();
        return fn(ssh.files)(...a);
      };
    this.files = {
      list: wrap((f) => f.list),
      stat: wrap((f) => f.stat),
      read: wrap((f) => f.read),
      write: wrap((f) => f.write),
      remove: wrap((f) => f.remove),
      mkdir: wrap((f) => f.mkdir),
      rename: wrap((f) => f.rename),
      readlink: wrap((f) => f.readlink),
      createReadStream: wrap((f) => f.createReadStream),
      createWriteStream: wrap((f) => f.createWriteStream),
      freeSpace: wrap((f) => f.freeSpace),
    };
  }

  capabilities(): ReadonlySet<Capability> {
    return new Set([
      Capability.shell,
      Capability.serial,
      Capability.files,
      Capability.metrics,
      Capability.powerReset,
      Capability.flash,
      Capability.plugin,
      Capability.vnc,
      Capability.snapshot,
      // A code-server the user runs on the board's 8080, reached through the agent (connectPort).
      Capability.codeServer,
    ]);
  }

  /** The agent's state and the last boot's facts, for the lab and tests. */
  get state(): { agent: AgentState; boots: number; facts: BoardFacts; running: boolean } {
    return {
      agent: this.agent,
      boots: this.boot,
      facts: { ...this.facts },
      running: this.machine?.running ?? false,
    };
  }

  // ---- start and stop ---------------------------------------------------------------------------

  async start(): Promise<void> {
    this.stopped = false;
    fs.mkdirSync(this.init.boardDir, { recursive: true, mode: 0o700 });
    fs.chmodSync(this.init.boardDir, 0o700);
    const host = hostSupport();
    const id = await claimIdentity(this.init.boardDir, this.init.uidRegistry ?? DEFAULT_SLOT_REGISTRY);
    const runRoot = this.init.runDir ?? DEFAULT_RUN_DIR;
    fs.mkdirSync(runRoot, { recursive: true, mode: 0o711 });
    fs.chmodSync(runRoot, 0o711);
    // The machine's sockets: the service's, in a directory the machine can pass through but not write.
    const runDir = path.join(runRoot, String(id.slot));
    fs.mkdirSync(runDir, { recursive: true, mode: 0o711 });
    fs.chownSync(runDir, 0, 0);
    fs.chmodSync(runDir, 0o711);
    this.cgroups = new BoardCgroups(`${this.boardId}-${id.slot}`, host.cgroups, {
      // Guest memory, QEMU's translation cache (64 MiB) and its own heap.
      memoryBytes: (this.o.memoryMb + 320) * 1024 * 1024,
      pids: 256,
      cpus: cpuBound(this.o.cores, os.availableParallelism()),
    });
    this.cgroups.create();
    for (const f of this.cgroups.failures) this.init.log?.(`board limit not enforced: ${f}`);
    await this.cgroups.killAll();
    // The board's network: its rules before anything of it runs (network.ts).
    this.net = new BoardNetwork({
      boardId: this.boardId,
      uid: id.base,
      runDir,
      cgroupJoin: this.cgroups.joinScript(),
      policy: this.networkPolicy,
      firewall: this.init.firewall ?? hostFirewall,
      log: this.init.log,
      onChange: (st) => this.setFacts({ network: networkFact(st) }),
    });
    await this.net.prepare();
    this.setFacts({ network: networkFact(this.net.status()) });
    this.machine = new Machine({
      cores: this.o.cores,
      memoryMb: this.o.memoryMb,
      uid: id.base,
      runDir,
      diskFile: this.diskFile,
      overlayFile: this.disk.overlay,
      cgroupJoin: this.cgroups.joinScript(),
      sandbox: true,
      nic: this.net,
      log: this.init.log,
    });
    this.machine.on('serial', (d: Buffer) => this.onSerial(d));
    this.machine.on('boot', (reason: string) => this.onBoot(reason));
    this.machine.on('exit', (e: { code: number | null; signal: string | null; stderr: string }) => {
      if (!this.stopped) this.init.log?.('the board machine exited', e);
      this.setAgent('booting');
      this.ssh?.dropConnections();
    });
    const machine = this.machine;
    this.ssh = new SshDriver({
      boardId: this.boardId,
      name: this.init.name,
      boardDir: this.init.boardDir,
      log: this.init.log,
      options: {
        host: 'board-agent',
        port: 22,
        user: 'root',
        password: '',
        hostKeyFingerprint: `SHA256:${'A'.repeat(43)}`,
        rootDir: '/',
        timeoutMs: this.o.timeoutMs,
        vncPort: null,
        codeServerPort: null,
        commands: {},
      },
      channel: {
        maxChannels: 100,
        handshakeMs: 120_000,
        connect: async () => {
          if (!machine.agent) throw new DriverError('board.not_running', 'The machine is off');
          return machine.agent.next(5000);
        },
      },
    });
    // What a killed service left on the disk: a flash half swapped, a restore half done; a disk of an
    // earlier version (raw only) gets its overlay.
    await this.disk.prepare();
    await this.disk.recover();
    // A first start (or a disk lost): the default image goes onto the board's disk first.
    if (!fs.existsSync(this.diskFile)) await this.writeDefaultImage();
    else {
      let tag = '';
      try {
        tag = fs.readFileSync(`${this.diskFile}.image`, 'utf8').trim();
      } catch {}
      if (tag) this.setFacts({ image: tag });
    }
    await this.machine.powerOn();
    void this.watchAgent();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.agentEvents.emit('change');
    await this.ssh?.stop().catch(() => {});
    await this.machine?.close();
    await this.cgroups?.killAll();
    // Its stack is gone with its cgroups: only now do its rules go.
    await this.net?.remove();
  }

  /** The machine runs and its monitor answers: what liveness means for a board the host powers. */
  async probe(timeoutMs = 3000): Promise<void> {
    if (!this.machine?.running) throw new DriverError('board.offline', 'The board machine is not running');
    const st = await withTimeout(
      this.machine.query<{ status: string }>('query-status'),
      timeoutMs,
      'QMP status',
    );
    if (st.status !== 'running') throw new DriverError('board.offline', `The board machine is ${st.status}`);
  }

  // ---- serial console and boot ------------------------------------------------------------------

  private onSerial(d: Buffer): void {
    this.ring.push(d);
    this.serialOut.emit('data', d);
    // Boot facts from what the machine prints: the kernel names itself, getty shows its prompt.
    this.serialText = (this.serialText + d.toString('latin1')).slice(-4096);
    const k = /Linux version ([\x21-\x7e]{1,100})/.exec(this.serialText);
    if (k && this.facts.kernel !== k[1]) this.setFacts({ kernel: k[1] });
    if (!this.loginSeenAt && /login: ?$/m.test(this.serialText)) this.loginSeenAt = Date.now();
  }

  private onBoot(reason: string): void {
    this.boot++;
    this.loginSeenAt = 0;
    this.serialText = '';
    this.setAgent('booting');
    this.ssh?.dropConnections();
    this.init.log?.('board machine boots', { reason, boot: this.boot });
    void this.machineFacts();
  }

  /** Harts and memory as QEMU runs them. */
  private async machineFacts(): Promise<void> {
    try {
      const cpus = await this.machine!.query<unknown[]>('query-cpus-fast');
      const mem = await this.machine!.query<{ 'base-memory': number }>('query-memory-size-summary');
      this.setFacts({ cores: cpus.length, memoryMb: Math.round(mem['base-memory'] / 2 ** 20) });
    } catch {}
  }

  private setFacts(f: BoardFacts): void {
    this.facts = { ...this.facts, ...f };
    this.init.onFacts?.(f);
  }

  private setAgent(s: AgentState): void {
    if (this.agent === s) return;
    this.agent = s;
    this.agentEvents.emit('change');
  }

  /**
   * Each boot: try the agent until it answers, then read the facts the guest knows. An image without
   * the agent (its serial console at `login:` for a while and no answer) is marked absent; tries go on
   * more slowly, since a user may install an agent.
   */
  private async watchAgent(): Promise<void> {
    while (!this.stopped) {
      const boot = this.boot;
      if (this.agent === 'ready' || !this.machine?.running) {
        await sleep(1000);
        continue;
      }
      try {
        const r = await this.ssh!.exec(
          'uname -m; uname -r; nproc; sed -n "s/^isa[[:space:]]*: //p" /proc/cpuinfo | head -n1; . /etc/os-release && echo "$PRETTY_NAME"',
          150_000,
        );
        if (boot !== this.boot || r.code !== 0) continue;
        const [arch, kernel, nproc, isa, osName] = r.stdout.split('\n').slice(0, 5).map(cleanFact);
        const n = Number(nproc);
        this.setFacts({
          arch,
          kernel,
          isa,
          os: osName,
          ...(Number.isInteger(n) && n > 0 && n <= 1024 ? { cores: n } : {}),
        });
        // The file server too (an SFTP session: seconds for the guest to start right after a boot), so
        // that a user's first file call finds it open and answers within the spec's 5 s.
        await withTimeout(this.ssh!.files.stat('/'), 120_000, 'sftp warm-up').catch(() => {});
        if (boot !== this.boot) continue;
        this.setAgent('ready');
      } catch {
        if (boot !== this.boot) continue;
        if (this.loginSeenAt && Date.now() - this.loginSeenAt > AGENT_GRACE_MS) this.setAgent('absent');
        await sleep(this.agent === 'absent' ? 10_000 : 1000);
      }
    }
  }

  /** The agent's SSH driver once the agent answers this boot. */
  private async untilAgent(waitMs = CALL_AGENT_WAIT_MS): Promise<SshDriver> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (this.stopped || !this.ssh) throw new DriverError('board.not_running', 'The board is stopped');
      if (this.agent === 'ready') return this.ssh;
      if (this.agent === 'absent')
        throw new DriverError(
          'board.no_agent',
          "This board's image has no Bianbu agent: its serial console works, shells and files need the agent",
        );
      const left = deadline - Date.now();
      if (left <= 0) throw new DriverError('board.booting', 'The board is still booting');
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 1000));
        this.agentEvents.once('change', () => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  async openSerial(_size: PtySize): Promise<PtyHandle> {
    if (!this.machine) throw new DriverError('board.not_running', 'The board is stopped');
    const machine = this.machine;
    const dataFns = new Set<(c: Buffer) => void>();
    const exitFns = new Set<(i: { exitCode: number | null; reason?: string }) => void>();
    let paused = false;
    // What came before this viewer (the ring) and what comes until it has a listener wait here, in
    // order: a listener added late misses nothing and sees nothing twice.
    const replay = this.ring.snapshot();
    let held: Buffer[] = replay.length ? [replay] : [];
    let heldBytes = replay.length;
    let listening = false;
    const flush = () => {
      if (paused || !listening) return;
      const out = held;
      held = [];
      heldBytes = 0;
      for (const c of out) for (const fn of dataFns) fn(c);
    };
    const deliver = (c: Buffer) => {
      if (!paused && listening && !held.length) {
        for (const fn of dataFns) fn(c);
        return;
      }
      held.push(c);
      heldBytes += c.length;
      // A viewer that does not read (paused: its client is slow or gone) costs at most this much.
      while (heldBytes > SERIAL_HELD_MAX && held.length > 1) heldBytes -= held.shift()!.length;
    };
    const onData = (c: Buffer) => deliver(c);
    this.serialOut.on('data', onData);
    let closed = false;
    return {
      write: (d) => machine.writeSerial(d),
      resize: () => {},
      onData: (fn) => {
        dataFns.add(fn);
        if (!listening) {
          listening = true;
          setImmediate(flush);
        }
        return () => dataFns.delete(fn);
      },
      onExit: (fn) => {
        exitFns.add(fn);
        return () => exitFns.delete(fn);
      },
      pause: () => {
        paused = true;
      },
      resume: () => {
        paused = false;
        flush();
      },
      close: () => {
        if (closed) return;
        closed = true;
        this.serialOut.off('data', onData);
        for (const fn of exitFns) fn({ exitCode: 0, reason: 'closed' });
      },
    };
  }

  // ---- through the agent ------------------------------------------------------------------------

  /**
   * A login shell through the agent. The handle is answered as soon as the agent is up; the shell
   * itself (an SSH session, a PTY and a login shell on an emulated CPU: seconds on a busy host, more
   * right after a boot) opens behind it, so a shell open stays within the spec's 5 s per call.
   */
  async openShell(size: PtySize, env: Record<string, string> = {}): Promise<PtyHandle> {
    const ssh = await this.untilAgent();
    return lazyPty(ssh.openShell(size, env));
  }

  async sampleMetrics(): Promise<MetricsSample> {
    if (this.agent !== 'ready') throw new DriverError('board.booting', 'The board is not answering yet');
    return this.ssh!.sampleMetrics();
  }

  /** A plugin (a host file of the lab's plugins directory) runs inside the board: a script, as riscv64 needs. */
  async callPlugin(topic: string, data: string, nodeId: string): Promise<string> {
    if (!PLUGIN_NAME.test(topic)) throw new DriverError('plugin.unknown', 'Unknown plugin');
    if (!this.init.pluginsDir) throw new DriverError('plugin.unknown', `No plugin named ${topic}`);
    const file = path.join(this.init.pluginsDir, topic);
    let body: Buffer;
    try {
      const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      try {
        const st = fs.fstatSync(fd);
        if (!st.isFile() || !(st.mode & 0o111)) throw new Error('not executable');
        if (st.size > MAX_PLUGIN_BYTES)
          throw new DriverError('plugin.failed', 'The plugin is too large for a riscv64 board');
        body = fs.readFileSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    } catch (err) {
      if (err instanceof DriverError) throw err;
      throw new DriverError('plugin.unknown', `No plugin named ${topic}`);
    }
    const ssh = await this.untilAgent(this.o.timeoutMs);
    const target = `/run/bianbu-plugins/${topic}`;
    const cmd =
      `umask 077 && mkdir -p /run/bianbu-plugins && printf %s ${shQuote(body.toString('base64'))} | base64 -d > ${shQuote(target)} && ` +
      `chmod 700 ${shQuote(target)} && exec ${shQuote(target)} ${shQuote(topic)} ${shQuote(data)} ${shQuote(nodeId)}`;
    const r = await ssh.exec(cmd, this.o.timeoutMs * 2);
    if (r.code !== 0)
      throw new DriverError('plugin.failed', r.stderr.trim().slice(-500) || `exit code ${r.code}`);
    return r.stdout;
  }

  /**
   * The board's own screen (machine.ts displayArgs, screen.ts): QEMU's VNC server, reached through a
   * relay per viewer. It answers from power-on, so a viewer sees the boot reach the console login; a
   * machine that is off (a flash or restore between its power-off and power-on) says `board.booting`.
   */
  async connectVnc(): Promise<Duplex> {
    if (this.stopped || !this.machine) throw new DriverError('board.not_running', 'The board is stopped');
    return this.machine.connectScreen();
  }

  /**
   * A port of the board, reached through its agent (an SSH direct-tcpip channel to 127.0.0.1:port
   * inside the guest), never through the network: the board's stack forwards no port in. Callers (the
   * code window, the desktop) check the caller holds the board first.
   */
  async connectPort(port: number): Promise<Duplex> {
    const ssh = await this.untilAgent();
    return ssh.connectPort(port);
  }

  // ---- network (network.ts, board-network.ts) -------------------------------------------------

  /** The policy the board starts with; a change while it runs is applied live. */
  private networkPolicy: NetworkPolicy = { egress: Egress.none, allow: [] };

  /** What the board's network does now. */
  networkStatus(): { policy: NetworkPolicy; state: NetworkState; reason: string | null } {
    return this.net?.status() ?? { policy: this.networkPolicy, state: NetworkState.stopped, reason: null };
  }

  /** A new policy: its rules replace the board's at once (no reboot); kept for the next start too. */
  async setNetworkPolicy(policy: NetworkPolicy): Promise<void> {
    this.networkPolicy = policy;
    if (this.net && !this.stopped) await this.net.setPolicy(policy);
    this.setFacts({ network: networkFact(this.networkStatus()) });
  }

  // ---- power ------------------------------------------------------------------------------------

  /** QMP `system_reset`: works on a guest that hangs or panicked; a machine that is off is started. */
  async powerReset(): Promise<void> {
    if (!this.machine) throw new DriverError('board.not_running', 'The board is stopped');
    // A NIC whose stack ended needs a fresh socket pair, which only a new QEMU process takes.
    const nicLost = this.net?.status().state === NetworkState.off && this.net.canRun;
    if (this.machine.running && nicLost) await this.machine.powerOff();
    // Calls after this one find the board booting (not its old agent, whose connection the reset cuts
    // whenever QEMU's RESET event lands): `bianbu reset` waits on that for the board to be back.
    this.setAgent('booting');
    this.ssh?.dropConnections();
    if (this.machine.running) await this.machine.reset();
    else await this.machine.powerOn();
  }

  async powerOff(): Promise<void> {
    await this.machine?.powerOff();
  }

  async powerOn(): Promise<void> {
    await this.machine?.powerOn();
  }

  // ---- disk -------------------------------------------------------------------------------------

  private async writeDefaultImage(
    onProgress?: (p: FlashProgress) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    let img = this.init.images.find(this.o.image);
    if (!img) {
      this.init.log?.('waiting for the board image to be built', { image: this.o.image });
      await this.init.images.ensure();
      img = this.init.images.find(this.o.image);
    }
    if (!img) throw new DriverError('board.image_missing', `The board image ${this.o.image} is not built`);
    await this.replaceDisk(
      img.file,
      onProgress ?? (() => {}),
      { signal, format: 'img.zst', label: this.o.image, tag: this.o.image },
      img.facts.rawBytes,
      true,
    );
  }

  /**
   * Writes `image` to a new file beside the disk, reads it back against the written hash, and only then,
   * the machine off, renames it over the disk. A failure or cancel leaves the old disk as it was.
   */
  private async replaceDisk(
    image: string,
    onProgress: (p: FlashProgress) => void,
    opts: FlashOptions,
    expectBytes?: number,
    dropSnapshots = false,
  ): Promise<void> {
    const next = `${this.diskFile}.next`;
    fs.rmSync(next, { force: true });
    try {
      onProgress({
        phase: 'writing',
        percent: 0,
        log: `writing ${opts.label ?? path.basename(image)} to the board's disk`,
      });
      const written = await writeRawImage(image, next, {
        maxBytes: MAX_DISK_BYTES,
        signal: opts.signal,
        onProgress: (done) =>
          onProgress({
            phase: 'writing',
            percent: expectBytes ? Math.min(99, Math.floor((done / expectBytes) * 100)) : 0,
            bytesDone: done,
            bytesTotal: expectBytes,
          }),
      });
      onProgress({ phase: 'writing', percent: 100, bytesDone: written.bytes, bytesTotal: written.bytes });
      onProgress({ phase: 'verifying', percent: 0, log: `sha256 ${written.sha256}` });
      await verifyRawImage(next, written, {
        signal: opts.signal,
        onProgress: (done) =>
          onProgress({
            phase: 'verifying',
            percent: Math.min(99, Math.floor((done / written.bytes) * 100)),
            bytesDone: done,
            bytesTotal: written.bytes,
          }),
      });
      onProgress({ phase: 'verifying', percent: 100, bytesDone: written.bytes, bytesTotal: written.bytes });
      if (opts.signal?.aborted) throw new DriverError('flash.cancelled', 'Cancelled');
      await this.disk.exclusive(async () => {
        // Snapshots of the disk a flash replaces stay restorable: its pair becomes an older epoch.
        const keep = !dropSnapshots && (await this.disk.snapshots()).length > 0;
        // The new overlay first, then the base's rename commits (snapshot-disk.ts, prepare()).
        await this.disk.createOverlay(`${this.disk.overlay}.next`, written.bytes);
        const wasOn = this.machine?.running ?? false;
        await this.machine?.powerOff();
        this.disk.commitFlash(keep);
        // The lease's end (the default image back): every older epoch goes too.
        if (dropSnapshots) this.disk.dropEpochs();
        this.afterSwap(image, opts);
        if (wasOn) await this.machine?.powerOn();
      });
    } catch (err) {
      // Before the commit (the base's rename) both new files go; after it, prepare() finishes the swap.
      if (fs.existsSync(next)) fs.rmSync(`${this.disk.overlay}.next`, { force: true });
      fs.rmSync(next, { force: true });
      if (err instanceof RawImageError) throw new DriverError(err.key, err.message);
      throw err;
    }
  }

  private afterSwap(image: string, opts: FlashOptions): void {
    // Which image the disk holds now, for the catalogue (what the label names, or the file's name).
    const tag = opts.tag ?? opts.label ?? path.basename(image);
    fs.writeFileSync(`${this.diskFile}.image`, `${tag}\n`, { mode: 0o600 });
    this.setFacts({ image: tag });
  }

  // ---- snapshots (snapshot-disk.ts; docs/riscv-snapshots.md) -----------------------------------

  readonly snapshots: BoardSnapshots = {
    list: async () => this.disk.everySnapshot(await this.currentSnapshots()),
    save: (name) =>
      this.disk.exclusive(async () => {
        if (
          (await this.disk.allSnapshots()).some((x) => x.name === name) ||
          (await this.disk.epochOf(name)) !== null
        )
          throw new DriverError('snapshot.name_taken', `The board has a snapshot named ${name}`);
        if (!this.machine?.running) return this.disk.create(name);
        await this.guestSync();
        await this.machine.query('blockdev-snapshot-internal-sync', { device: DISK_NODE, name }, 60_000);
      }),
    restore: (name) =>
      this.disk.exclusive(async () => {
        const epoch = await this.disk.epochOf(name);
        if (epoch === null) throw new DriverError('snapshot.not_found', `No snapshot named ${name}`);
        await this.machine?.powerOff();
        try {
          if (epoch === this.disk.currentEpoch()) await this.disk.restore(name);
          else await this.disk.restoreFrom(epoch, name);
        } finally {
          // The board boots again either way: into the snapshot, or (a failure) as it was.
          this.readImageTag();
          if (!this.stopped) await this.machine?.powerOn();
        }
      }),
    remove: (name) =>
      this.disk.exclusive(async () => {
        const epoch = await this.disk.epochOf(name);
        if (epoch === null) throw new DriverError('snapshot.not_found', `No snapshot named ${name}`);
        if (epoch !== this.disk.currentEpoch()) return this.disk.removeIn(epoch, name);
        if (this.machine?.running)
          await this.machine.query(
            'blockdev-snapshot-delete-internal-sync',
            { device: DISK_NODE, name },
            60_000,
          );
        else await this.disk.remove(name);
      }),
    exportRaw: (name, out) =>
      this.disk.exclusive(async () => {
        const epoch = await this.disk.epochOf(name);
        if (epoch === null) throw new DriverError('snapshot.not_found', `No snapshot named ${name}`);
        await this.disk.exportRaw(
          name,
          out,
          epoch === this.disk.currentEpoch() ? this.disk.dir : this.disk.epochDir(epoch),
        );
      }),
    chargedBytes: async () => this.disk.chargedBytes(await this.currentSnapshots()),
    diskBytes: async () => this.disk.allocatedBytes(),
  };

  /** The current epoch's user snapshots: from QEMU while it runs (it writes the table), else the file. */
  private async currentSnapshots(): Promise<{ name: string; createdAt: Date }[]> {
    if (!this.machine?.running) return this.disk.snapshots();
    const nodes = await this.machine.query<
      { 'node-name'?: string; image?: { snapshots?: { name: string; 'date-sec': number }[] } }[]
    >('query-named-block-nodes', { flat: true });
    const node = nodes.find((n) => n['node-name'] === DISK_NODE);
    return (node?.image?.snapshots ?? [])
      .filter((x) => !x.name.startsWith('_bianbu_'))
      .map((x) => ({ name: x.name, createdAt: new Date(x['date-sec'] * 1000) }));
  }

  /** Which image the disk holds now (an older epoch's after its restore), for the catalogue. */
  private readImageTag(): void {
    try {
      const tag = fs.readFileSync(`${this.diskFile}.image`, 'utf8').trim();
      if (tag) this.setFacts({ image: tag });
    } catch {}
  }

  /** Best effort: the guest writes its page cache out before a snapshot (a crash-consistent disk else). */
  private async guestSync(): Promise<void> {
    if (this.agent !== 'ready' || !this.ssh) return;
    await withTimeout(this.ssh.exec('sync', 15_000), 15_000, 'guest sync').catch(() => {});
  }

  async flash(image: string, onProgress: (p: FlashProgress) => void, opts: FlashOptions = {}): Promise<void> {
    if (opts.format && imageKind(opts.format) !== 'disk')
      throw new DriverError('flash.image_invalid', 'A riscv64 board is flashed with a raw disk image');
    onProgress({ phase: 'preparing', percent: 100 });
    await this.replaceDisk(image, onProgress, opts);
    if (!this.machine?.running) await this.machine?.powerOn();
    await this.waitBooted(onProgress);
  }

  /** Booting: until the agent answers, or the serial console shows a login prompt (an image without one). */
  private async waitBooted(onProgress: (p: FlashProgress) => void): Promise<void> {
    const begun = Date.now();
    onProgress({ phase: 'booting', percent: 0, log: "OpenSBI, U-Boot, the image's kernel" });
    while (Date.now() - begun < BOOT_WAIT_MS) {
      if (this.agent === 'ready' || this.agent === 'absent') break;
      if (this.loginSeenAt && Date.now() - this.loginSeenAt > AGENT_GRACE_MS) break;
      await sleep(500);
      onProgress({
        phase: 'booting',
        percent: Math.min(95, Math.floor(((Date.now() - begun) / 60_000) * 100)),
      });
    }
    if (this.agent !== 'ready' && !this.loginSeenAt)
      throw new DriverError('driver.timeout', 'The board did not boot the new image in time');
    onProgress({
      phase: 'booting',
      percent: 100,
      log: this.facts.kernel ? `running Linux ${this.facts.kernel}` : undefined,
    });
  }

  /** Lease expiry: the board's default image back on its disk, then booted. */
  async restoreDefault(): Promise<void> {
    await this.writeDefaultImage();
    if (!this.machine?.running) await this.machine?.powerOn();
  }
}

/**
 * A PtyHandle for a PTY still opening: keystrokes, the last size and flow control wait for it, its
 * output and exit go to whoever listens. A PTY that fails to open ends the handle with the reason.
 */
export function lazyPty(opening: Promise<PtyHandle>): PtyHandle {
  let pty: PtyHandle | null = null;
  let ended = false;
  let closed = false;
  let paused = false;
  let size: PtySize | null = null;
  const input: Array<string | Buffer> = [];
  const dataFns = new Set<(c: Buffer) => void>();
  const exitFns = new Set<(i: { exitCode: number | null; reason?: string }) => void>();
  const end = (info: { exitCode: number | null; reason?: string }) => {
    if (ended) return;
    ended = true;
    for (const fn of exitFns) fn(info);
  };
  opening.then(
    (p) => {
      if (closed) {
        p.close();
        return;
      }
      pty = p;
      p.onData((c) => {
        for (const fn of dataFns) fn(c);
      });
      p.onExit(end);
      if (size) p.resize(size);
      for (const d of input.splice(0)) p.write(d);
      if (paused) p.pause();
    },
    (err: Error) => end({ exitCode: null, reason: err.message }),
  );
  return {
    write: (d) => {
      if (pty) pty.write(d);
      else if (!ended) input.push(d);
    },
    inputBacklog: () => (pty ? (pty.inputBacklog?.() ?? 0) : input.reduce((n, d) => n + d.length, 0)),
    resize: (s) => {
      size = s;
      pty?.resize(s);
    },
    onData: (fn) => {
      dataFns.add(fn);
      return () => dataFns.delete(fn);
    },
    onExit: (fn) => {
      exitFns.add(fn);
      return () => exitFns.delete(fn);
    },
    pause: () => {
      paused = true;
      pty?.pause();
    },
    resume: () => {
      paused = false;
      pty?.resume();
    },
    close: () => {
      closed = true;
      pty?.close();
    },
  };
}
