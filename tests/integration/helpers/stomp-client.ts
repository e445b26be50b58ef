// A small STOMP 1.2 client over `ws` for the realtime tests, built on the shared codec, with
// helpers to wait for frames. Frames are recorded in arrival order.
import { WebSocket } from 'ws';
import { parseMessage, type StompFrame, serializeFrame } from '#shared/stomp-codec.ts';

export interface TestStompClient {
  ws: WebSocket;
  frames: StompFrame[];
  closed: Promise<{ code: number }>;
  sendFrame(
    command: Parameters<typeof serializeFrame>[0]['command'],
    headers?: Record<string, string>,
    body?: string | Uint8Array,
  ): void;
  sendRaw(data: string | Buffer, binary?: boolean): void;
  waitFor(pred: (f: StompFrame) => boolean, timeoutMs?: number): Promise<StompFrame>;
  close(): void;
}

export function wsUrl(port: number) {
  return `ws://127.0.0.1:${port}/ws`;
}

export async function openSocket(
  url: string,
  headers: Record<string, string> = {},
): Promise<TestStompClient> {
  const ws = new WebSocket(url, { headers, perMessageDeflate: false });
  const frames: StompFrame[] = [];
  const waiters: Array<{ pred: (f: StompFrame) => boolean; resolve: (f: StompFrame) => void }> = [];
  let parseError: unknown = null;
  ws.on('message', (data: Buffer) => {
    try {
      for (const f of parseMessage(data, {
        maxFrameBytes: 1 << 30,
        maxHeaders: 64,
        maxHeaderLineBytes: 1 << 16,
        maxFramesPerMessage: 1000,
      })) {
        frames.push(f);
        for (const w of [...waiters]) {
          if (w.pred(f)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(f);
          }
        }
      }
    } catch (e) {
      parseError = e;
    }
  });
  const closed = new Promise<{ code: number }>((resolve) => ws.on('close', (code) => resolve({ code })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  return {
    ws,
    frames,
    closed,
    sendFrame(command, headers = {}, body) {
      ws.send(serializeFrame({ command, headers, body }));
    },
    sendRaw(data, binary = false) {
      ws.send(data, { binary });
    },
    waitFor(pred, timeoutMs = 10_000) {
      if (parseError) return Promise.reject(parseError);
      const seen = frames.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('timed out waiting for a frame')), timeoutMs);
        waiters.push({
          pred,
          resolve: (f) => {
            clearTimeout(t);
            resolve(f);
          },
        });
      });
    },
    close() {
      ws.terminate();
    },
  };
}

/** Opens a socket and completes CONNECT; resolves with the client once CONNECTED arrived. */
export async function connectStomp(
  port: number,
  connectHeaders: Record<string, string>,
  socketHeaders: Record<string, string> = {},
): Promise<TestStompClient> {
  const c = await openSocket(wsUrl(port), socketHeaders);
  c.sendFrame('CONNECT', { 'accept-version': '1.2', 'heart-beat': '20000,0', ...connectHeaders });
  await c.waitFor((f) => f.command === 'CONNECTED' || f.command === 'ERROR');
  return c;
}
