// The board driver interface. Everything above it (leases, shells, files, flashing, metrics) is
// driver-agnostic. A driver instance owns one board's connection; its lifecycle: `start()` brings
// the board up (boots a sandbox, opens an SSH pool), calls may then run, `stop()` ends every shell
// and stream it opened. Every call has a timeout; a capability the driver lacks throws
// DriverError('capability.unsupported'), never crashes.
import type { Readable, Writable } from 'node:stream';

export const Capability = {
  shell: 'shell',
  serial: 'serial',
  files: 'files',
  metrics: 'metrics',
  powerReset: 'powerReset',
  flash: 'flash',
  plugin: 'plugin',
  vnc: 'vnc',
  codeServer: 'codeServer',
  /** Named snapshots of the board's whole disk (QEMU boards: `BoardDriver.snapshots`). */
  snapshot: 'snapshot',
} as const;
export type Capability = (typeof Capability)[keyof typeof Capability];

export class DriverError extends Error {
  constructor(
    /** Stable key, e.g. `capability.unsupported`, `path.outside_root`, `driver.timeout`, `board.offline`. */
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

export interface PtySize {
  cols: number;
  rows: number;
}

/** A PTY on the board: a login shell or the board's serial console. */
export interface PtyHandle {
  /**
   * Host pid of the program the PTY runs, when it runs on this host (local boards): the shells
   * feature reads its descendants' job state from the host's /proc (src/server/shells/foreground.ts).
   */
  readonly hostPid?: number;
  write(data: string | Buffer): void;
  /** Bytes written that the program has not taken yet, held on this side (for backpressure). */
  inputBacklog?(): number;
  resize(size: PtySize): void;
  /** Output bytes as they come. Pausing/resuming applies backpressure to the program (flow control). */
  onData(listener: (chunk: Buffer) => void): () => void;
  onExit(listener: (info: { exitCode: number | null; reason?: string }) => void): () => void;
  pause(): void;
  resume(): void;
  close(): void;
  /**
   * Hands a view's keystrokes and output to the service's WebSocket relay (local boards only,
   * docs/native-data-plane.md). False when it cannot now: the service goes on serving the view.
   */
  serveRelay?(o: RelayServe): Promise<boolean>;
  /** The relay stops serving (the view ended); the service reads the terminal again. */
  unserveRelay?(): void;
}

/** What the relay needs to serve one view of a shell (see PtyHandle.serveRelay). */
export interface RelayServe {
  /** The service's WsRelay (src/server/boards/local/pty-host/relay.ts). */
  relay: unknown;
  /** The connection, as the relay knows it: the service's descriptor number of the client socket. */
  key: number;
  /** The session's next output offset (the ring's end), read once what was read is handed on. */
  offset(): number;
  /** The constant head of the view's MESSAGE frames; its input and acknowledgement destinations. */
  head: Buffer;
  input: string;
  ack: string;
  /**
   * Called once, at the handover (what the service read of the terminal handed on, before the relay
   * is asked): the caller flushes what it holds for the view and stops sending its output, and answers
   * the bytes it has written to and read from the relayed connection so far.
   */
  handover(): { written: number; read: number };
}

export interface FileEntry {
  name: string;
  /** Path inside the board, absolute from the board's root ("/home/user/a.txt"). */
  path: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  mtimeMs: number;
  /** Unix mode bits (permissions and type). */
  mode: number;
}

export interface MetricsSample {
  at: number;
  cpuPercent: number;
  memUsed: number;
  memTotal: number;
  diskUsed: number;
  diskTotal: number;
  netRx: number;
  netTx: number;
}

export interface FlashProgress {
  phase: 'preparing' | 'writing' | 'verifying' | 'booting' | 'done';
  /** 0..100 within the phase. */
  percent: number;
  /** Bytes of the phase done and in all, when the driver counts them. */
  bytesDone?: number;
  bytesTotal?: number;
  /** A line for the job's log. */
  log?: string;
}

/** Root file system archives (sandbox boards) and raw disk images (QEMU riscv64 boards). */
export type ImageFormat = 'tar' | 'tar.gz' | 'img' | 'img.gz' | 'img.xz' | 'img.zst';
/** Which boards an image format is for: a root file system or a whole disk. */
export type ImageKind = 'rootfs' | 'disk';
export function imageKind(format: ImageFormat): ImageKind {
  return format.startsWith('img') ? 'disk' : 'rootfs';
}

export interface FlashOptions {
  /** Aborts the flash while it has not swapped the new image in; the board keeps its old one. */
  signal?: AbortSignal;
  /**
   * The image's format as the catalogue measured it: a root file system archive ('tar', 'tar.gz') for
   * sandbox boards, a raw disk image ('img', 'img.gz', 'img.xz', 'img.zst') for QEMU riscv64 boards.
   */
  format?: ImageFormat;
  /** What the serial console names as the image being booted. */
  label?: string;
  /** The image's catalogue tag: what the board says it runs once flashed. */
  tag?: string;
}

/**
 * Snapshots of a board's whole disk (capability `snapshot`; src/server/boards/qemu/snapshot-disk.ts).
 * Names are checked by the caller (src/shared/snapshots.ts); the service's own names never reach here.
 */
export interface BoardSnapshots {
  /** The users' snapshots, with the epoch (flash) of the disk each belongs to. */
  list(): Promise<{ name: string; createdAt: Date; epoch?: number }[]>;
  /** Saves the disk as it is now (the guest asked to sync first); `snapshot.name_taken` if it exists. */
  save(name: string): Promise<void>;
  /** Powers the board off, puts its disk back to the snapshot, atomically, and boots it. */
  restore(name: string): Promise<void>;
  remove(name: string): Promise<void>;
  /** The snapshot as a raw disk image written to the host file `out`. */
  exportRaw(name: string, out: string): Promise<void>;
  /** Host bytes the board's snapshots keep allocated now (0 when it has none). */
  chargedBytes(): Promise<number>;
  /** Host bytes the board's writable disk takes now, snapshots or not (what a first save charges). */
  diskBytes(): Promise<number>;
}

export interface BoardDriver {
  readonly boardId: string;
  readonly kind: 'local' | 'ssh' | 'qemu';
  /** The image kind `flash` takes: a root file system archive or a raw disk image (ssh boards: either). */
  readonly flashes?: ImageKind;
  capabilities(): ReadonlySet<Capability>;

  start(): Promise<void>;
  stop(): Promise<void>;
  /** A cheap liveness check used by health probes; rejects on failure or timeout. */
  probe(timeoutMs?: number): Promise<void>;

  openShell(size: PtySize, env?: Record<string, string>): Promise<PtyHandle>;
  /** The board's serial console: boot messages across resets and flashes, and a login prompt. */
  openSerial(size: PtySize): Promise<PtyHandle>;

  files: {
    list(dir: string): Promise<FileEntry[]>;
    stat(path: string): Promise<FileEntry>;
    read(path: string, maxBytes?: number): Promise<Buffer>;
    /** Atomic: written to a temporary file beside the target, then renamed over it. */
    write(path: string, data: Buffer | string): Promise<void>;
    remove(path: string, opts?: { recursive?: boolean }): Promise<void>;
    mkdir(path: string): Promise<void>;
    rename(from: string, to: string): Promise<void>;
    /**
     * The target text of the symlink at `path` (its last component is not followed), as stored: never
     * resolved, so a link pointing outside the board answers its text without reaching the host file.
     * A path that is not a symlink fails with `path.invalid`.
     */
    readlink(path: string): Promise<string>;
    /** The file's bytes from `start` (default 0) to its end: a resumed download asks for the rest. */
    createReadStream(path: string, opts?: { start?: number }): Promise<Readable>;
    /** Writes to a temporary file; `commit()` renames it into place, `abort()` removes it. */
    createWriteStream(
      path: string,
    ): Promise<{ stream: Writable; commit(): Promise<void>; abort(): Promise<void> }>;
    /** Free bytes on the filesystem holding `path`. */
    freeSpace(path: string): Promise<number>;
  };

  sampleMetrics(): Promise<MetricsSample>;
  powerReset(): Promise<void>;
  /**
   * `image` is a host path to an image in `opts.format` (sandbox boards: a tar or tar.gz archive of a
   * root file system; QEMU boards: a raw disk image, compressed or not). Phases: writing, then
   * verifying (what was written is read back and compared with the image), then booting; the promise
   * settles once the board runs the new image, or, on failure, the previous one.
   */
  flash(image: string, onProgress: (p: FlashProgress) => void, opts?: FlashOptions): Promise<void>;
  /**
   * Puts the board back to its default image (lease expiry): local boards get a fresh default root,
   * ssh boards run their configured reimage command. Processes end; the board boots again.
   */
  restoreDefault(): Promise<void>;
  callPlugin(topic: string, data: string, nodeId: string): Promise<string>;
  /** A TCP stream to a port of the board (VNC 5900, code-server 8080); capability `vnc` / `codeServer`. */
  connectPort(port: number): Promise<import('node:stream').Duplex>;
  /**
   * A stream to the board's VNC (RFB) server where the driver reaches it otherwise than by a TCP port
   * (local boards: a unix socket inside the board, their desktop started on first use). Drivers
   * without it are reached by `connectPort` at the board's VNC port.
   */
  connectVnc?(): Promise<import('node:stream').Duplex>;
  /**
   * A stream to the board's code-server, started first where the driver knows how (a start command in
   * the lab file). Drivers without it are reached by `connectPort` at VNC_LIMITS.codeServerPort.
   */
  connectCode?(): Promise<import('node:stream').Duplex>;
  /**
   * True when `connectCode` starts a code-server itself with nothing running yet (local boards on a
   * host with code-server installed), so the code window is offered before one answers.
   */
  startsCodeServer?(): boolean;
  /** Disk snapshots, on drivers with the `snapshot` capability. */
  readonly snapshots?: BoardSnapshots;
}
