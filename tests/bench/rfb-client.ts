// A minimal RFB 3.8 client for the VNC benchmark (tests/bench/vnc.bench.ts): security None, 32 bpp
// true colour, Raw encoding only; full or 1×1 non-incremental updates, one at a time. Used on the
// driver's stream directly and, from a worker thread, over the /vnc WebSocket (vnc-client.worker.ts).
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

export const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

/** Bytes from either kind of stream, read by count. */
export class Reader {
  private chunks: Buffer[] = [];
  private have = 0;
  private wake: (() => void) | null = null;
  ended = false;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.have += b.length;
    this.wake?.();
  }
  end(): void {
    this.ended = true;
    this.wake?.();
  }
  async read(n: number): Promise<Buffer> {
    while (this.have < n) {
      if (this.ended) throw new Error(`stream ended waiting for ${n} bytes`);
      await new Promise<void>((r) => {
        this.wake = r;
      });
      this.wake = null;
    }
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.have = rest.length;
    return out;
  }
}

export interface Rfb {
  reader: Reader;
  send(b: Buffer): void;
  close(): void;
  width: number;
  height: number;
}

export async function handshake(reader: Reader, send: (b: Buffer) => void, close: () => void): Promise<Rfb> {
  const version = (await reader.read(12)).toString();
  if (!version.startsWith('RFB 003.')) throw new Error(`not RFB: ${JSON.stringify(version)}`);
  send(Buffer.from('RFB 003.008\n'));
  const n = (await reader.read(1))[0];
  const types = [...(await reader.read(n))];
  if (!types.includes(1)) throw new Error(`no security None among ${types}`);
  send(Buffer.from([1]));
  if ((await reader.read(4)).readUInt32BE(0) !== 0) throw new Error('security refused');
  send(Buffer.from([1])); // shared
  const init = await reader.read(24);
  await reader.read(init.readUInt32BE(20)); // the desktop's name
  const width = init.readUInt16BE(0);
  const height = init.readUInt16BE(2);
  // 32 bits per pixel, true colour (what noVNC asks for), and Raw encoding only.
  const pf = Buffer.alloc(20);
  pf[0] = 0;
  pf.set([32, 24, 0, 1], 4);
  pf.writeUInt16BE(255, 8);
  pf.writeUInt16BE(255, 10);
  pf.writeUInt16BE(255, 12);
  pf.set([16, 8, 0], 14);
  send(pf);
  const enc = Buffer.alloc(8);
  enc[0] = 2;
  enc.writeUInt16BE(1, 2);
  enc.writeInt32BE(0, 4);
  send(enc);
  return { reader, send, close, width, height };
}

/** Asks for a region (non-incremental) and reads the whole update; answers its bytes. */
export async function update(r: Rfb, w: number, h: number): Promise<number> {
  const req = Buffer.alloc(10);
  req[0] = 3;
  req[1] = 0;
  req.writeUInt16BE(w, 6);
  req.writeUInt16BE(h, 8);
  r.send(req);
  let bytes = 0;
  for (;;) {
    const head = await r.reader.read(4);
    if (head[0] !== 0) {
      // Bell (2) or cut text (3) between updates: skip them.
      if (head[0] === 2) continue;
      if (head[0] === 3) {
        const len = (await r.reader.read(4)).readUInt32BE(0);
        await r.reader.read(len - 0);
        continue;
      }
      throw new Error(`unexpected server message ${head[0]}`);
    }
    const rects = head.readUInt16BE(2);
    for (let i = 0; i < rects; i++) {
      const rh = await r.reader.read(12);
      const rw = rh.readUInt16BE(4);
      const rhh = rh.readUInt16BE(6);
      const encoding = rh.readInt32BE(8);
      if (encoding !== 0) throw new Error(`encoding ${encoding} not asked for`);
      const n = rw * rhh * 4;
      await r.reader.read(n);
      bytes += n + 12;
    }
    return bytes + 4;
  }
}

export interface PassResult {
  mibs: number;
  p50: number;
  p99: number;
}

/** One measured pass on an open session: `frames` full updates, then `rounds` 1×1 round trips. */
export async function measurePass(r: Rfb, frames: number, rounds: number): Promise<PassResult> {
  await update(r, r.width, r.height);
  let bytes = 0;
  const t0 = performance.now();
  for (let i = 0; i < frames; i++) bytes += await update(r, r.width, r.height);
  const secs = (performance.now() - t0) / 1000;
  const rtts: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const s = performance.now();
    await update(r, 1, 1);
    rtts.push(performance.now() - s);
  }
  return { mibs: bytes / 1024 / 1024 / secs, p50: pct(rtts, 50), p99: pct(rtts, 99) };
}

/** An RFB session over the service's /vnc/{applyId} WebSocket, signed in with `token`. */
export async function openBridge(url: string, token: string): Promise<Rfb> {
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
  return handshake(
    reader,
    (b) => ws.send(b),
    () => ws.close(),
  );
}
