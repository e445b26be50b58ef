// One riscv64 QEMU `virt` machine: the process, its monitor (QMP), its serial line and the socket of
// the service's channel into it. Lifecycle: `powerOn()` spawns qemu-system-riscv64 in the foreground
// (QEMU's `-sandbox ... spawn=deny` excludes `-daemonize`) and connects the serial line before the
// machine runs (the serial socket is created with wait=on, so not a byte of OpenSBI's banner is lost),
// then the monitor; `reset()` is QMP `system_reset`; `powerOff()` ends the process (quit, then a kill).
// A machine that dies on its own (a guest cannot make `virt` power off: it has no power button, but a
// crash of QEMU can) emits 'exit'.
//
// Confinement: the process runs as the board's own host uid (never root), with no capabilities and
// no_new_privs, in bubblewrap's new user, network, pid, ipc and uts namespaces (no network at all: the
// guest's NIC is a socket QEMU inherits, whose other end is the board's user-mode stack outside,
// network.ts; the service reaches the guest over virtio-serial), seeing of the host only /usr
// read-only and the board's run directory (its sockets and its disk), inside the board's cgroups,
// and QEMU's own seccomp filter (`-sandbox on`) on top.
import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { DriverError } from '../driver.ts';
import { withTimeout } from '../util.ts';
import type { NicAttachment, NicBackend } from './network.ts';
import { Qmp } from './qmp.ts';
import { usrOnlyRoot } from './raw-image.ts';
import { connectScreen, openNetns, SCREEN_VNC } from './screen.ts';

export const QEMU_BINARY = '/usr/bin/qemu-system-riscv64';
/** Debian's opensbi package: the generic platform's fw_dynamic (M-mode firmware). */
export const OPENSBI_FIRMWARE = '/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin';
/** Debian's u-boot-qemu package: U-Boot for `virt` in S-mode, OpenSBI's payload. */
export const UBOOT_SMODE = '/usr/lib/u-boot/qemu-riscv64_smode/u-boot.bin';
/** The virtio-serial port the board's agent (sshd -i) listens on, by name. */
export const AGENT_PORT_NAME = 'org.bianbu.agent';
/** The block node of the board's disk (its qcow2 overlay): internal snapshots are taken on it. */
export const DISK_NODE = 'disk0';
/** How long a starting machine's monitor may take to connect before the start counts as failed. */
const QMP_CONNECT_MS = 60_000;

export interface MachineSpec {
  cores: number;
  memoryMb: number;
  /** Host uid (and gid) the machine runs as. */
  uid: number;
  /** The board's run directory: the service's listening sockets; root's, mode 0711. */
  runDir: string;
  /** The disk's base: the raw image a flash wrote, in the service's own directory (read-only). */
  diskFile: string;
  /** The disk QEMU writes: a qcow2 overlay over `diskFile` (snapshot-disk.ts), a descriptor too. */
  overlayFile: string;
  /** Shell text that joins the board's cgroups (BoardCgroups.joinScript), or ''. */
  cgroupJoin: string;
  /** Prefix of the process's argv that drops to `uid` and sandboxes it; [] runs QEMU as is (tests). */
  sandbox: boolean;
  /** The NIC's backend (network.ts), asked for a fresh one at each power-on; none: no NIC. */
  nic?: NicBackend | null;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
}

/** Which host programs a QEMU board needs, and the one line that installs them. */
export function qemuHostMissing(): string[] {
  const need: [string, string][] = [
    [QEMU_BINARY, 'qemu-system-misc'],
    [OPENSBI_FIRMWARE, 'opensbi'],
    [UBOOT_SMODE, 'u-boot-qemu'],
    ['/usr/bin/bwrap', 'bubblewrap'],
    ['/usr/bin/setpriv', 'util-linux'],
  ];
  return need.filter(([f]) => !fs.existsSync(f)).map(([, pkg]) => pkg);
}

/**
 * QEMU's arguments. Every socket is the service's: QEMU connects to listeners the service made in a
 * directory QEMU cannot write (so a compromised QEMU cannot plant links or sockets for the service to
 * follow), and `reconnect=1` brings a dropped one back. The disk is a descriptor the service opened
 * (fds 3 and 4, an fdset): QEMU never opens a host path of it. The machine's parts (disk, network,
 * display) each add their arguments in their own function below.
 */
export function qemuArgs(
  spec: Pick<MachineSpec, 'cores' | 'memoryMb'> & { nicFd?: number | null },
  dir: string,
): string[] {
  return [
    '-machine',
    'virt',
    '-smp',
    String(spec.cores),
    '-m',
    `${spec.memoryMb}M`,
    // A bounded translation cache: QEMU's default for TCG is 1 GiB of host memory per machine.
    '-accel',
    'tcg,tb-size=64',
    '-nodefaults',
    '-no-user-config',
    '-display',
    'none',
    '-bios',
    OPENSBI_FIRMWARE,
    '-kernel',
    UBOOT_SMODE,
    ...diskArgs(),
    ...netArgs(spec.nicFd ?? null),
    ...displayArgs(),
    '-device',
    'virtio-rng-device',
    '-chardev',
    `socket,id=ser0,path=${dir}/serial.sock,reconnect=1`,
    '-serial',
    'chardev:ser0',
    '-device',
    'virtio-serial-device',
    '-chardev',
    `socket,id=agent,path=${dir}/agent.sock,reconnect=1`,
    '-device',
    `virtserialport,chardev=agent,name=${AGENT_PORT_NAME}`,
    '-chardev',
    `socket,id=mon,path=${dir}/qmp.sock,reconnect=1`,
    '-mon',
    'chardev=mon,mode=control',
    '-sandbox',
    'on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny',
  ];
}

/**
 * The board's disk: the qcow2 overlay (fds 3 read-write and 4 read-only, fdset 1) over the raw base
 * (fd 5 read-only, fdset 2). The backing is a node named here, never the file name in the overlay's
 * header, so QEMU opens no host path; the overlay's node `disk0` is what snapshots are taken on.
 */
function diskArgs(): string[] {
  return [
    // QEMU takes from a set a descriptor of the access mode it asks for.
    '-add-fd',
    'fd=3,set=1,opaque=overlay-rw',
    '-add-fd',
    'fd=4,set=1,opaque=overlay-ro',
    '-add-fd',
    'fd=5,set=2,opaque=base-ro',
    '-blockdev',
    'driver=file,node-name=base-file,filename=/dev/fdset/2,read-only=on',
    '-blockdev',
    'driver=raw,node-name=base,file=base-file,read-only=on',
    '-blockdev',
    'driver=file,node-name=disk-file,filename=/dev/fdset/1',
    '-blockdev',
    `driver=qcow2,node-name=${DISK_NODE},file=disk-file,backing=base`,
    '-device',
    `virtio-blk-device,drive=${DISK_NODE}`,
  ];
}

/**
 * The board's NIC: virtio-net whose frames travel on an inherited stream socket (QEMU's length-prefixed
 * stream protocol, the one passt speaks), descriptor `fd`. Null: the machine has no NIC at all.
 */
function netArgs(fd: number | null): string[] {
  if (fd === null) return [];
  return [
    '-netdev',
    `stream,id=net0,addr.type=fd,addr.str=${fd}`,
    '-device',
    'virtio-net-device,netdev=net0',
  ];
}

/** The descriptor QEMU inherits its NIC's socket as: after stdio and the disk's 3, 4 and 5. */
export const NIC_FD = 6;

/**
 * The board's screen: a virtio GPU (the guest's virtio-gpu DRM driver binds it and fbcon shows tty1 on
 * it), a keyboard and a tablet for what viewers type and point. On virt's PCIe bus, not its MMIO bus as
 * the disk: virt's MMIO transports are legacy virtio, and Linux's virtio-gpu and virtio-input drivers
 * refuse a legacy device (the probe fails, status FAILED, no /dev/dri: seen with the trixie kernel).
 * QEMU's VNC server serves the screen on 127.0.0.1:5900 of the machine's own network namespace
 * (screen.ts: how the service gets there): no password, since nothing else can reach it;
 * `share=force-shared` so that no viewer can push the others off; `lossy=on` lets a viewer's quality
 * level (noVNC's, 0-9) choose JPEG for changing regions of tight updates.
 */
function displayArgs(): string[] {
  return [
    '-device',
    'virtio-gpu-pci',
    '-device',
    'virtio-keyboard-pci',
    '-device',
    'virtio-tablet-pci',
    '-vnc',
    VNC_OPTIONS,
  ];
}

const VNC_OPTIONS = `${SCREEN_VNC},share=force-shared,lossy=on`;

/** The whole argv: cgroups joined, the board's uid, no capabilities, bubblewrap's namespaces, QEMU. */
export function machineArgv(spec: MachineSpec, nicFd: number | null = null): string[] {
  const inside = '/run/board';
  const qemu = [QEMU_BINARY, ...qemuArgs({ ...spec, nicFd }, spec.sandbox ? inside : spec.runDir)];
  // Unsandboxed (tests of the argv), the screen would listen in the host's network: it gets none.
  if (!spec.sandbox) return qemu.map((a) => (a === VNC_OPTIONS ? 'none' : a));
  const id = String(spec.uid);
  return [
    '/bin/sh',
    '-c',
    `cd / || exit 125; ${spec.cgroupJoin}exec "$@"`,
    'bianbu-qemu',
    '/usr/bin/nice',
    '-n',
    '5',
    '/usr/bin/setpriv',
    `--reuid=${id}`,
    `--regid=${id}`,
    '--clear-groups',
    '--bounding-set=-all',
    '--inh-caps=-all',
    '--no-new-privs',
    '--',
    '/usr/bin/bwrap',
    '--unshare-user',
    '--unshare-net',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    ...usrOnlyRoot(),
    '--tmpfs',
    '/tmp',
    '--ro-bind',
    spec.runDir,
    inside,
    '--chdir',
    '/',
    '--',
    ...qemu,
  ];
}

/**
 * A unix socket the service listens on for QEMU's one connection (QEMU is the client). `next()` answers
 * the connection QEMU holds now, or waits for its next one (QEMU reconnects within a second).
 */
export class Listener {
  private readonly server: net.Server;
  private current: net.Socket | null = null;
  private waiters: Array<(s: net.Socket) => void> = [];
  private handedOut = false;

  constructor(
    readonly file: string,
    uid: number,
    private readonly onSocket?: (s: net.Socket) => void,
  ) {
    fs.rmSync(file, { force: true });
    this.server = net.createServer((s) => this.accept(s));
    this.server.listen(file);
    this.uid = uid;
  }

  private readonly uid: number;

  async ready(): Promise<void> {
    if (!this.server.listening)
      await new Promise<void>((r, j) => this.server.once('listening', r).once('error', j));
    // Only the board's uid (and root) may connect: the directory is root's, the socket the board's.
    fs.chownSync(this.file, this.uid, this.uid);
    fs.chmodSync(this.file, 0o600);
  }

  private accept(s: net.Socket): void {
    s.on('error', () => {});
    if (this.current && !this.current.destroyed) {
      s.destroy();
      return;
    }
    this.current = s;
    this.handedOut = false;
    s.once('close', () => {
      if (this.current === s) this.current = null;
    });
    this.onSocket?.(s);
    const w = this.waiters.shift();
    if (w) {
      this.handedOut = true;
      w(s);
    }
  }

  /** The connection QEMU holds, once: a second call drops it and waits for QEMU's next one. */
  next(timeoutMs: number): Promise<net.Socket> {
    if (this.current && !this.current.destroyed && !this.handedOut) {
      this.handedOut = true;
      return Promise.resolve(this.current);
    }
    this.current?.destroy();
    const got = new Promise<net.Socket>((resolve) => this.waiters.push(resolve));
    return withTimeout(got, timeoutMs, 'board channel');
  }

  close(): void {
    this.current?.destroy();
    this.server.close();
    fs.rmSync(this.file, { force: true });
  }
}

export class Machine extends EventEmitter {
  private proc: ChildProcess | null = null;
  /** The start under way (powerOn). */
  private starting: Promise<void> | null = null;
  /** A handle on the running machine's network namespace, where its VNC server listens (screen.ts). */
  private netns: number | null = null;
  /** The screen's relays open now, one per viewer: ended with the machine. */
  private readonly screens = new Set<Duplex>();
  /** The last power-on found no sandbox to take the network namespace of: no screen until the next. */
  private screenless = false;
  private qmp: Qmp | null = null;
  private serial: net.Socket | null = null;
  private serialL: Listener | null = null;
  private qmpL: Listener | null = null;
  agent: Listener | null = null;
  private stderr = '';
  /** Power-ons and resets since the service started: each starts a new boot. */
  boots = 0;

  constructor(private readonly spec: MachineSpec) {
    super();
  }

  get running(): boolean {
    return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  private listen(): void {
    const dir = this.spec.runDir;
    this.serialL ??= new Listener(path.join(dir, 'serial.sock'), this.spec.uid, (s) => this.attachSerial(s));
    this.qmpL ??= new Listener(path.join(dir, 'qmp.sock'), this.spec.uid);
    this.agent ??= new Listener(path.join(dir, 'agent.sock'), this.spec.uid);
  }

  /**
   * Starts the machine; resolves once it runs with its serial line and monitor connected. One start at
   * a time: a caller while one is under way (a reset and the driver's keepOn at once) waits for it.
   */
  powerOn(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.starting ??= this.spawnMachine().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async spawnMachine(): Promise<void> {
    this.listen();
    await Promise.all([this.serialL!.ready(), this.qmpL!.ready(), this.agent!.ready()]);
    // A fresh NIC pair each power-on (the last one ended with the last QEMU).
    let nic: NicAttachment | null = null;
    try {
      nic = (await this.spec.nic?.open()) ?? null;
    } catch (err) {
      this.spec.log?.('the board starts without a NIC: its socket pair failed', {
        err: (err as Error).message,
      });
    }
    const argv = machineArgv(this.spec, nic ? NIC_FD : null);
    this.stderr = '';
    const fds: number[] = [];
    let proc: ChildProcess;
    let spawned = false;
    try {
      const flags = fs.constants.O_NOFOLLOW;
      fds.push(fs.openSync(this.spec.overlayFile, fs.constants.O_RDWR | flags));
      fds.push(fs.openSync(this.spec.overlayFile, fs.constants.O_RDONLY | flags));
      fds.push(fs.openSync(this.spec.diskFile, fs.constants.O_RDONLY | flags));
      // The NIC's socket follows the disk's descriptors: it is QEMU's NIC_FD.
      if (nic && 3 + fds.length !== NIC_FD) throw new Error('the NIC descriptor moved');
      proc = spawn(argv[0], argv.slice(1), {
        stdio: ['ignore', 'ignore', 'pipe', ...fds, ...(nic ? [nic.guestEnd] : [])],
        env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
      });
      spawned = true;
    } finally {
      for (const fd of fds) fs.closeSync(fd);
      // The stack starts on the other end in this same turn, and the service's copies close: no frame
      // between QEMU and the stack is ever read here.
      if (spawned) nic?.launch();
      else nic?.abandon();
    }
    this.proc = proc;
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (d: string) => {
      if (this.stderr.length < 8192) this.stderr += d;
    });
    proc.once('exit', (code, signal) => {
      void this.spec.nic?.close();
      if (this.proc === proc) {
        this.proc = null;
        this.dropScreens();
        this.qmp?.close();
        this.qmp = null;
        this.emit('exit', { code, signal, stderr: this.stderr.trim().slice(-500) });
      }
    });
    try {
      const exited = new Promise<never>((_, reject) =>
        proc.once('exit', () => reject(new Error('QEMU exited'))),
      );
      // Its monitor answers within a second here when idle; a starved host (a test run's two lanes,
      // a slower CI machine) can take far longer, and a miss leaves the board off until keepOn.
      const sock = await Promise.race([this.qmpL!.next(QMP_CONNECT_MS), exited]);
      this.qmp = await Promise.race([Qmp.over(sock), exited]);
      this.qmp.on('event', (e: { event?: string }) => {
        if (e.event === 'RESET') this.onBoot('reset');
      });
      if (this.spec.sandbox) {
        this.netns = openNetns(proc.pid!);
        this.screenless = this.netns === null;
        if (this.netns === null)
          this.spec.log?.('the board machine has no screen: its sandbox was not found');
      }
      this.onBoot('power-on');
    } catch (err) {
      proc.kill('SIGKILL');
      const why = this.stderr.trim().split('\n').slice(-3).join(' ');
      throw new DriverError(
        'driver.failed',
        `The machine did not start: ${(err as Error).message}${why ? ` (${why})` : ''}`,
      );
    }
  }

  private onBoot(reason: 'power-on' | 'reset'): void {
    this.boots++;
    this.emit('boot', reason);
  }

  private attachSerial(sock: net.Socket): void {
    this.serial = sock;
    sock.on('data', (d: Buffer) => this.emit('serial', d));
    sock.on('close', () => {
      if (this.serial === sock) this.serial = null;
    });
  }

  /** Keystrokes for the serial line (the board's ttyS0). */
  writeSerial(data: string | Buffer): void {
    this.serial?.write(data);
  }

  /** QMP `system_reset`: the machine restarts at OpenSBI, whatever the guest is doing. */
  async reset(): Promise<void> {
    if (!this.qmp) throw new DriverError('board.not_running', 'The machine is off');
    await this.qmp.execute('system_reset');
  }

  async query<T>(command: string, args?: Record<string, unknown>, timeoutMs?: number): Promise<T> {
    if (!this.qmp) throw new DriverError('board.not_running', 'The machine is off');
    return this.qmp.execute<T>(command, args, timeoutMs);
  }

  /** Ends the machine: QMP `quit`, then SIGKILL if it lingers. */
  async powerOff(): Promise<void> {
    const proc = this.proc;
    if (!proc || !this.running) return;
    const gone = new Promise<void>((r) => proc.once('exit', () => r()));
    await this.qmp?.execute('quit', undefined, 2000).catch(() => {});
    await withTimeout(gone, 3000, 'QEMU quit').catch(() => {
      proc.kill('SIGKILL');
      return withTimeout(gone, 5000, 'QEMU kill').catch(() => {});
    });
  }

  /**
   * A viewer's stream to the machine's screen (QEMU's VNC server, RFB), through a relay of its own that
   * ends when the viewer or the machine does.
   */
  async connectScreen(): Promise<Duplex> {
    if (this.screenless || !this.spec.sandbox)
      throw new DriverError('capability.unsupported', 'This machine has no screen');
    // Off, or still starting (its namespace is taken once the monitor answers): soon.
    if (!this.running || this.netns === null)
      throw new DriverError('board.booting', 'The machine is not running yet');
    const s = await connectScreen(this.netns);
    if (!this.running) {
      s.destroy();
      throw new DriverError('board.booting', 'The machine is not running yet');
    }
    this.screens.add(s);
    s.once('close', () => this.screens.delete(s));
    return s;
  }

  private dropScreens(): void {
    if (this.netns !== null) fs.closeSync(this.netns);
    this.netns = null;
    for (const s of this.screens) s.destroy();
    this.screens.clear();
  }

  /** Powers off and removes the listeners. */
  async close(): Promise<void> {
    await this.powerOff();
    for (const l of [this.serialL, this.qmpL, this.agent]) l?.close();
    this.serialL = this.qmpL = this.agent = null;
  }
}
