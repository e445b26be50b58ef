// One shell session on the instance that owns its PTY. Lifecycle: opened by apply-device-shell
// (PTY from the board driver), streams output into its ring and onto the bus, serves attaches of
// viewers (replay from an offset, then live, and bounded re-reads from the ring for a viewer whose
// socket was full), applies flow control from their acknowledgements, and ends when the program
// exits or it is closed (unapply, apply end, lease expiry, board reset, the sign-in ending). An
// ended session keeps its ring for a while so a console that reconnects sees the last output and
// the reason, then the manager forgets it.
import type { PtyHandle, RelayServe } from '#server/boards/driver.ts';
import type { Bus, BusMessage } from '#server/realtime/bus.ts';
import { SHELL_FLOW, type ShellCloseReason, shellResizeBody } from '#shared/realtime.ts';
import { type ShellJob, ShellJobState, type ShellType } from '#shared/shells.ts';
import { shellIn, shellOut, VIEWER_STALE_MS } from './bus-protocol.ts';
import { foregroundOf } from './foreground.ts';
import { ScrollbackRing } from './ring.ts';

export interface ShellMeta {
  id: string;
  applyId: string;
  deviceId: string;
  userId: string;
  shellType: ShellType;
  /** The credential (token or API key) the shell was opened with: the shell ends with it. */
  credentialId?: string;
}

interface Viewer {
  acked: number;
  seenAt: number;
  /** Who watches (joined shells: the host's own viewers and guests; presence lists them). */
  userId: string;
  username: string;
  /** A guest of a joined shell (src/shared/share.ts): read-only unless the host granted input. */
  guest: boolean;
}

export interface ShellStats {
  id: string;
  paused: boolean;
  ringStart: number;
  ringEnd: number;
  ringAllocated: number;
  acked: number;
  viewers: number;
  ended: string | null;
}

export class ShellSession {
  readonly ring = new ScrollbackRing(SHELL_FLOW.ringBytes);
  private readonly viewers = new Map<string, Viewer>();
  /** Highest acknowledgement seen: the flow-control reference while nobody watches. */
  private lastAck = 0;
  private paused = false;
  ended: { reason: string; code: number | null } | null = null;
  endedAt = 0;
  private unsubscribeIn: (() => void) | null = null;
  private readonly disposers: Array<() => void> = [];
  private readonly outChannel: string;
  /** Guests the host let type (joined shells). */
  private readonly inputs = new Set<string>();
  /** A guest has joined once: from then on viewers get presence events (plain shells never do). */
  private joined = false;

  constructor(
    readonly meta: ShellMeta,
    private readonly pty: PtyHandle,
    private readonly bus: Bus,
    private readonly now: () => number,
    private readonly onEnded: (s: ShellSession) => void,
  ) {
    this.outChannel = shellOut(meta.id);
  }

  async start(): Promise<void> {
    this.unsubscribeIn = await this.bus.subscribe(shellIn(this.meta.id), (m) => this.onIn(m));
    this.disposers.push(
      this.pty.onData((chunk) => this.onOutput(chunk)),
      this.pty.onExit((info) => this.end(info.reason ?? 'shell.exited', info.exitCode)),
    );
  }

  stats(): ShellStats {
    return {
      id: this.meta.id,
      paused: this.paused,
      ringStart: this.ring.start,
      ringEnd: this.ring.end,
      ringAllocated: this.ring.allocated,
      acked: this.acked(),
      viewers: this.viewers.size,
      ended: this.ended?.reason ?? null,
    };
  }

  /**
   * Whether a foreground job runs in the shell (the console asks before closing one that does).
   * Known for login shells whose PTY runs on this host; a serial console or a remote PTY is `unknown`.
   */
  async job(): Promise<ShellJob> {
    if (this.ended) return { state: ShellJobState.ended, command: null };
    const pid = this.pty.hostPid;
    if (this.meta.shellType !== 'login' || pid === undefined)
      return { state: ShellJobState.unknown, command: null };
    const fg = await foregroundOf(pid);
    if (this.ended) return { state: ShellJobState.ended, command: null };
    if (!fg) return { state: ShellJobState.unknown, command: null };
    return fg.busy
      ? { state: ShellJobState.busy, command: fg.command }
      : { state: ShellJobState.idle, command: null };
  }

  private onOutput(chunk: Buffer): void {
    if (this.ended) return;
    const o = this.ring.end;
    this.ring.append(chunk);
    this.bus.publish(this.outChannel, { h: { t: 'data', o }, data: chunk });
    this.flow();
  }

  private onIn(m: BusMessage): void {
    const h = m.h;
    switch (h.t) {
      case 'input':
        if (!this.ended && m.data && this.mayType(h.v)) this.pty.write(m.data);
        return;
      case 'ack': {
        const v = this.viewers.get(String(h.v));
        const o = Number(h.o);
        if (!Number.isSafeInteger(o) || o < 0) return;
        const acked = Math.min(o, this.ring.end);
        if (v) {
          v.acked = Math.max(v.acked, acked);
          v.seenAt = this.now();
        }
        this.lastAck = Math.max(this.lastAck, acked);
        this.flow();
        return;
      }
      case 'resize': {
        const size = shellResizeBody.safeParse({ cols: h.cols, rows: h.rows });
        if (size.success && !this.ended) this.pty.resize(size.data);
        return;
      }
      case 'attach':
        this.attach(String(h.v), String(h.u), Number(h.from), h.g === 1, typeof h.n === 'string' ? h.n : '');
        return;
      case 'detach': {
        const v = this.viewers.get(String(h.v));
        if (v) {
          this.lastAck = Math.max(this.lastAck, v.acked);
          this.viewers.delete(String(h.v));
          this.flow();
          this.publishPresence();
        }
        return;
      }
      case 'grant':
        if (h.input === true) this.inputs.add(String(h.u));
        else this.inputs.delete(String(h.u));
        this.publishPresence();
        return;
      case 'kickUser':
        this.kickGuests(String(h.reason ?? 'share.guest_removed'), String(h.u));
        return;
      case 'kickGuests':
        this.kickGuests(String(h.reason ?? 'share.uninvited'));
        return;
      case 'describe':
        this.bus.publish(this.outChannel, {
          h: {
            t: 'meta',
            r: h.r,
            userId: this.meta.userId,
            applyId: this.meta.applyId,
            deviceId: this.meta.deviceId,
            shellType: this.meta.shellType,
            ended: this.ended !== null,
          },
        });
        return;
      case 'job':
        // Answered only for the apply that owns the shell; anyone else gets silence ("not found").
        if (h.applyId === this.meta.applyId)
          void this.job().then((j) =>
            this.bus.publish(this.outChannel, { h: { t: 'jobState', r: h.r, ...j } }),
          );
        return;
      case 'keep': {
        const v = this.viewers.get(String(h.v));
        if (v) v.seenAt = this.now();
        return;
      }
      case 'fetch':
        this.fetch(String(h.v), Number(h.from), Number(h.max));
        return;
      case 'close':
        if (h.applyId === this.meta.applyId) {
          if (this.ended) this.publishExit();
          else this.close(String(h.reason ?? 'shell.closed'));
        }
        return;
    }
  }

  private attach(viewer: string, userId: string, from: number, guest = false, username = ''): void {
    // Another user's shell answers exactly like a shell that does not exist, unless the front checked
    // that the user is a guest of this joined shell (src/server/share).
    const isGuest = userId !== this.meta.userId;
    if (isGuest && !guest) {
      this.bus.publish(this.outChannel, { h: { t: 'refused', v: viewer, key: 'resource.not_found' } });
      return;
    }
    const want = Number.isSafeInteger(from) && from >= 0 ? from : this.ring.start;
    const { offset, data, lost } = this.ring.readFrom(want);
    if (isGuest) this.joined = true;
    if (!this.ended)
      this.viewers.set(viewer, { acked: offset, seenAt: this.now(), userId, username, guest: isGuest });
    this.bus.publish(this.outChannel, { h: { t: 'replay', v: viewer, o: offset, lost }, data });
    if (this.ended) this.publishExit();
    this.flow();
    this.publishPresence();
  }

  /**
   * Hands the host's own view `viewerId` to the service's WebSocket relay (PtyHandle.serveRelay): its
   * keystrokes and output then pass through the relay, the ring still gets every byte first. One view
   * per terminal; false when it cannot (the service goes on serving the view).
   */
  async serveRelay(viewerId: string, o: Omit<RelayServe, 'offset'>): Promise<boolean> {
    if (!this.relayable(viewerId) || this.relayed || !this.pty.serveRelay) return false;
    this.relayed = viewerId;
    const ok = await this.pty.serveRelay({ ...o, offset: () => this.ring.end });
    if (!ok && this.relayed === viewerId) this.relayed = null;
    return ok;
  }

  /** Whether the view can be handed to the relay at all, now or later: the host's own view of a live terminal the relay can read. */
  relayable(viewerId: string): boolean {
    const v = this.viewers.get(viewerId);
    return !!v && !v.guest && !this.ended && !!this.pty.serveRelay;
  }

  /** The relayed view ended: the relay lets the terminal go. */
  unserveRelay(viewerId: string): void {
    if (this.relayed !== viewerId) return;
    this.relayed = null;
    if (!this.ended) this.pty.unserveRelay?.();
  }

  /** The view the relay serves, if any. */
  private relayed: string | null = null;

  /** Input from a viewer: the host's always, a guest's once granted; an unknown viewer's never. */
  private mayType(v: unknown): boolean {
    const viewer = typeof v === 'string' ? this.viewers.get(v) : undefined;
    if (!viewer) return false;
    return !viewer.guest || this.inputs.has(viewer.userId);
  }

  /** Guests (all, or one user's viewers) leave: their views close with `reason`, the host's stay. */
  kickGuests(reason: string, userId?: string): void {
    let changed = false;
    for (const [id, v] of this.viewers) {
      if (!v.guest || (userId !== undefined && v.userId !== userId)) continue;
      this.viewers.delete(id);
      this.lastAck = Math.max(this.lastAck, v.acked);
      this.bus.publish(this.outChannel, { h: { t: 'kick', v: id, reason } });
      changed = true;
    }
    if (userId === undefined) this.inputs.clear();
    else this.inputs.delete(userId);
    if (changed) {
      this.flow();
      this.publishPresence();
    }
  }

  /** Who watches, one entry per user (the console shows it on joined shells). */
  presence(): { userId: string; username: string; host: boolean; input: boolean }[] {
    const users = new Map<string, { userId: string; username: string; host: boolean; input: boolean }>();
    for (const v of this.viewers.values()) {
      if (users.has(v.userId)) continue;
      users.set(v.userId, {
        userId: v.userId,
        username: v.username,
        host: !v.guest,
        input: !v.guest || this.inputs.has(v.userId),
      });
    }
    return [...users.values()];
  }

  private publishPresence(): void {
    if (this.ended || !this.joined) return;
    this.bus.publish(this.outChannel, {
      h: { t: 'presence', shellId: this.meta.id, users: this.presence() },
    });
  }

  /**
   * Ring bytes for a viewer that fell behind because its socket was full. Only an attached viewer
   * (or anyone once the shell ended, when the viewers are gone) is answered; the copy is bounded.
   */
  private fetch(viewer: string, from: number, max: number): void {
    const v = this.viewers.get(viewer);
    if (!v && !this.ended) return;
    if (!Number.isSafeInteger(from) || from < 0) return;
    const limit =
      Number.isSafeInteger(max) && max > 0 ? Math.min(max, SHELL_FLOW.catchUpBytes) : SHELL_FLOW.catchUpBytes;
    if (v) v.seenAt = this.now();
    const { offset, data, lost } = this.ring.readFrom(from, limit);
    this.bus.publish(this.outChannel, {
      h: { t: 'catchup', v: viewer, o: offset, lost, end: this.ring.end },
      data,
    });
  }

  /** Unacknowledged bytes are counted against the slowest live viewer, or the last ack when none. */
  private acked(): number {
    if (this.viewers.size === 0) return this.lastAck;
    let min = Number.POSITIVE_INFINITY;
    for (const v of this.viewers.values()) if (v.acked < min) min = v.acked;
    return min;
  }

  private flow(): void {
    if (this.ended) return;
    const unacked = this.ring.end - this.acked();
    if (!this.paused && unacked > SHELL_FLOW.highWater) {
      this.paused = true;
      this.pty.pause();
    } else if (this.paused && unacked < SHELL_FLOW.lowWater) {
      this.paused = false;
      this.pty.resume();
    }
  }

  /** Forgets viewers whose front went silent (an instance that died without detaching). */
  sweep(): void {
    const cutoff = this.now() - VIEWER_STALE_MS;
    let changed = false;
    for (const [id, v] of this.viewers) {
      if (v.seenAt < cutoff) {
        this.lastAck = Math.max(this.lastAck, v.acked);
        this.viewers.delete(id);
        changed = true;
      }
    }
    if (changed) {
      this.flow();
      this.publishPresence();
    }
  }

  write(data: Buffer): void {
    if (!this.ended) this.pty.write(data);
  }

  /**
   * Input its sender should wait for the program to take: what the program has not taken yet — but 0
   * while the output waits for acknowledgements (a program echoing its input waits for them, and
   * holding the sender would hold them too), once ended, or where the board cannot tell.
   */
  inputToWaitFor(): number {
    return this.ended || this.paused ? 0 : (this.pty.inputBacklog?.() ?? 0);
  }

  close(reason: ShellCloseReason | string): void {
    if (this.ended) return;
    this.end(reason, null);
    try {
      this.pty.close();
    } catch {
      // The PTY may already be gone with its board; the session is ended either way.
    }
  }

  private end(reason: string, code: number | null): void {
    if (this.ended) return;
    this.ended = { reason, code };
    this.endedAt = this.now();
    this.viewers.clear();
    for (const d of this.disposers.splice(0)) d();
    this.publishExit();
    this.onEnded(this);
  }

  private publishExit(): void {
    if (!this.ended) return;
    this.bus.publish(this.outChannel, { h: { t: 'exit', reason: this.ended.reason, code: this.ended.code } });
  }

  /** Drops the bus subscription: called when the manager forgets the ended session. */
  dispose(): void {
    this.unsubscribeIn?.();
    this.unsubscribeIn = null;
  }
}
