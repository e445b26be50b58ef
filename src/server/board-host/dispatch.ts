// What a board host answers on its links: every call and stream a service instance's RemoteDriver
// makes (src/server/hosts/remote-driver.ts), run on the board's own driver here. Arguments come from
// the service the host authenticated; they are still checked for shape, so a confused service gets an
// error, never a crash.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import {
  type BoardDriver,
  DriverError,
  type ImageFormat,
  type PtyHandle,
  type PtySize,
} from '#server/boards/driver.ts';
import type { CallContext, LinkStream } from '#server/hosts/link.ts';
import type { HostedShellInput } from '#server/hosts/remote-driver.ts';
import type { ShellManager } from '#server/shells/manager.ts';
import {
  type Egress,
  type NetworkPolicy,
  type NetworkSource,
  type NetworkState,
  networkPolicy,
} from '#shared/board-network.ts';
import { ShellType } from '#shared/shells.ts';

export interface DispatchContext {
  driver(boardId: string): BoardDriver;
  shells: ShellManager;
  /** Where uploaded flash images wait for their flash (this host's data directory). */
  uploadsDir: string;
  /** A riscv64 board's network as this host's lab file has it (none: not a riscv64 board). */
  network?(
    boardId: string,
  ): { policy: NetworkPolicy; source: NetworkSource; hostDefault: Egress } | undefined;
}

/** What the service reads of a riscv64 board's network on a host (lab-network.ts). */
export interface HostNetworkStatus {
  policy: NetworkPolicy;
  source: NetworkSource;
  hostDefault: Egress;
  state: NetworkState;
  reason: string | null;
}

type NetworkDriver = BoardDriver & {
  networkStatus(): { policy: NetworkPolicy; state: NetworkState; reason: string | null };
  setNetworkPolicy(p: NetworkPolicy): Promise<void>;
};

const str = (v: unknown, what: string): string => {
  if (typeof v !== 'string' || v.length > 4096) throw new DriverError('request.invalid', `${what}: a string`);
  return v;
};
const int = (v: unknown, what: string): number => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new DriverError('request.invalid', `${what}: a count`);
  return v;
};
const size = (v: unknown): PtySize => {
  const o = (v ?? {}) as { cols?: unknown; rows?: unknown };
  return {
    cols: Math.min(1000, int(o.cols ?? 80, 'cols') || 80),
    rows: Math.min(1000, int(o.rows ?? 24, 'rows') || 24),
  };
};
const TOKEN_RE = /^[a-f0-9]{32}$/;

export function makeDispatch(ctx: DispatchContext) {
  const uploads = (token: string) => {
    if (!TOKEN_RE.test(token)) throw new DriverError('request.invalid', 'unknown upload');
    return path.join(ctx.uploadsDir, `${token}.img`);
  };

  /** Whether an administrator's policy replaces the lab file's, per board (until the service drops it). */
  const adminNetwork = new Set<string>();
  const networkOf = (
    id: string,
    d: BoardDriver,
  ): { d: NetworkDriver; own: NonNullable<ReturnType<NonNullable<DispatchContext['network']>>> } => {
    const own = ctx.network?.(id);
    if (!own || !('setNetworkPolicy' in d))
      throw new DriverError('capability.unsupported', 'Only riscv64 boards have a network');
    return { d: d as NetworkDriver, own };
  };
  const networkStatus = (
    id: string,
    d: NetworkDriver,
    own: { source: NetworkSource; hostDefault: Egress },
  ): HostNetworkStatus => ({
    ...d.networkStatus(),
    source: adminNetwork.has(id) ? 'admin' : own.source,
    hostDefault: own.hostDefault,
  });

  async function call(method: string, args: unknown[], c: CallContext): Promise<unknown> {
    const id = str(args[0], 'board');
    const d = ctx.driver(id);
    const a = args.slice(1);
    switch (method) {
      case 'net.status': {
        const n = networkOf(id, d);
        return networkStatus(id, n.d, n.own);
      }
      // An administrator's policy applied live; null gives the board its lab file's policy again.
      case 'net.set': {
        const n = networkOf(id, d);
        const parsed = a[0] === null ? null : networkPolicy.safeParse(a[0]);
        if (parsed && !parsed.success)
          throw new DriverError('request.invalid', 'network policy: not a policy');
        await n.d.setNetworkPolicy(parsed ? parsed.data : n.own.policy);
        if (parsed) adminNetwork.add(id);
        else adminNetwork.delete(id);
        return networkStatus(id, n.d, n.own);
      }
      case 'probe':
        return d.probe(int(a[0] ?? 3000, 'timeout'));
      case 'metrics':
        return d.sampleMetrics();
      case 'powerReset':
        return d.powerReset();
      case 'restoreDefault':
        return d.restoreDefault();
      case 'plugin':
        return d.callPlugin(str(a[0], 'topic'), str(a[1], 'data'), str(a[2], 'node'));
      case 'shell.open': {
        const i = (a[0] ?? {}) as Partial<HostedShellInput>;
        const input = {
          applyId: str(i.applyId, 'applyId'),
          deviceId: str(i.deviceId, 'deviceId'),
          userId: str(i.userId, 'userId'),
          shellType: i.shellType === ShellType.serial ? ShellType.serial : ShellType.login,
          size: size(i.size),
          ...(i.credentialId ? { credentialId: str(i.credentialId, 'credentialId') } : {}),
        };
        if (input.deviceId !== d.boardId) throw new DriverError('request.invalid', 'board mismatch');
        return ctx.shells.open(input);
      }
      case 'files.list':
        return d.files.list(str(a[0], 'path'));
      case 'files.stat':
        return d.files.stat(str(a[0], 'path'));
      case 'files.read':
        return (await d.files.read(str(a[0], 'path'), a[1] == null ? undefined : int(a[1], 'max'))).toString(
          'base64',
        );
      case 'files.write':
        return d.files.write(str(a[0], 'path'), Buffer.from(str(a[1] ?? '', 'data'), 'base64'));
      case 'files.remove':
        return d.files.remove(str(a[0], 'path'), {
          recursive: (a[1] as { recursive?: unknown })?.recursive === true,
        });
      case 'files.mkdir':
        return d.files.mkdir(str(a[0], 'path'));
      case 'files.rename':
        return d.files.rename(str(a[0], 'from'), str(a[1], 'to'));
      case 'files.readlink':
        return d.files.readlink(str(a[0], 'path'));
      case 'files.freeSpace':
        return d.files.freeSpace(str(a[0], 'path'));
      case 'flash': {
        const file = uploads(str(a[0], 'token'));
        const o = (a[1] ?? {}) as { format?: unknown; label?: unknown; tag?: unknown };
        try {
          await d.flash(file, (p) => c.progress(p), {
            signal: c.signal,
            format: (typeof o.format === 'string' ? o.format : undefined) as ImageFormat | undefined,
            label: typeof o.label === 'string' ? o.label : undefined,
            tag: typeof o.tag === 'string' ? o.tag : undefined,
          });
        } finally {
          fs.rmSync(file, { force: true });
        }
        return null;
      }
      case 'snap.list':
        return (await snaps(d).list()).map((s) => ({ ...s, createdAt: s.createdAt.toISOString() }));
      case 'snap.save':
        return snaps(d).save(str(a[0], 'name'));
      case 'snap.restore':
        return snaps(d).restore(str(a[0], 'name'));
      case 'snap.remove':
        return snaps(d).remove(str(a[0], 'name'));
      case 'snap.charged':
        return snaps(d).chargedBytes();
      case 'snap.disk':
        return snaps(d).diskBytes();
      default:
        throw new DriverError('capability.unsupported', `Unknown call ${method}`);
    }
  }

  async function stream(kind: string, args: unknown[], s: LinkStream): Promise<void> {
    if (kind === 'upload') return upload(s);
    const d = ctx.driver(str(args[0], 'board'));
    const a = args.slice(1);
    switch (kind) {
      case 'pty':
        return servePty(
          s,
          await d.openShell(size(a[0]), (a[1] as Record<string, string> | null) ?? undefined),
        );
      case 'serial':
        return servePty(s, await d.openSerial(size(a[0])));
      case 'read': {
        const r = await d.files.createReadStream(str(a[0], 'path'), { start: int(a[1] ?? 0, 'start') });
        s.resume();
        void pipeline(r, s).catch((err) => s.destroy(err));
        return;
      }
      case 'write':
        return serveWrite(s, await d.files.createWriteStream(str(a[0], 'path')));
      case 'port':
        return splice(s, await d.connectPort(int(a[0], 'port')));
      case 'vnc':
        if (!d.connectVnc) throw new DriverError('capability.unsupported', 'No screen');
        return splice(s, await d.connectVnc());
      case 'code':
        if (!d.connectCode) throw new DriverError('capability.unsupported', 'No code-server');
        return splice(s, await d.connectCode());
      case 'export': {
        const tmp = path.join(ctx.uploadsDir, `${crypto.randomBytes(16).toString('hex')}.export`);
        try {
          await snaps(d).exportRaw(str(a[0], 'name'), tmp);
        } catch (err) {
          fs.rmSync(tmp, { force: true });
          throw err;
        }
        s.resume();
        void pipeline(fs.createReadStream(tmp), s)
          .catch((err) => s.destroy(err))
          .finally(() => fs.rmSync(tmp, { force: true }));
        return;
      }
      default:
        throw new DriverError('capability.unsupported', `Unknown stream ${kind}`);
    }
  }

  /** A flash image arrives into this host's data directory; the token names it for the flash call. */
  function upload(s: LinkStream): void {
    const token = crypto.randomBytes(16).toString('hex');
    const file = uploads(token);
    const out = fs.createWriteStream(file, { mode: 0o600, flags: 'wx' });
    pipeline(s, out).then(
      () => {
        s.message({ token });
        s.end();
      },
      (err: Error) => {
        fs.rmSync(file, { force: true });
        s.destroy(err);
      },
    );
  }

  return { call, stream };
}

function snaps(d: BoardDriver) {
  if (!d.snapshots) throw new DriverError('capability.unsupported', 'No snapshots on this board');
  return d.snapshots;
}

/** Bytes both ways between a stream and a connection to a port of the board. */
function splice(s: LinkStream, conn: import('node:stream').Duplex): void {
  conn.on('error', (err) => s.destroy(err));
  s.on('error', () => conn.destroy());
  s.pipe(conn);
  conn.pipe(s);
  s.on('close', () => conn.destroy());
  conn.on('close', () => s.destroy());
}

function servePty(s: LinkStream, pty: PtyHandle): void {
  const offData = pty.onData((chunk) => {
    if (!s.write(chunk)) {
      pty.pause();
      s.once('drain', () => pty.resume());
    }
  });
  const offExit = pty.onExit((info) => {
    s.message({ exit: true, code: info.exitCode, reason: info.reason ?? null });
    s.end();
  });
  s.on('data', (d: Buffer) => pty.write(d));
  s.on('message', (h: { resize?: unknown }) => {
    if (h.resize) pty.resize(size(h.resize));
  });
  s.on('close', () => {
    offData();
    offExit();
    pty.close();
  });
  s.on('error', () => {});
}

/** An atomic upload: the bytes, then the service's word (commit or abort), then `done`. */
function serveWrite(
  s: LinkStream,
  w: { stream: import('node:stream').Writable; commit(): Promise<void>; abort(): Promise<void> },
): void {
  let decision: 'commit' | 'abort' | null = null;
  let written = false;
  let failed: Error | null = null;
  let settled = false;
  const settle = () => {
    if (settled || decision === null || (!written && !failed && decision === 'commit')) return;
    settled = true;
    const act = decision === 'commit' && !failed ? w.commit() : w.abort();
    act.then(
      () => {
        if (failed && decision === 'commit')
          s.message({ failed: failed.message, key: (failed as { key?: string }).key });
        else s.message({ done: true });
        s.end();
      },
      (err: Error & { key?: string }) => {
        s.message({ failed: err.message, key: err.key ?? 'driver.failed' });
        s.end();
      },
    );
  };
  // Not `pipeline`: an abort destroys the board's file stream, and a pipeline would pass that on as
  // a premature close to the link stream, which then reached the service as a failed abort (seen
  // once in CI) racing the host's `done`. The link stream ends only by the word's answer below.
  const drop = () => {
    s.unpipe(w.stream);
    s.resume();
  };
  s.on('message', (h: { decide?: unknown }) => {
    if (h.decide === 'commit' || h.decide === 'abort') {
      decision = h.decide;
      if (decision === 'abort') drop();
      settle();
    }
  });
  s.pipe(w.stream);
  w.stream.once('finish', () => {
    written = true;
    settle();
  });
  w.stream.once('error', (err: Error) => {
    failed ??= err;
    drop();
    settle();
  });
  // The link died before the word came: nothing lands.
  s.on('close', () => {
    if (decision === null) void w.abort().catch(() => {});
  });
}
