// A board that runs on a board host, as the service's features see it: the BoardDriver interface,
// every call and stream carried over the host's link to this instance (src/server/hosts/link.ts) and
// answered there by the board's own driver (src/server/board-host/dispatch.ts). Shells are kept by
// the host itself (`openHostedShell`), so they outlive this instance.
import fs from 'node:fs';
import type { Duplex, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { HostNetworkStatus } from '#server/board-host/dispatch.ts';
import {
  type BoardDriver,
  type BoardSnapshots,
  type Capability,
  DriverError,
  type FileEntry,
  type FlashOptions,
  type FlashProgress,
  type ImageKind,
  type MetricsSample,
  type PtyHandle,
  type PtySize,
} from '#server/boards/driver.ts';
import type { HostBoard } from '#shared/board-hosts.ts';
import type { NetworkPolicy } from '#shared/board-network.ts';
import { type Link, LinkClosedError, type LinkStream } from './link.ts';

/** What the service asks a host to open a kept shell with (src/server/shells/manager.ts). */
export interface HostedShellInput {
  applyId: string;
  deviceId: string;
  userId: string;
  shellType: 'login' | 'serial';
  size?: PtySize;
  credentialId?: string;
}

/** Calls that may take minutes on the host (a flash, a restore, a reimage): no call timeout. */
const LONG = { timeoutMs: 0 };

export class RemoteDriver implements BoardDriver {
  readonly kind: BoardDriver['kind'];
  readonly flashes?: ImageKind;
  readonly snapshots?: BoardSnapshots;
  readonly connectVnc?: () => Promise<Duplex>;
  readonly connectCode?: () => Promise<Duplex>;
  private readonly caps: ReadonlySet<Capability>;

  constructor(
    readonly boardId: string,
    readonly hostName: string,
    readonly link: Link,
    private readonly info: HostBoard,
  ) {
    this.kind = info.declaration.driver;
    this.flashes = info.flashes ?? undefined;
    this.caps = new Set(info.capabilities as Capability[]);
    if (info.vnc) this.connectVnc = () => this.open('vnc');
    if (info.code) this.connectCode = () => this.open('code');
    if (info.snapshots) this.snapshots = this.snapshotCalls();
  }

  /** A riscv64 board's network as its host runs it (src/server/boards/lab-network.ts). */
  networkOnHost(): Promise<HostNetworkStatus> {
    return this.call('net.status');
  }

  /** An administrator's policy applied live on the host; null gives the board its host's own again. */
  setNetworkOnHost(policy: NetworkPolicy | null): Promise<HostNetworkStatus> {
    return this.call('net.set', [policy]);
  }

  private call<T>(method: string, args: unknown[] = [], opts?: Parameters<Link['call']>[2]): Promise<T> {
    return this.link.call<T>(method, [this.boardId, ...args], opts);
  }

  private open(kind: string, args: unknown[] = []): Promise<LinkStream> {
    return this.link.open(kind, [this.boardId, ...args]);
  }

  capabilities(): ReadonlySet<Capability> {
    return this.caps;
  }

  /** The host started the board; this side has nothing to start. */
  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  probe(timeoutMs = 3000): Promise<void> {
    return this.call('probe', [timeoutMs], { timeoutMs: timeoutMs + 2000 });
  }

  /** Opens a shell the host keeps (ring and PTY there): it survives the death of this instance. */
  async openHostedShell(input: HostedShellInput): Promise<{ clientId: string }> {
    const r = await this.call<{ clientId?: unknown }>('shell.open', [input]);
    // A host names only its own shells: an id outside its prefix would point a console at another
    // host's (or instance's) shell.
    const id = r?.clientId;
    if (
      typeof id !== 'string' ||
      !id.startsWith(`${this.hostName}_`) ||
      id.length > 128 ||
      !/^[A-Za-z0-9_.:-]+$/.test(id)
    )
      throw new DriverError('host.refused', 'The board host answered a shell that is not its own');
    return { clientId: id };
  }

  startsCodeServer(): boolean {
    return this.info.startsCodeServer;
  }

  openShell(size: PtySize, env?: Record<string, string>): Promise<PtyHandle> {
    return this.openPty('pty', [size, env ?? null]);
  }

  openSerial(size: PtySize): Promise<PtyHandle> {
    return this.openPty('serial', [size]);
  }

  private async openPty(kind: string, args: unknown[]): Promise<PtyHandle> {
    const s = await this.open(kind, args);
    return remotePty(s);
  }

  readonly files: BoardDriver['files'] = {
    list: (dir) => this.call<FileEntry[]>('files.list', [dir]),
    stat: (p) => this.call<FileEntry>('files.stat', [p]),
    read: async (p, maxBytes) =>
      Buffer.from(await this.call<string>('files.read', [p, maxBytes ?? null]), 'base64'),
    write: (p, data) => this.call('files.write', [p, Buffer.from(data).toString('base64')]),
    remove: (p, opts) => this.call('files.remove', [p, opts ?? {}]),
    mkdir: (p) => this.call('files.mkdir', [p]),
    rename: (a, b) => this.call('files.rename', [a, b]),
    readlink: (p) => this.call<string>('files.readlink', [p]),
    freeSpace: (p) => this.call<number>('files.freeSpace', [p]),
    createReadStream: (p, opts) => this.open('read', [p, opts?.start ?? 0]) as Promise<Readable>,
    createWriteStream: async (p) => {
      const s = await this.open('write', [p]);
      s.resume();
      let settled: Promise<void> | null = null;
      // The host commits once it has every byte and the word to: `end` carries the bytes, the side
      // message the decision, and the host's `done` answers it.
      const decide = (commit: boolean): Promise<void> => {
        settled ??= new Promise<void>((resolve, reject) => {
          s.on('message', (h: Record<string, unknown>) => {
            if (h.done === true) resolve();
            else if (h.failed) reject(new DriverError(String(h.key ?? 'driver.failed'), String(h.failed)));
          });
          s.once('error', reject);
          s.once('close', () => reject(new DriverError('board.offline', 'The board host went away')));
          const send = () => s.message({ decide: commit ? 'commit' : 'abort' });
          if (commit) s.end(send);
          else {
            send();
            s.end();
          }
        });
        return settled;
      };
      return { stream: s as Writable, commit: () => decide(true), abort: () => decide(false) };
    },
  };

  sampleMetrics(): Promise<MetricsSample> {
    return this.call('metrics');
  }

  powerReset(): Promise<void> {
    return this.call('powerReset', [], LONG);
  }

  restoreDefault(): Promise<void> {
    return this.call('restoreDefault', [], LONG);
  }

  callPlugin(topic: string, data: string, nodeId: string): Promise<string> {
    return this.call('plugin', [topic, data, nodeId]);
  }

  connectPort(port: number): Promise<Duplex> {
    return this.open('port', [port]);
  }

  /** The image goes to the host first (a stream into its data directory), then the host flashes it. */
  async flash(image: string, onProgress: (p: FlashProgress) => void, opts: FlashOptions = {}): Promise<void> {
    try {
      await this.flashVia(image, onProgress, opts);
    } catch (err) {
      // The host went away under the flash (its upload or the flash itself): interrupted, whatever
      // the stream said as it broke.
      if (this.link.closed !== null && !(err instanceof LinkClosedError))
        throw new LinkClosedError(this.link.closed);
      throw err;
    }
  }

  private async flashVia(
    image: string,
    onProgress: (p: FlashProgress) => void,
    opts: FlashOptions,
  ): Promise<void> {
    const up = await this.open('upload', []);
    up.resume();
    const token = new Promise<string>((resolve, reject) => {
      up.on('message', (h: Record<string, unknown>) => {
        if (typeof h.token === 'string') resolve(h.token);
      });
      up.once('error', reject);
    });
    const abort = () => up.destroy(new DriverError('flash.cancelled', 'The flash was cancelled'));
    opts.signal?.addEventListener('abort', abort, { once: true });
    try {
      await pipeline(fs.createReadStream(image), up);
    } finally {
      opts.signal?.removeEventListener('abort', abort);
    }
    const t = await token;
    await this.call(
      'flash',
      [t, { format: opts.format ?? null, label: opts.label ?? null, tag: opts.tag ?? null }],
      { timeoutMs: 0, onProgress: (p) => onProgress(p as FlashProgress), signal: opts.signal },
    );
  }

  private snapshotCalls(): BoardSnapshots {
    return {
      list: async () =>
        (await this.call<{ name: string; createdAt: string; epoch?: number }[]>('snap.list')).map((s) => ({
          ...s,
          createdAt: new Date(s.createdAt),
        })),
      save: (name) => this.call('snap.save', [name], LONG),
      restore: (name) => this.call('snap.restore', [name], LONG),
      remove: (name) => this.call('snap.remove', [name], LONG),
      chargedBytes: () => this.call('snap.charged'),
      diskBytes: () => this.call('snap.disk'),
      exportRaw: async (name, out) => {
        const s = await this.open('export', [name]);
        const tmp = `${out}.part`;
        await pipeline(s, fs.createWriteStream(tmp, { mode: 0o600 }));
        fs.renameSync(tmp, out);
      },
    };
  }
}

/** A PTY on the host, over one stream: bytes both ways, resize and exit as side messages. */
function remotePty(s: LinkStream): PtyHandle {
  const exits = new Set<(info: { exitCode: number | null; reason?: string }) => void>();
  let exited = false;
  const exit = (info: { exitCode: number | null; reason?: string }) => {
    if (exited) return;
    exited = true;
    for (const fn of exits) fn(info);
  };
  s.on('message', (h: Record<string, unknown>) => {
    if (h.exit === true)
      exit({
        exitCode: typeof h.code === 'number' ? h.code : null,
        reason: h.reason ? String(h.reason) : undefined,
      });
  });
  s.on('close', () => exit({ exitCode: null, reason: 'board.offline' }));
  s.on('error', () => {});
  return {
    write: (d) => {
      if (!s.destroyed && s.writable) s.write(typeof d === 'string' ? Buffer.from(d) : d);
    },
    inputBacklog: () => s.writableLength,
    resize: (size) => s.message({ resize: size }),
    onData: (fn) => {
      s.on('data', fn);
      return () => s.off('data', fn);
    },
    onExit: (fn) => {
      exits.add(fn);
      return () => exits.delete(fn);
    },
    pause: () => s.pause(),
    resume: () => s.resume(),
    close: () => s.destroy(),
  };
}
