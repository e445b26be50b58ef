// The bridge side of the VNC benchmark, in a worker thread: a WebSocket client of /vnc/{applyId} that
// runs one measured pass (rfb-client.ts) and posts the result. In a thread of its own it decodes the
// socket on another core than the service relays on, as a browser on another machine would; the
// direct anchor reads the driver's stream in the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';
import { handshake, measurePass, Reader } from './rfb-client.ts';

const { url, token, frames, rounds } = workerData as {
  url: string;
  token: string;
  frames: number;
  rounds: number;
};

const ws = new WebSocket(url, ['binary', `bianbu.token.${token}`], { perMessageDeflate: false });
ws.binaryType = 'nodebuffer';
const reader = new Reader();
ws.on('message', (b: Buffer) => reader.push(b));
ws.on('close', () => reader.end());
await new Promise<void>((resolve, reject) => {
  ws.once('open', () => resolve());
  ws.once('error', reject);
  ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
});
const r = await handshake(
  reader,
  (b) => ws.send(b),
  () => ws.close(),
);
const result = await measurePass(r, frames, rounds);
r.close();
parentPort?.postMessage(result);
