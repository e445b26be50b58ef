// The console's realtime client against a small STOMP server: an ERROR carrying a session code
// (50008/50012/50014, sent when the sign-in ends while the socket is open) ends the client for good
// and asks to sign in again, as the HTTP calls do; any other ERROR is followed by a reconnect.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { WebSocketServer } from 'ws';
import { parseMessage, serializeFrame } from '#shared/stomp-codec.ts';
import { installBrowserGlobals, listenLoopback } from './realtime-browser.fixtures.ts';

const store = new Map<string, string>([['token', 'bbt_test']]);
let server: WebSocketServer;
let port = 0;
let removeGlobals: () => void;
let connects = 0;
/** What the server answers after CONNECTED: the ERROR headers it sends, then it closes. */
let errorHeaders: Record<string, string> = {};

beforeAll(async () => {
  removeGlobals = installBrowserGlobals(store);
  ({ server, port } = await listenLoopback());
  server.on('connection', (ws) => {
    connects++;
    ws.on('message', (data: Buffer) => {
      for (const f of parseMessage(data)) {
        if (f.command !== 'CONNECT' && f.command !== 'STOMP') continue;
        ws.send(serializeFrame({ command: 'CONNECTED', headers: { version: '1.2', 'heart-beat': '0,0' } }));
        // The sign-in ends a moment later, while the socket is open.
        setTimeout(() => {
          ws.send(serializeFrame({ command: 'ERROR', headers: errorHeaders, body: 'ended' }));
          ws.close(1008);
        }, 50);
      }
    });
  });
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  removeGlobals();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the realtime client when the sign-in ends', () => {
  beforeEach(() => {
    connects = 0;
  });

  it.each([
    ['50008', 'auth.token_illegal'],
    ['50012', 'auth.token_displaced'],
    ['50014', 'auth.token_expired'],
  ])('stops for good after an ERROR with code %s and asks to sign in again', async (code, key) => {
    const { RealtimeClient, realtimeState } = await import('#web/realtime/client.ts');
    const { sessionEnded, closeReLogin } = await import('#web/state/notices.ts');
    closeReLogin();
    errorHeaders = { code, error: key, message: 'ended' };
    const client = new RealtimeClient(() => `ws://127.0.0.1:${port}/ws`);
    client.start();
    // Past the reconnect delay (1 s) and a tick of the connection checker (every 2 s).
    await sleep(2500);
    expect(connects).toBe(1);
    expect(realtimeState.status).toBe('ended');
    expect(realtimeState.lastError).toBe(key);
    expect(sessionEnded).toMatchObject({ open: true, code: Number(code) });
    await client.stop();
  });

  it('reconnects after an ERROR that does not end the session', async () => {
    const { RealtimeClient, realtimeState } = await import('#web/realtime/client.ts');
    const { sessionEnded, closeReLogin } = await import('#web/state/notices.ts');
    closeReLogin();
    errorHeaders = { code: '40000', error: 'stomp.ack_out_of_range', message: 'bad ack' };
    const client = new RealtimeClient(() => `ws://127.0.0.1:${port}/ws`);
    client.start();
    await sleep(2500);
    expect(connects).toBeGreaterThanOrEqual(2);
    expect(realtimeState.status).not.toBe('ended');
    expect(sessionEnded.open).toBe(false);
    await client.stop();
  });

  it('ignores the ERROR that ends the socket of a tab that is logging out', async () => {
    const { RealtimeClient, realtimeState } = await import('#web/realtime/client.ts');
    const { sessionEnded, closeReLogin } = await import('#web/state/notices.ts');
    closeReLogin();
    errorHeaders = { code: '50008', error: 'auth.token_illegal', message: 'ended' };
    const client = new RealtimeClient(() => `ws://127.0.0.1:${port}/ws`);
    client.start();
    while (realtimeState.status !== 'connected') await sleep(5);
    // Logout stops the client first; the service's ERROR for the revoked token arrives after.
    const stopped = client.stop();
    await sleep(1500);
    await stopped;
    expect(sessionEnded.open).toBe(false);
    expect(realtimeState.status).toBe('idle');
    expect(connects).toBe(1);
  });
});
