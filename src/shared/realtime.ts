// The realtime channel's destinations, declared once for server, console and tests.
//
// STOMP 1.2 over WebSocket at `/ws`. The console opens one connection per tab:
//   CONNECT  headers: accept-version 1.2, token (access token), applyId (may be empty before an apply),
//            heart-beat "20000,0" (the console sends every 20 s, the server sends none).
//   CONNECTED headers: version 1.2, heart-beat "0,<ms>", session, server.
// An invalid token or applyId answers ERROR (headers `message`, `code` (the envelope code, e.g. 50008)
// and `error` (a stable key)) and the socket is closed. So are malformed frames.
//
// Destinations (`{shellId}` is the clientId answered by apply-device-shell):
//
// | destination                        | frame     | who may use it                                  |
// |------------------------------------|-----------|-------------------------------------------------|
// | /topic/shell/{shellId}             | SUBSCRIBE | the user whose apply opened the shell           |
// | /app/shell/{shellId}/input         | SEND      | a connection subscribed to that shell           |
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
// Refusals are not fatal so that one stale topic never takes down the tab's other subscriptions.
//
// Flow control: the console acknowledges the absolute offset it has *processed* (xterm parsed it)
// with SEND /app/shell/{id}/ack, header `offset`. When a shell's unacknowledged bytes exceed
// SHELL_FLOW.highWater the server pauses the PTY (the program blocks on write); it resumes below
// SHELL_FLOW.lowWater. A shell nobody watches keeps its last acknowledgement, so output produced while
// the console is away waits in the ring instead of being lost.
import { z } from 'zod';
import { DEFAULT_STOMP_LIMITS } from './stomp-codec.ts';

export const WS_PATH = '/ws';

export const STOMP_LIMITS = DEFAULT_STOMP_LIMITS;

/** Largest input SEND the console makes; a paste is split into chunks of this size. */
export const SHELL_INPUT_CHUNK_BYTES = 64 * 1024;

export const SHELL_FLOW = {
  /** Bytes of scrollback each shell keeps on the server, replayed on resubscribe. */
  ringBytes: 2 * 1024 * 1024,
  highWater: 1024 * 1024,
  lowWater: 256 * 1024,
  /** The console acknowledges at least this often (bytes processed) and whenever xterm goes idle. */
  ackEveryBytes: 64 * 1024,
} as const;

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
export const RealtimeEvent = { refused: 'refused', closed: 'closed' } as const;
export type RealtimeEvent = (typeof RealtimeEvent)[keyof typeof RealtimeEvent];

/** Why a shell ended; the console words each through locales/<lng>/terminal.json `closed.<key>`. */
export const ShellCloseReason = {
  exited: 'shell.exited',
  closed: 'shell.closed',
  applyEnded: 'apply.ended',
  leaseExpired: 'lease.expired',
  boardReset: 'board.reset',
  boardChanged: 'board.changed_hands',
  serviceStopping: 'service.stopping',
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
