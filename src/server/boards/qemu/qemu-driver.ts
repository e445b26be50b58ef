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
// Beside it: the serial console's ring (serial-console.ts), images onto the disk (disk-writer.ts),
// snapshots (snapshots.ts), plugins (plugin.ts), facts (facts.ts) and the shell's handle (lazy-pty.ts).
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
import { SshDriver } from '../ssh/ssh-driver.ts';
import { sleep, withTimeout } from '../util.ts';
import type { BoardImages } from './board-images.ts';
import { DiskWriter } from './disk-writer.ts';
import { type BoardFacts, cleanFact, networkFact } from './facts.ts';
import { type Firewall, hostFirewall } from './firewall.ts';
import { lazyPty } from './lazy-pty.ts';
import { Machine } from './machine.ts';
import { BoardNetwork } from './network.ts';
import { readPlugin, runPlugin } from './plugin.ts';
import { SerialConsole } from './serial-console.ts';
import { BoardDisk } from './snapshot-disk.ts';
import { qemuSnapshots } from './snapshots.ts';

// The lab reads a board's facts as this driver's.
export type { BoardFacts } from './facts.ts';

/** How long a flash waits for the new image to boot. */
const BOOT_WAIT_MS = 300_000;
/**
 * How long a user's call that needs the agent waits for it: within the spec's 5 s per call, then
 * `board.booting` (the console and the CLI try again).
 */
const CALL_AGENT_WAIT_MS = 3500;
/** How often keepOn looks at a machine that should run. */
const KEEP_ON_LOOK_MS = 5000;
/** The longest wait between two starts of a machine that keeps failing to start. */
const KEEP_ON_MAX_WAIT_MS = 60_000;
/** How long after the serial console's `login:` an agent that never answered counts as absent. */
const AGENT_GRACE_MS = 45_000;
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
  private readonly serial = new SerialConsole();
  private serialText = '';
  private agent: AgentState = 'booting';
  private readonly agentEvents = new EventEmitter();
  private loginSeenAt = 0;
  private boot = 0;
  private facts: BoardFacts = {};
  private stopped = false;
  /** Whether the machine should run: from start until the user's power-off or the board's stop. */
  private wantOn = false;
  private net: BoardNetwork | null = null;
  private readonly diskFile: string;
  /** The disk's files: the raw base, the qcow2 overlay the machine writes, its snapshots. */
  private readonly disk: BoardDisk;
  /** Images onto the disk: flashes, the default image. */
  private readonly writer: DiskWriter;
  readonly snapshots: BoardSnapshots;

  constructor(private readonly init: QemuBoardInit) {
    this.boardId = init.boardId;
    this.o = init.options;
    if (init.network) this.networkPolicy = init.network;
    this.diskFile = path.join(init.boardDir, 'disk.img');
    this.disk = new BoardDisk(init.boardDir, init.log);
    this.writer = new DiskWriter({
      diskFile: this.diskFile,
      disk: this.disk,
      images: init.images,
      image: this.o.image,
      machine: () => this.machine,
      setFacts: (f) => this.setFacts(f),
      log: init.log,
    });
    this.snapshots = qemuSnapshots({
      disk: this.disk,
      machine: () => this.machine,
      stopped: () => this.stopped,
      guestSync: () => this.guestSync(),
      readImageTag: () => this.writer.readImageTag(),
    });
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
  get state(): { agent: AgentState; boots: number; facts: BoardFacts; running: boolean; pid: number | null } {
    return {
      agent: this.agent,
      boots: this.boot,
      facts: { ...this.facts },
      running: this.machine?.running ?? false,
      pid: (this.machine?.running && this.machine.pid) || null,
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
    this.wantOn = true;
    void this.watchAgent();
    try {
      await this.bootFromDisk();
    } finally {
      // A start that failed is tried again, as is a machine that ends while it should run.
      void this.keepOn();
    }
  }

  /**
   * What a killed service left on the disk finished (a flash half swapped, a restore half done; a disk
   * of an earlier version gets its overlay), the default image written on a first start (or a disk
   * lost), then the machine on. Each step under the disk's lock, as flashes and restores take it.
   */
  private async bootFromDisk(): Promise<void> {
    await this.disk.exclusive(async () => {
      await this.disk.prepare();
      await this.disk.recover();
    });
    if (!fs.existsSync(this.diskFile)) await this.writer.writeDefaultImage();
    else this.writer.readImageTag();
    await this.disk.exclusive(async () => {
      if (this.wantOn && !this.stopped) await this.machine?.powerOn();
    });
  }

  /**
   * While the board lives: a machine that should run and has been off for two looks in a row (its
   * start failed — a monitor that did not answer in time on a starved host, say — or QEMU ended on
   * its own) is booted again, the waits after each failure growing to a minute. A flash or restore
   * turns it off on purpose under the disk's lock, which bootFromDisk waits for; the user's power-off
   * is not undone.
   */
  private async keepOn(): Promise<void> {
    let offSeen = false;
    let wait = KEEP_ON_LOOK_MS;
    while (!this.stopped) {
      await sleep(wait);
      const off = !this.stopped && this.wantOn && this.machine !== null && !this.machine.running;
      if (!off || !offSeen) {
        offSeen = off;
        wait = KEEP_ON_LOOK_MS;
        continue;
      }
      try {
        await this.bootFromDisk();
        this.init.log?.('the board machine was off while it should run: started again');
        offSeen = false;
        wait = KEEP_ON_LOOK_MS;
      } catch (err) {
        wait = Math.min(Math.max(wait * 2, 2 * KEEP_ON_LOOK_MS), KEEP_ON_MAX_WAIT_MS);
        this.init.log?.('the board machine did not start; tried again later', {
          err: (err as Error).message,
          retryInMs: wait,
        });
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wantOn = false;
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
    this.serial.push(d);
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
    return this.serial.open((d) => machine.writeSerial(d));
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
    const body = readPlugin(this.init.pluginsDir, topic);
    const ssh = await this.untilAgent(this.o.timeoutMs);
    return runPlugin(ssh, body, { topic, data, nodeId, timeoutMs: this.o.timeoutMs });
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
    this.wantOn = true;
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

  /** The user's power-off: the machine stays off until a power-on or reset. */
  async powerOff(): Promise<void> {
    this.wantOn = false;
    await this.machine?.powerOff();
  }

  async powerOn(): Promise<void> {
    this.wantOn = true;
    await this.machine?.powerOn();
  }

  // ---- disk, flash, snapshots (disk-writer.ts, snapshots.ts) -----------------------------------

  /** Best effort: the guest writes its page cache out before a snapshot (a crash-consistent disk else). */
  private async guestSync(): Promise<void> {
    if (this.agent !== 'ready' || !this.ssh) return;
    await withTimeout(this.ssh.exec('sync', 15_000), 15_000, 'guest sync').catch(() => {});
  }

  async flash(image: string, onProgress: (p: FlashProgress) => void, opts: FlashOptions = {}): Promise<void> {
    if (opts.format && imageKind(opts.format) !== 'disk')
      throw new DriverError('flash.image_invalid', 'A riscv64 board is flashed with a raw disk image');
    onProgress({ phase: 'preparing', percent: 100 });
    await this.writer.replaceDisk(image, onProgress, opts);
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
    await this.writer.writeDefaultImage();
    if (!this.machine?.running) await this.machine?.powerOn();
  }
}
