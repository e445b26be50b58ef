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
// | 4503 | board.booting                   | the board's machine is off for a moment (a flash, a restore) |
// | 4000 | vnc.closed                      | the board's VNC server closed the connection               |
// | 1001 | service.stopping                | the service is shutting down                               |
//
// Codes 4401, 4404, 4429 and 4503 are final (the console does not reconnect); the others (and a lost
// connection) are retried with backoff while the pane is open. 4410 is final too, except for a board
// that is being reset or flashed, and so is 4503 for a board whose machine is about to start
// (VNC_RETRY_REASONS): its desktop comes back, so the pane retries.
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
  /** A riscv64 board's machine is off between a flash's or restore's power-off and power-on. */
  booting: 'board.booting',
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
export const VNC_RETRY_REASONS: readonly string[] = ['board.reset', 'board.flashing', VncCloseReason.booting];

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
  /** The board declares no code-server, nothing answers on its port, and it starts none itself. */
  noCodeServer: 'code.none',
  /** Something answers on the board's code-server port, but this service runs no code proxy (BIANBU_CODE_PORT=off). */
  codeProxyOff: 'code.proxy_off',
  /** The service is installing code-server on its host now (a first start); the window offers it after. */
  codeInstalling: 'code.installing',
  /**
   * A riscv64 (QEMU) board with nothing on its code port: code-server publishes no riscv64 build this
   * service can install into the board, so the built-in editor stands in.
   */
  codeNoRiscvBuild: 'code.no_riscv_build',
  /** The proxy runs, but has no host name apart from the console's address (BIANBU_CODE_HOST unset). */
  codeNoOwnHost: 'code.no_own_host',
} as const;

// ---- The code window: the /code/ reverse proxy on its own origin
//
// The board's web app (code-server, or whatever answers on VNC_LIMITS.codeServerPort) runs JavaScript
// the board controls, so it never runs on the console's origin, nor on its host name (browsers share a
// host's cookies across ports): the service answers /code/ on a second listener (BIANBU_CODE_PORT, by
// default the console's port + 1) and only on the code host names (src/server/desktop/code-hosts.ts): BIANBU_CODE_HOST or
// BIANBU_CODE_ORIGIN, `*.code.example.com` giving each apply a subdomain of its own; unset, for a
// console on localhost or 127.0.0.1, `{label}.code.localhost` (label = `a` + 24 hex of SHA-256(applyId)).
// A console on another name without either gets code.no_own_host instead of a ticket.
// An iframe cannot send the sign-in token, so the console asks for a ticket:
//
//   codeTicket {applyId} → {url, expiresAt}
//     url = {the apply's code origin}/code/{applyId}/?ticket={one-time ticket}   (CODE_LIMITS.ticketTtlMs)
//
// The console puts that url in its iframe (or opens it in a new tab). The code listener takes the
// ticket once — it is bound to the user's sign-in, the apply and the code origin — makes a code session
// with a random key, sets the HttpOnly, host-only cookie CODE_COOKIE for the path /code/{applyId}/{key}/
// (`SameSite=None; Secure; Partitioned` over https and on *.localhost, so the console's iframe on another
// site carries it; `SameSite=Lax` over plain http elsewhere, where only a same-site console's iframe or a
// tab does), and answers 303 to /code/{applyId}/{key}/ so the ticket leaves the address bar and the history.
// Requests under that path need both the key (in the path) and the cookie: a page of another board
// on the same code origin knows neither. Every request and upgrade re-checks the sign-in and the apply
// (cached CODE_LIMITS.liveCheckMs at most) and goes to the board's port with the prefix stripped.
// Local boards on a host with code-server installed (scripts/install-code-server.sh) start it inside
// the board, as its user, on the first connection that finds nothing on that port (and again after it
// died); desktopStatus says `code.available` for them before it runs. Elsewhere only what already
// answers there is shown.
//
// Refusals answer an HTTP status and a text body `{key}\n{message}`; WebSockets close with the same
// codes as the VNC bridge (VncClose) and these reason keys, or the apply's own (apply.ended,
// lease.expired, board.reset, board.flashing, board.changed_hands, share.revoked).
//
// | status / close | key                   | when                                                        |
// |----------------|-----------------------|-------------------------------------------------------------|
// | 421            | code.wrong_host       | a request to the code listener on any other host name (the console's) |
// | 503 (codeTicket) | code.no_own_host    | no code host apart from the console's address (set BIANBU_CODE_HOST) |
// | 401 / 4401     | code.ticket_invalid   | a ticket unknown, used, expired, or for another apply/origin |
// | 401 / 4401     | code.session_missing  | no key, an unknown key, or no matching cookie                |
// | 401 / 4401     | session.ended (and the sign-in's own keys) | the sign-in was revoked, expired or ended |
// | 404 / 4404     | apply.not_found (and the apply's keys) | the apply is not the caller's or no longer live |
// | 403            | code.origin           | an upgrade (or a non-GET) from another Origin                |
// | 410 / 4410     | apply.ended, board.reset, … | the apply, lease or board ended while it was open      |
// | 413            | code.too_big          | a request body over maxRequestBytes                          |
// | 429 / 4429     | code.too_many         | more than requestsPerApply / socketsPerApply open           |
// | 502 / 4503     | code.unavailable      | nothing answers on the board's port, or it broke the answer   |
// | 502            | code.redirect_refused | the board redirects outside its own /code/ path              |
// | 504            | code.timeout          | the board sent no answer head within headersTimeoutMs        |

export const CODE_PATH = '/code';
export const CODE_TICKET_PARAM = 'ticket';
export const CODE_COOKIE = 'bianbu_code';

export const CodeReason = {
  ticketInvalid: 'code.ticket_invalid',
  sessionMissing: 'code.session_missing',
  origin: 'code.origin',
  tooBig: 'code.too_big',
  tooMany: 'code.too_many',
  unavailable: 'code.unavailable',
  redirectRefused: 'code.redirect_refused',
  timeout: 'code.timeout',
  proxyOff: 'code.proxy_off',
  wrongHost: 'code.wrong_host',
  noOwnHost: 'code.no_own_host',
} as const;

export const CODE_LIMITS = {
  /** How long a ticket may wait before the iframe takes it. */
  ticketTtlMs: 30_000,
  /** Tickets one user may hold unused; older ones are dropped. */
  ticketsPerUser: 16,
  /** How long a request may trust the last check of the sign-in and the apply. */
  liveCheckMs: 1_000,
  /** A code session nobody used for this long is forgotten (the console asks for a new ticket). */
  sessionIdleMs: 60 * 60_000,
  /** Kept-alive connections to the board per apply (each is one relay into the board). */
  connectionsPerApply: 6,
  /** HTTP requests open at once per apply (the others are refused with 429). */
  requestsPerApply: 64,
  /** WebSockets open at once per apply. */
  socketsPerApply: 16,
  /** Largest request body sent to the board. */
  maxRequestBytes: 64 * 1024 * 1024,
  /** The board must send a response head within this. */
  headersTimeoutMs: 30_000,
  /** A request or response body that moves no byte for this long is cut. */
  idleTimeoutMs: 120_000,
  /** Largest WebSocket message either way. */
  maxMessageBytes: 16 * 1024 * 1024,
  /** Bytes queued towards a browser's WebSocket before the board side is paused. */
  highWaterBytes: 1024 * 1024,
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
  defineCall({
    name: 'codeTicket',
    method: 'POST',
    path: '/api/device/code-ticket',
    needsApply: true,
    request: z.object({ applyId: idString({ max: 128 }) }),
    response: z.object({ url: z.string().url(), expiresAt: z.iso.datetime() }),
    summary:
      'A one-time URL (CODE_LIMITS.ticketTtlMs) that opens the board’s code-server on the code origin in an iframe or a tab',
  }),
] as const;
