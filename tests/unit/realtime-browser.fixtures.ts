// What the console's realtime client needs of a browser when it runs in Node: the `ws` WebSocket, a
// token in localStorage, a cookie jar and a location; and a WebSocket server on loopback for a test
// to speak STOMP from.
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';

const GLOBALS = ['WebSocket', 'localStorage', 'document', 'window'] as const;

/** Installs the globals; the answer removes them again. */
export function installBrowserGlobals(store = new Map<string, string>([['token', 'bbt_test']])): () => void {
  Object.assign(globalThis, {
    WebSocket,
    localStorage: {
      getItem: (k: string) => store.get(k) ?? null,
      setItem: (k: string, v: string) => void store.set(k, v),
      removeItem: (k: string) => void store.delete(k),
    },
    document: { cookie: '' },
    window: { location: { protocol: 'http:', host: 'localhost', pathname: '/workbench' } },
  });
  return () => {
    for (const k of GLOBALS) delete (globalThis as Record<string, unknown>)[k];
  };
}

/** A WebSocket server listening on 127.0.0.1 at a free port. */
export async function listenLoopback(): Promise<{ server: WebSocketServer; port: number }> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => server.once('listening', () => r()));
  return { server, port: (server.address() as AddressInfo).port };
}
