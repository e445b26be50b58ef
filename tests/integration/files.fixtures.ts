// Fixtures of the files suites: the whole service with a lab file of one board, a user who leased and
// applied for it through the real lifecycle calls, a JSON caller, a multipart body builder, and raw
// HTTP over a real socket for the streaming tests (abort mid-upload, memory while streaming).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import YAML from 'yaml';
import type { Envelope } from '#shared/codes.ts';
import { LEASE_DURATIONS } from '#shared/constants.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

export interface Answer<T = any> extends Envelope<T> {
  status: number;
}

export async function post<T = any>(
  app: FastifyInstance,
  user: TestUser | null,
  url: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const res = await app.inject({
    method: 'POST',
    url,
    payload: payload as Record<string, unknown>,
    headers: { ...(user?.headers ?? {}), ...headers },
  });
  return { status: res.statusCode, ...(res.json() as Envelope<T>) };
}

/** A user holding a live lease and an open apply on the named board. */
export interface Holder {
  user: TestUser;
  applyId: string;
  deviceId: string;
}

export async function holdBoard(app: FastifyInstance, boardName: string, user?: TestUser): Promise<Holder> {
  const u = user ?? (await makeUser(app));
  const ends = new Date(app.clock.now().getTime() + LEASE_DURATIONS[0].ms).toISOString();
  const lease = await post(app, u, '/api/device/request-device', {
    requestDate: ends,
    filterReq: { name: boardName },
    serverName: `files-${boardName}`,
  });
  if (lease.code !== 20000) throw new Error(`request-device failed: ${lease.message}`);
  const apply = await post(app, u, '/api/device/apply-device', { deviceId: lease.data.deviceId });
  if (apply.code !== 20000) throw new Error(`apply-device failed: ${apply.message}`);
  return { user: u, applyId: apply.data.applyId, deviceId: lease.data.deviceId };
}

export interface FileLab {
  t: TestApp;
  /** Host directory that is the board's `/`. */
  hostRoot: string;
  boardName: string;
  /**
   * True where the board resolves its own links (a local board's file server runs inside it): a link
   * to a host path is then just a dangling link of the board, answered "not found".
   */
  linksResolveInBoard: boolean;
  /**
   * Gives what the test wrote from the host side to the board's own users (a local board's root is a
   * host uid range of its own; files the test made as host root would be nobody's inside).
   */
  settle(): void;
  close(): Promise<void>;
}

/** lchown every entry of `dir` owned by a uid below 65536 into the range starting at `base`. */
function shiftInto(dir: string, base: number): void {
  const walk = (p: string) => {
    const st = fs.lstatSync(p);
    if (st.uid < 65536 || st.gid < 65536) {
      fs.lchownSync(p, st.uid < 65536 ? base + st.uid : st.uid, st.gid < 65536 ? base + st.gid : st.gid);
      if (!st.isSymbolicLink() && st.mode & 0o6000) fs.chmodSync(p, st.mode & 0o7777);
    }
    if (st.isDirectory()) for (const n of fs.readdirSync(p)) walk(path.join(p, n));
  };
  walk(dir);
}

/** The service with a lab file declaring exactly `board` (a lab-file declaration object). */
export async function startLab(
  board: Record<string, unknown>,
  hostRootOf: (dataDir: string, app: FastifyInstance) => string,
  env: Record<string, string> = {},
): Promise<FileLab> {
  const dir = fs.mkdtempSync('/tmp/bianbu-files-lab-');
  const labFile = path.join(dir, 'lab.yaml');
  fs.writeFileSync(labFile, YAML.stringify({ boards: [board] }));
  const t = await makeTestApp({
    env: { BIANBU_LAB_FILE: labFile, BIANBU_LEASE_TICK_MS: '0', ...env } as never,
  });
  await t.app.boards.driver(String(board.id)).probe(20_000);
  return {
    t,
    hostRoot: hostRootOf(t.dataDir, t.app),
    boardName: String(board.name),
    linksResolveInBoard: board.driver === 'local',
    settle: () => {
      const d = t.app.boards.driver(String(board.id)) as { hostUid?: number | null; rootPath?: string };
      if (d.hostUid && d.rootPath) shiftInto(d.rootPath, d.hostUid);
    },
    close: async () => {
      await t.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A multipart body: fields first, then files, as the console sends it. */
export function multipart(
  fields: Record<string, string>,
  files: { name: string; data: Buffer | string; field?: string }[],
): { body: Buffer; headers: Record<string, string> } {
  const boundary = `----bianbu${Math.random().toString(16).slice(2)}`;
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  for (const f of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${f.field ?? 'file'}"; filename="${f.name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
    );
    parts.push(Buffer.isBuffer(f.data) ? f.data : Buffer.from(f.data));
    parts.push(Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    body: Buffer.concat(parts),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

export function multipartHead(fields: Record<string, string>, fileName: string) {
  const boundary = `----bianbu${Math.random().toString(16).slice(2)}`;
  let head = '';
  for (const [k, v] of Object.entries(fields))
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  head += `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return {
    head: Buffer.from(head),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

export async function listen(app: FastifyInstance): Promise<number> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

/** Deterministic bytes, generated chunk by chunk so the test itself never holds the whole file. */
export function* patternChunks(total: number, chunk = 1 << 20): Generator<Buffer> {
  let sent = 0;
  let n = 0;
  while (sent < total) {
    const size = Math.min(chunk, total - sent);
    const b = Buffer.allocUnsafe(size);
    for (let i = 0; i < size; i += 4) b.writeUInt32LE((n++ * 2654435761) >>> 0, i);
    sent += size;
    yield b;
  }
}

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export function rawRequest(
  port: number,
  opts: {
    path: string;
    headers: Record<string, string | number>;
    body?: Buffer | Iterable<Buffer> | Readable;
  },
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: opts.path, headers: opts.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const body = opts.body;
    if (!body) return req.end();
    if (Buffer.isBuffer(body)) return req.end(body);
    if ('pipe' in body) return void (body as Readable).pipe(req);
    const it = (body as Iterable<Buffer>)[Symbol.iterator]();
    const pump = () => {
      for (;;) {
        const next = it.next();
        if (next.done) return req.end();
        if (!req.write(next.value)) return void req.once('drain', pump);
      }
    };
    pump();
  });
}

/** Files left by an interrupted write beside the target (the drivers' temporary names). */
export function leftovers(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.tmp') || n.includes('.bianbu-') || n.startsWith('.~'));
}

export const rssMiB = () => process.memoryUsage().rss / 1048576;
