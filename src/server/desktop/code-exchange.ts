// One HTTP exchange of the code proxy (code-proxy.ts) with a board's code-server, and the pieces the
// proxy is built from: refusals (status, WebSocket close code, reason), the /code/ route, the apply's
// keep-alive agent over the board's relays. `forwardHttp` sends a request to the board with its body
// streamed both ways under backpressure, head and idle timeouts and a size cap, and rewrites the
// board's answer headers (code-headers.ts) so nothing leaves the apply's path.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { AppError } from '#server/errors.ts';
import { type CODE_LIMITS, CODE_PATH, CodeReason, VncClose } from '#shared/desktop.ts';
import { codeCsp, headersFromBoard, headersToBoard, RedirectRefused } from './code-headers.ts';
import type { CodeSession } from './code-sessions.ts';

export type CodeLimits = { [K in keyof typeof CODE_LIMITS]: number };

/** A refusal: HTTP status, WebSocket close code, reason key and an English line. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly close: number,
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

export const refusalOf = (err: unknown, status: number, close: number, fallbackKey: string): Refusal => {
  if (err instanceof Refusal) return err;
  if (err instanceof AppError) return new Refusal(status, close, err.key, err.message);
  // Anything else (a driver or storage failure) is named by the key only; its text stays in the log.
  return new Refusal(status, close, fallbackKey, 'The code session could not be served');
};

export interface Route {
  applyId: string;
  key: string | null;
  /** The board's path, from "/" (prefix stripped). */
  rest: string;
  search: string;
}

/** `/code/{applyId}/{key}/{rest}` split, or null when the path is not the proxy's. */
export function codeRouteOf(url: string | undefined): Route | null {
  const raw = url ?? '';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const search = q < 0 ? '' : raw.slice(q);
  if (!path.startsWith(`${CODE_PATH}/`)) return null;
  const parts = path.slice(CODE_PATH.length + 1).split('/');
  const applyId = parts[0];
  if (!applyId || !/^[A-Za-z0-9_-]{1,128}$/.test(applyId)) return null;
  const key = parts.length > 2 || (parts.length === 2 && parts[1] !== '') ? parts[1] : null;
  if (key !== null && !/^[A-Za-z0-9_-]{1,64}$/.test(key)) return null;
  return { applyId, key, rest: key === null ? '/' : `/${parts.slice(2).join('/')}`, search };
}

/** A board relay as the socket an http.Agent and ws expect (net.Socket's knobs that a pipe lacks). */
export function socketLike(d: Duplex): Duplex {
  const s = d as Duplex & Record<string, unknown>;
  for (const k of ['setKeepAlive', 'setNoDelay', 'setTimeout', 'ref', 'unref'])
    if (typeof s[k] !== 'function') s[k] = () => s;
  d.on('error', () => d.destroy());
  return d;
}

/**
 * Kept-alive HTTP connections to one board's port. Each connection is a relay `connectPort` opens
 * (a process in the board's network namespace, or an SSH channel), so reusing them matters.
 */
export class BoardAgent extends http.Agent {
  opened = 0;
  private readonly idle = new WeakMap<Duplex, NodeJS.Timeout>();
  constructor(
    private readonly connect: () => Promise<Duplex>,
    max: number,
    // Below the 5 s after which Node servers (code-server among them) close an idle kept-alive
    // connection: a relay reused just as the board closes it fails the request with a 502 (the likely
    // cause of one seen on code-server's walkthrough images under load). undici keeps 4 s for this.
    private readonly idleMs = 4_000,
  ) {
    super({ keepAlive: true, maxSockets: max, maxTotalSockets: max, maxFreeSockets: max });
  }
  override createConnection(
    _opts: unknown,
    cb?: (err: Error | null, socket: Duplex) => void,
  ): Duplex | undefined {
    this.connect().then(
      (d) => {
        this.opened++;
        cb?.(null, socketLike(d));
      },
      (err) => cb?.(err as Error, null as unknown as Duplex),
    );
    return undefined;
  }
  // The base methods tune a net.Socket (knobs socketLike stubs) and add/remove the free socket's
  // error listener; an idle relay is closed after idleMs here instead of by a socket timeout.
  override keepSocketAlive(socket: Duplex): boolean {
    const t = setTimeout(() => socket.destroy(), this.idleMs);
    t.unref();
    this.idle.set(socket, t);
    super.keepSocketAlive(socket as never);
    return true;
  }
  override reuseSocket(socket: Duplex, req: http.ClientRequest): void {
    clearTimeout(this.idle.get(socket));
    super.reuseSocket(socket as never, req);
  }
  /** Connections open now (busy and idle). */
  count(): number {
    let n = 0;
    for (const list of Object.values(this.sockets)) n += list?.length ?? 0;
    for (const list of Object.values(this.freeSockets)) n += list?.length ?? 0;
    return n;
  }
}

export interface Exchange {
  session: string;
  res: ServerResponse;
  upstream: http.ClientRequest | null;
}

export interface Pair {
  session: string;
  browser: WebSocket;
  board: WebSocket;
}

/** What an apply has open through the proxy. */
export interface ApplyOpen {
  deviceId: string;
  agent: BoardAgent;
  exchanges: Set<Exchange>;
  pairs: Set<Pair>;
}

export const sendable = (code: number) =>
  (code >= 3000 && code <= 4999) || [1000, 1001, 1003, 1007, 1008, 1009, 1010, 1011].includes(code);

export function forwardHttp(
  ctx: { limits: CodeLimits; boardPort: number; prefix: string },
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  s: CodeSession,
  a: ApplyOpen,
): void {
  const { prefix } = ctx;
  const ex: Exchange = { session: s.key, res, upstream: null };
  a.exchanges.add(ex);
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > ctx.limits.maxRequestBytes) {
    a.exchanges.delete(ex);
    refuseHttp(res, new Refusal(413, 0, CodeReason.tooBig, 'The request body is too large'), s);
    return;
  }
  const host = req.headers.host ?? new URL(s.codeOrigin).host;
  const upstream = http.request({
    agent: a.agent,
    host: '127.0.0.1',
    port: ctx.boardPort,
    method: req.method,
    path: `${route.rest}${route.search}`,
    headers: headersToBoard(req.headers, {
      proto: s.codeOrigin.split(':')[0],
      host,
      prefix,
    }),
  });
  ex.upstream = upstream;
  let idle: NodeJS.Timeout | null = null;
  const finish = () => {
    a.exchanges.delete(ex);
    if (idle) clearTimeout(idle);
  };
  const stall = () => {
    if (idle) clearTimeout(idle);
    idle = setTimeout(() => {
      upstream.destroy();
      if (!res.headersSent)
        refuseHttp(res, new Refusal(504, 0, CodeReason.timeout, 'The board did not answer in time'), s);
      else res.destroy();
    }, ctx.limits.idleTimeoutMs);
    idle.unref();
  };
  const head = setTimeout(() => {
    upstream.destroy();
    refuseHttp(res, new Refusal(504, 0, CodeReason.timeout, 'The board did not answer in time'), s);
  }, ctx.limits.headersTimeoutMs);
  head.unref();
  res.once('close', () => {
    clearTimeout(head);
    finish();
    // The browser went away (or the answer ended): nothing more to read from the board for it.
    if (!res.writableFinished) upstream.destroy();
  });
  let sent = 0;
  req.on('data', (chunk: Buffer) => {
    sent += chunk.length;
    stall();
    if (sent > ctx.limits.maxRequestBytes) {
      upstream.destroy();
      req.unpipe(upstream);
      refuseHttp(res, new Refusal(413, 0, CodeReason.tooBig, 'The request body is too large'), s, true);
    }
  });
  req.pipe(upstream);
  upstream.on('error', (err) => {
    clearTimeout(head);
    if (!res.headersSent)
      refuseHttp(res, refusalOf(err, 502, VncClose.unavailable, CodeReason.unavailable), s);
    else res.destroy();
  });
  upstream.on('response', (up) => {
    clearTimeout(head);
    let headers: http.OutgoingHttpHeaders;
    try {
      headers = headersFromBoard(up.headers, {
        codeOrigin: s.codeOrigin,
        consoleOrigin: s.consoleOrigin,
        prefix,
        requestPath: route.rest,
        boardHosts: [`127.0.0.1:${ctx.boardPort}`, `localhost:${ctx.boardPort}`],
      });
    } catch (err) {
      up.destroy();
      upstream.destroy();
      const where = err instanceof RedirectRefused ? err.message.slice(0, 200) : '';
      return refuseHttp(
        res,
        new Refusal(502, 0, CodeReason.redirectRefused, `The board redirected outside its path: ${where}`),
        s,
      );
    }
    res.writeHead(up.statusCode ?? 502, up.statusMessage, headers);
    stall();
    up.on('data', stall);
    up.on('error', () => res.destroy());
    up.pipe(res);
  });
}

export function refuseHttp(res: ServerResponse, r: Refusal, s?: CodeSession, closeAfter = false): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `${r.key}\n${r.message}\n`;
  res.writeHead(r.status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy':
      `default-src 'none'; ${s ? codeCsp(s.consoleOrigin).split(';')[0] : ''}`.trim(),
    'x-code-reason': r.key,
    ...(closeAfter ? { connection: 'close' } : {}),
  });
  res.end(body);
}
