// A socket handed over at an HTTP upgrade, its reading stopped for the WebSocket relay and then given
// back to the service (the relay could not take it): it must read again. Node's resume() alone does
// not restart it (the socket still counts a read as under way), and the connection would hang.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { resumeReading, stopReading } from '#server/system/stop-reading.ts';

describe('reading a socket again after stopReading', () => {
  let server: http.Server | null = null;
  afterEach(() => server?.close());

  it('reads what the client sends after the upgrade once resumeReading starts it', async () => {
    server = http.createServer();
    const got = new Promise<string>((resolve) => {
      server?.on('upgrade', (_req, socket: net.Socket) => {
        expect(stopReading(socket)).toBe(true);
        // The client's bytes arrive while nobody reads; then the service takes the socket back.
        setTimeout(() => {
          resumeReading(socket);
          let text = '';
          socket.on('data', (b: Buffer) => {
            text += b.toString();
            if (text.includes('after')) resolve(text);
          });
        }, 100);
      });
    });
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const c = net.connect(port, '127.0.0.1');
    c.on('error', () => {});
    c.write('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n');
    setTimeout(() => c.write('bytes after the upgrade'), 30);
    const text = await Promise.race([
      got,
      new Promise<string>((r) => setTimeout(() => r('(nothing)'), 3000)),
    ]);
    c.destroy();
    expect(text).toContain('bytes after the upgrade');
  });
});
