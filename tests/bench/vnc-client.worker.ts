// The bridge side of the VNC benchmark, in a worker thread: a WebSocket client of /vnc/{applyId} that
// runs one measured pass (rfb-client.ts) and posts the result. In a thread of its own it decodes the
// socket on another core than the service relays on, as a browser on another machine would; the
// direct anchor reads the driver's stream in the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import { measurePass, openBridge } from './rfb-client.ts';

const { url, token, frames, rounds } = workerData as {
  url: string;
  token: string;
  frames: number;
  rounds: number;
};

const r = await openBridge(url, token);
const result = await measurePass(r, frames, rounds);
r.close();
parentPort?.postMessage(result);
