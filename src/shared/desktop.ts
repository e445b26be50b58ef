// The board's desktop (VNC) and its VS Code (code-server), as the console reaches them.
//
// How the console uses it: the VNC pane first asks `desktopStatus` (payload applyId) whether the
// board has a desktop and a code-server; with a desktop it opens a WebSocket to
//
//   /vnc/{applyId}        subprotocols: "binary", "bianbu.token.<the sign-in token>"
//
// (a browser cannot set headers on a WebSocket; non-browser clients may send the `token` header
// instead). The service authorises it like the realtime channel — Origin, token, and a live apply of
// the caller's on that board — then relays RFB bytes both ways between the socket (binary messages)
// and the board's VNC server (a local board's desktop, started on first use; an ssh board's VNC port
// through its SSH connection). The server selects the "binary" subprotocol.
//
// The bridge closes with a code and a stable reason key the console words (desktop.json close.*):
//
// | code | reason key                      | when                                                       |
// |------|---------------------------------|------------------------------------------------------------|
// | 4401 | auth.required / session.ended   | no token, a revoked/expired/displaced sign-in, or it ended |
// | 4404 | apply.not_found (and the apply's own keys) | not the caller's, closed, or lease over           |
// | 4410 | apply.ended, lease.expired, board.reset, board.flashing, board.changed_hands, share.revoked | the apply, lease or board ended the session (the same paths that close shells) |
// | 4429 | vnc.too_many                    | more than VNC_LIMITS.sessionsPerApply open on one apply     |
// | 4503 | vnc.unavailable                 | the board has no desktop, or it did not answer             |
// | 4000 | vnc.closed                      | the board's VNC server closed the connection               |
// | 1001 | service.stopping                | the service is shutting down                               |
//
// Codes 4401, 4404, 4429 and 4503 are final (the console does not reconnect); the others (and a lost
// connection) are retried with backoff while the pane is open. 4410 is final too, except for a board
// that is being reset or flashed (VNC_RETRY_REASONS): its desktop comes back, so the pane retries.
//
// Flow control: the service holds at most VNC_LIMITS.highWaterBytes queued towards a browser; above
// it the board side is paused until the browser has read down to lowWaterBytes. A browser message
// larger than maxMessageBytes closes the socket (1009). A client that stops answering pings for
// pingMs twice is cut.
import { z } from 'zod';
import { defineCall } from './http.ts';
import { idString } from './ids.ts';

export const VNC_PATH = '/vnc';
export const VNC_TOKEN_PROTOCOL = 'bianbu.token.';
export const VNC_BINARY_PROTOCOL = 'binary';

export const VncClose = {
  auth: 4401,
  notFound: 4404,
  ended: 4410,
  tooMany: 4429,
  unavailable: 4503,
  closed: 4000,
} as const;

export const VncCloseReason = {
  authRequired: 'auth.required',
  sessionEnded: 'session.ended',
  applyNotFound: 'apply.not_found',
  tooMany: 'vnc.too_many',
  unavailable: 'vnc.unavailable',
  closed: 'vnc.closed',
  serviceStopping: 'service.stopping',
} as const;

/** Close codes after which reconnecting cannot help. */
export const VNC_FINAL_CODES: readonly number[] = [
  VncClose.auth,
  VncClose.notFound,
  VncClose.tooMany,
  VncClose.unavailable,
  VncClose.ended,
];

/** Reasons of a 4410 after which the desktop comes back (the console keeps retrying). */
export const VNC_RETRY_REASONS: readonly string[] = ['board.reset', 'board.flashing'];

export const VNC_LIMITS = {
  sessionsPerApply: 8,
  highWaterBytes: 1024 * 1024,
  lowWaterBytes: 256 * 1024,
  maxMessageBytes: 1024 * 1024,
  pingMs: 30_000,
  /** The board's VNC port for drivers reached by TCP (ssh boards). */
  tcpPort: 5900,
  /** code-server's port on a board that runs one. */
  codeServerPort: 8080,
} as const;

/** noVNC's quality and compression levels (0..9); quality 5 is the spec's default. */
export const VNC_QUALITY_RANGE = { min: 0, max: 9 } as const;

export const DesktopUnavailable = {
  /** The board's driver has no desktop (a local board on a host without Xvnc, an ssh board without VNC). */
  noDesktop: 'desktop.none',
  /** The board declares no code-server, or nothing answers on its port. */
  noCodeServer: 'code.none',
} as const;

const part = z.object({ available: z.boolean(), reason: z.string().optional() });

export const desktopCalls = [
  defineCall({
    name: 'desktopStatus',
    method: 'POST',
    path: '/api/device/desktop-status',
    needsApply: true,
    request: z.object({ applyId: idString({ max: 128 }) }),
    response: z.object({ vnc: part, code: part }),
    summary: 'Whether the board of an apply has a desktop (VNC at /vnc/{applyId}) and a code-server',
  }),
] as const;
