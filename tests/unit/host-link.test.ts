// The board-host link (src/server/hosts/link.ts) between two real WebSockets on loopback: calls and
// their errors and progress, streams bounded by the reader's credit, a stream's failure reaching the
// other side, a dead link failing what waits on it, and frames that are not frames.
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { DriverError } from '#server/boards/driver.ts';
import {
  type CallHandler,
  decodeFrame,
  encodeFrame,
  Link,
  LinkClosedError,
  type LinkStream,
  STREAM_WINDOW,
  type StreamHandler,
} from '#server/hosts/link.ts';

let servers: WebSocketServer[] = [];
afterEach(() => {
  for (const s of servers) s.close();
  servers = [];
});

async function pair(host: {
  call?: CallHandler;
  stream?: StreamHandler;
}): Promise<{ service: Link; host: Link }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  servers.push(wss);
  await new Promise((r) => wss.once('listening', r));
  const accepted = new Promise<Link>((resolve) =>
    wss.once('connection', (ws) => resolve(new Link(ws, 'host', host))),
  );
  const ws = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  await new Promise((r) => ws.once('open', r));
  return { service: new Link(ws, 'service'), host: await accepted };
}

describe('the board-host link', () => {
  it('answers calls, carries progress, and keeps error keys', async () => {
    const { service } = await pair({
      call: async (m, a, ctx) => {
        if (m === 'add') return (a[0] as number) + (a[1] as number);
        if (m === 'slow') {
          ctx.progress({ percent: 50 });
          return 'done';
        }
        throw new DriverError('path.not_found', `no ${m}`);
      },
    });
    expect(await service.call('add', [2, 40])).toBe(42);
    const seen: unknown[] = [];
    expect(await service.call('slow', [], { onProgress: (p) => seen.push(p) })).toBe('done');
    expect(seen).toEqual([{ percent: 50 }]);
    await expect(service.call('nope')).rejects.toMatchObject({ key: 'path.not_found', message: 'no nope' });
  });

  it("holds a writer to the reader's credit, and delivers every byte in order", async () => {
    let hostSide: LinkStream | null = null;
    const { service } = await pair({
      stream: async (_k, _a, s) => {
        hostSide = s;
      },
    });
    const s = await service.open('sink');
    // Nobody reads on the host yet: the service side may send one window, then its writes wait.
    const total = 4 * STREAM_WINDOW;
    const data = Buffer.alloc(total);
    for (let i = 0; i < total; i++) data[i] = (i * 7) & 0xff;
    let written = 0;
    const writing = (async () => {
      for (let o = 0; o < total; o += 65536) {
        if (!s.write(data.subarray(o, o + 65536))) await new Promise((r) => s.once('drain', r));
        written = o + 65536;
      }
      s.end();
    })();
    await new Promise((r) => setTimeout(r, 300));
    expect(hostSide).not.toBeNull();
    // What left the writer is within the window plus the stream's own buffer.
    expect(written).toBeLessThanOrEqual(STREAM_WINDOW + 4 * 65536);
    expect(written).toBeLessThan(total);
    const chunks: Buffer[] = [];
    for await (const c of hostSide as unknown as LinkStream) chunks.push(c as Buffer);
    await writing;
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
  });

  it("ends the other side's stream with the error when one side fails it", async () => {
    const { service } = await pair({
      stream: async (_k, _a, s) => {
        s.destroy(new Error('disk on fire'));
      },
    });
    await expect(service.open('x')).rejects.toMatchObject({ key: 'driver.failed', message: 'disk on fire' });
  });

  it('fails calls and streams waiting on a link that dies, as a lost link', async () => {
    const { service, host } = await pair({ call: () => new Promise(() => {}) });
    const pending = service.call('forever', [], { timeoutMs: 0 });
    host.close(1001, 'host stopping');
    const err = (await pending.catch((e: unknown) => e)) as LinkClosedError;
    expect(err).toBeInstanceOf(LinkClosedError);
    expect(err.key).toBe('board.offline');
    await expect(service.open('x')).rejects.toBeInstanceOf(LinkClosedError);
  });

  it('refuses what is not a frame', () => {
    expect(decodeFrame(Buffer.from([0, 0]))).toBeNull();
    expect(decodeFrame(Buffer.from([0, 0, 0, 9, 1, 2]))).toBeNull();
    expect(decodeFrame(Buffer.concat([Buffer.from([0, 0, 0, 3]), Buffer.from('{x}')]))).toBeNull();
    expect(decodeFrame(Buffer.concat([Buffer.from([0, 0, 0, 2]), Buffer.from('{}')]))).toBeNull();
    const f = decodeFrame(encodeFrame({ t: 'ev', e: 'x' }, Buffer.from('payload')));
    expect(f?.h).toEqual({ t: 'ev', e: 'x' });
    expect(f?.data.toString()).toBe('payload');
  });
});
