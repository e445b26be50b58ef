// The realtime channel's destinations, declared once for server, console and tests.
//
// STOMP 1.2 over WebSocket at `/ws`. The console opens one connection per tab:
//   CONNECT  headers: accept-version 1.2, token (access token), applyId (may be empty before an apply),
//            heart-beat "20000,0" (the console sends every 20 s, the server sends none).
//   CONNECTED headers: version 1.2, heart-beat "0,<ms>", session, server.
// An invalid token or applyId answers ERROR (headers `message`, `code` (the envelope code, e.g. 50008)
// and `error` (a stable key)) and the socket is closed. So are malformed frames.
//
// A connection lives no longer than the sign-in it was opened with. When the token is revoked (logout,
// a refreshed API key, a password changed by an admin), displaced by a newer sign-in
// (BIANBU_SINGLE_SESSION) or expires, or the user is deactivated, every connection authenticated with
// it (on deactivation: every connection of the user), on every instance, gets at once an ERROR with
// the session code the HTTP calls answer by — 50008 `auth.token_illegal`, 50012 `auth.token_displaced`,
// 50014 `auth.token_expired` — and is closed; the shells opened with that token (on deactivation: all
// the user's shells, and their leases end) close with `event:closed reason:session.ended`. The console
// treats these codes as the end of the session: no reconnect, the re-login dialog instead. SUBSCRIBE
// checks the token again in storage; SEND checks its expiry.
//
// Destinations (`{shellId}` is the clientId answered by apply-device-shell):
//
// | destination                        | frame     | who may use it                                  |
// |------------------------------------|-----------|-------------------------------------------------|
// | /topic/shell/{shellId}             | SUBSCRIBE | the user whose apply opened the shell; guests   |
// |                                    |           | of a joined shell (src/shared/share.ts)         |
// | /app/shell/{shellId}/input         | SEND      | a connection subscribed to that shell (a guest  |
// |                                    |           | only once the host granted input; else dropped) |
// | /app/shell/{shellId}/resize        | SEND      | same; body JSON {cols, rows}                    |
// | /app/shell/{shellId}/ack           | SEND      | same; header `offset`                           |
// | /topic/board/{deviceId}            | SUBSCRIBE | a user holding the board through a live apply   |
// | /user/queue/notifications          | SUBSCRIBE | every connection: its own user's notifications  |
//
// Shell output: MESSAGE frames with a binary body (the PTY's bytes, unmodified) and the header
// `offset`, the absolute byte offset of the body's first byte in the shell's output. SUBSCRIBE may
// carry `offset` (the next byte the client needs): the server replays from its scrollback ring,
// then streams live. Without it the replay starts at the oldest byte the ring still holds. When
// bytes the client asked for have left the ring, the first MESSAGE carries `truncated` (bytes lost).
//
// Events on a subscription are MESSAGE frames with an `event` header and no output:
//   event:refused  error:<key>    the SUBSCRIBE was refused (not found / not yours / apply ended);
//                                 the subscription does not exist on the server.
//   event:closed   reason:<key>   the shell ended (see ShellCloseReason) or the subscription was cut.
//   event:presence                who watches a joined shell; JSON body SharePresence (share.ts),
//                                 sent to every viewer whenever it changes.
// Refusals are not fatal so that one stale topic never takes down the tab's other subscriptions.
//
// Flow control: the console acknowledges the absolute offset it has *processed* (xterm parsed it)
// with SEND /app/shell/{id}/ack, header `offset`. When a shell's unacknowledged bytes exceed
// SHELL_FLOW.highWater the server pauses the PTY (the program blocks on write); it resumes below
// SHELL_FLOW.lowWater. A shell nobody watches keeps its last acknowledgement, so output produced while
// the console is away waits in the ring instead of being lost. Acknowledgements are not believed:
//
// | rule                                                     | otherwise                                |
// |----------------------------------------------------------|------------------------------------------|
// | `offset` is a whole number ≥ 0                           | ERROR `stomp.bad_frame`, closed          |
// | `offset` ≤ the bytes sent to that subscription (`sent`)  | ERROR `stomp.ack_out_of_range`, closed   |
// | `offset` ≥ the subscription's previous acknowledgement   | ERROR `stomp.ack_out_of_range`, closed   |
// | an ack to a subscription not yet live (replay pending)   | ignored                                  |
// | an offset below the replay's start (a resubscribe trails)| accepted, moves nothing                  |
//
// Memory per connection is bounded whatever the client does. Output queued for a socket (written but
// not yet taken by the kernel, plus coalesced frames) never exceeds SHELL_FLOW.socketBacklogBytes:
// bytes that do not fit are not queued, the subscription falls behind and the shell's ring is its
// buffer — since a viewer cannot acknowledge bytes it was not sent, the PTY pauses as for a slow
// reader. When the backlog drains below half, the server fetches the missing bytes from the ring
// (SHELL_FLOW.catchUpBytes at a time) and the stream continues at the exact offset; bytes already
// gone from the ring are reported with `truncated`, as on a resubscribe. Replays obey the same bound.
// A socket that takes nothing for SLOW_CONSUMER_MS is closed (`stomp.slow_consumer`). Frames from the
// client are read no faster than they are handled: past INBOUND_QUEUE_BYTES of unhandled frames the
// server stops reading the socket until it has caught up. A closed connection leaves no state behind
// (hub, bus handlers, shell viewers).
import { z } from 'zod';
import { DEFAULT_STOMP_LIMITS } from './stomp-limits.ts';

export const WS_PATH = '/ws';

export const STOMP_LIMITS = DEFAULT_STOMP_LIMITS;

/** Largest input SEND the console makes; a paste is split into chunks of this size. */
export const SHELL_INPUT_CHUNK_BYTES = 64 * 1024;

export const SHELL_FLOW = {
  /** Bytes of scrollback each shell keeps on the server, replayed on resubscribe. */
  ringBytes: 2 * 1024 * 1024,
  /**
   * Unacknowledged output past which a shell's PTY pauses (resumes below lowWater). Kept small: what
   * is unacknowledged sits in front of every other shell's output on the same socket, so a 1 MiB
   * window made a second shell's echo wait behind a flood in the first (Chromium, tests/bench/
   * flood.bench.ts: echo p50 144 → 47 ms, p99 602 → 134 ms at the same 2.4 MiB/s to xterm).
   */
  highWater: 256 * 1024,
  /**
   * Resumes as soon as one acknowledgement (ackEveryBytes) has come back, not when the window has
   * drained: a shell paused until only 64 KiB were left unacknowledged left the path empty while it
   * restarted (bench, interleaved: 57.5 → 64.0 MiB/s median over eight floods each).
   */
  lowWater: 192 * 1024,
  /** The console acknowledges at least this often (bytes processed) and whenever xterm goes idle. */
  ackEveryBytes: 64 * 1024,
  /** Most output bytes one connection's socket may hold unsent; beyond, the ring is the buffer. */
  socketBacklogBytes: 4 * 1024 * 1024,
  /** Bytes fetched from the ring at a time for a subscription that fell behind. */
  catchUpBytes: 1024 * 1024,
} as const;

/** Unhandled bytes of client frames past which the server stops reading a connection's socket. */
export const INBOUND_QUEUE_BYTES = 1024 * 1024;

/**
 * Input a shell's program has not taken yet past which the server stops reading the socket that
 * sends it (a paste or a CLI's stdin into a program that reads late), and below which it reads again.
 */
export const SHELL_INPUT_HELD = { high: 1024 * 1024, low: 256 * 1024 } as const;

/** A socket that takes no queued byte for this long is closed. */
export const SLOW_CONSUMER_MS = 60_000;

export const Destinations = {
  shellOutput: (shellId: string) => `/topic/shell/${shellId}`,
  shellInput: (shellId: string) => `/app/shell/${shellId}/input`,
  shellResize: (shellId: string) => `/app/shell/${shellId}/resize`,
  shellAck: (shellId: string) => `/app/shell/${shellId}/ack`,
  boardState: (deviceId: string) => `/topic/board/${deviceId}`,
  userNotifications: '/user/queue/notifications',
} as const;

const ID = '([A-Za-z0-9_.:-]{1,128})';
const patterns = [
  { kind: 'shellOutput', re: new RegExp(`^/topic/shell/${ID}$`) },
  { kind: 'shellInput', re: new RegExp(`^/app/shell/${ID}/input$`) },
  { kind: 'shellResize', re: new RegExp(`^/app/shell/${ID}/resize$`) },
  { kind: 'shellAck', re: new RegExp(`^/app/shell/${ID}/ack$`) },
  { kind: 'boardState', re: new RegExp(`^/topic/board/${ID}$`) },
] as const;

export type ParsedDestination =
  | { kind: 'shellOutput' | 'shellInput' | 'shellResize' | 'shellAck'; id: string }
  | { kind: 'boardState'; id: string }
  | { kind: 'userNotifications' };

/** Null for a destination the service does not know. */
export function parseDestination(dest: string): ParsedDestination | null {
  if (dest === Destinations.userNotifications) return { kind: 'userNotifications' };
  for (const p of patterns) {
    const m = p.re.exec(dest);
    if (m) return { kind: p.kind, id: m[1] } as ParsedDestination;
  }
  return null;
}

/** Headers of events on a subscription (MESSAGE without output). */
export const RealtimeEvent = { refused: 'refused', closed: 'closed', presence: 'presence' } as const;
export type RealtimeEvent = (typeof RealtimeEvent)[keyof typeof RealtimeEvent];

/** Why a shell ended; the console words each through locales/<lng>/terminal.json `closed.<key>`. */
export const ShellCloseReason = {
  exited: 'shell.exited',
  closed: 'shell.closed',
  applyEnded: 'apply.ended',
  leaseExpired: 'lease.expired',
  boardReset: 'board.reset',
  /** A flash job started on the board: its files are being replaced (the serial console stays open). */
  boardFlashing: 'board.flashing',
  boardChanged: 'board.changed_hands',
  serviceStopping: 'service.stopping',
  /** The sign-in the shell was opened with ended (logout, revocation, displacement, expiry, deactivation). */
  sessionEnded: 'session.ended',
  /** The board's owner took the board back from this user (src/shared/share.ts). */
  shareRevoked: 'share.revoked',
  /** A guest of a joined shell was removed by its host (for that guest only). */
  shareGuestRemoved: 'share.guest_removed',
  /** The host stopped sharing a joined shell (for its guests only). */
  shareUninvited: 'share.uninvited',
} as const;
export type ShellCloseReason = (typeof ShellCloseReason)[keyof typeof ShellCloseReason];

/** Keys of refusals and ERROR frames. */
export const RealtimeErrorKey = {
  notFound: 'resource.not_found',
  forbidden: 'auth.forbidden',
  badFrame: 'stomp.bad_frame',
  unsupported: 'stomp.unsupported',
  unknownDestination: 'stomp.unknown_destination',
  notConnected: 'stomp.not_connected',
  timeout: 'stomp.connect_timeout',
  applyInvalid: 'apply.invalid',
  heartbeat: 'stomp.heartbeat_missed',
  ackOutOfRange: 'stomp.ack_out_of_range',
  slowConsumer: 'stomp.slow_consumer',
} as const;

export const shellResizeBody = z.object({
  cols: z.number().int().min(2).max(1000),
  rows: z.number().int().min(1).max(500),
});
export type ShellResizeBody = z.infer<typeof shellResizeBody>;

/** Body of MESSAGEs on /topic/board/{deviceId} (JSON). */
export const boardStateEvent = z.object({
  deviceId: z.string(),
  state: z.string(),
  at: z.string(),
  /** A stable key saying why, e.g. `board.reset`, `lease.expired`. */
  reason: z.string().optional(),
  /**
   * Attributes the board's machine said of itself just now (a riscv64 board's kernel, OS, ISA after a
   * boot or a flash): merged into what the console shows; the state is then the one it already had.
   */
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
});
export type BoardStateEvent = z.infer<typeof boardStateEvent>;

/** Body of MESSAGEs on /user/queue/notifications (JSON): the console shows them as toasts. */
export const userNotification = z.object({
  id: z.string(),
  /** Stable key the console words through locales, e.g. `lease.expiring`, `board.state`, `share.added`. */
  kind: z.string(),
  at: z.string(),
  level: z.enum(['info', 'success', 'warning', 'error']).default('info'),
  /** Values interpolated into the worded text (deviceId, minutes left, ...). */
  data: z.record(z.string(), z.unknown()).default({}),
});
export type UserNotification = z.infer<typeof userNotification>;
