// The console's realtime client (stompjs underneath) against a small STOMP server: MESSAGE frames for
// its subscriptions reach their handlers without passing through stompjs's byte-by-byte parser, the
// rest (CONNECTED, text frames, frames of an unknown subscription) still through it; after the socket
// drops, the subscription made again on the next one is served the same way.
import { Parser } from '@stomp/stompjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebSocketServer, WebSocket as WsSocket } from 'ws';
import { parseMessage, serializeFrame } from '#shared/stomp-codec.ts';
import { installBrowserGlobals, listenLoopback } from './realtime-browser.fixtures.ts';

let server: WebSocketServer;
let port = 0;
let removeGlobals: () => void;
const sockets: WsSocket[] = [];
/** Subscription ids the server saw, in order. */
const subscribed: string[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function send(ws: WsSocket, subscription: string, body: string | Uint8Array, binary = true) {
  const frame = serializeFrame({
    command: 'MESSAGE',
    headers: { subscription, 'message-id': '1', destination: '/topic/x', offset: '7' },
    body,
  });
  ws.send(binary ? frame : Buffer.from(frame).toString('utf8'), { binary });
}

beforeAll(async () => {
  removeGlobals = installBrowserGlobals();
  ({ server, port } = await listenLoopback());
  server.on('connection', (ws) => {
    sockets.push(ws);
    ws.on('message', (data: Buffer) => {
      for (const f of parseMessage(data)) {
        if (f.command === 'CONNECT')
          ws.send(serializeFrame({ command: 'CONNECTED', headers: { version: '1.2', 'heart-beat': '0,0' } }));
        if (f.command === 'SUBSCRIBE') subscribed.push(f.headers.id);
        if (f.command === 'DISCONNECT')
          ws.send(serializeFrame({ command: 'RECEIPT', headers: { 'receipt-id': f.headers.receipt } }));
      }
    });
  });
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  removeGlobals();
});

describe('the realtime client decoding its own MESSAGE frames', () => {
  it('hands shell output to the subscription without stompjs parsing it, before and after a reconnect', async () => {
    const parsed: number[] = [];
    const original = Parser.prototype.parseChunk;
    Parser.prototype.parseChunk = function (segment, appendMissingNULLonIncoming) {
      parsed.push(typeof segment === 'string' ? segment.length : segment.byteLength);
      return original.call(this, segment, appendMissingNULLonIncoming);
    };
    const { RealtimeClient, realtimeState } = await import('#web/realtime/client.ts');
    const client = new RealtimeClient(() => `ws://127.0.0.1:${port}/ws`);
    const got: Array<{ body: string; bytes: number[]; offset: string }> = [];
    try {
      client.subscribe('/topic/x', (m) =>
        got.push({ body: m.body, bytes: [...m.binaryBody], offset: m.headers.offset }),
      );
      client.start();
      while (subscribed.length < 1) await sleep(5);
      const id = subscribed[0];
      expect(realtimeState.status).toBe('connected');
      const afterConnect = parsed.length; // CONNECTED went through stompjs
      expect(afterConnect).toBeGreaterThanOrEqual(1);

      const big = new Uint8Array(100_000).fill(0x61);
      big[5] = 0; // a NUL in the body: the content-length frames it
      send(sockets[0], id, big);
      send(sockets[0], id, 'text frame', false); // a text message: stompjs's
      send(sockets[0], 'nobody', 'stray'); // no such subscription: stompjs's (it drops it)
      while (got.length < 2) await sleep(5);
      await sleep(50);
      expect(got).toHaveLength(2);
      expect(got[0].bytes).toEqual([...big]);
      expect(got[0].offset).toBe('7');
      expect(got[1].body).toBe('text frame');
      // stompjs parsed the text frame and the stray one, not the 100 KB frame.
      expect(parsed.slice(afterConnect).every((n) => n < 1000)).toBe(true);
      expect(parsed.length - afterConnect).toBe(2);

      // The socket drops: the client reconnects (1 s) and subscribes again under the same id.
      sockets[0].terminate();
      while (subscribed.length < 2) await sleep(20);
      expect(subscribed[1]).toBe(id);
      const before = parsed.length;
      send(sockets[1], id, 'again');
      while (got.length < 3) await sleep(5);
      expect(got[2].body).toBe('again');
      expect(parsed.length).toBe(before);
    } finally {
      Parser.prototype.parseChunk = original;
      await client.stop();
    }
  }, 10_000);
});
