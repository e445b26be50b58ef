// An RFB 3.8 client that keeps the screen (tests and the riscv64 screen benchmark): security None,
// shared, 32 bpp true colour, Raw pixels painted into a framebuffer of B,G,R,0 bytes, the DesktopSize
// pseudo-encoding (a guest's screen changes size when its display driver binds), ZRLE counted but not
// decoded (for the benchmark's byte figures), and key events. Any stream: a driver's Duplex, a relay's
// stdio, or the /vnc WebSocket (rfb-client.ts openBridge's reader).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { Duplex } from 'node:stream';
import { Reader } from './rfb-client.ts';

export const Encoding = { raw: 0, zrle: 16, desktopSize: -223 } as const;

export interface Screen {
  width: number;
  height: number;
  /** width × height × 4 bytes: blue, green, red, unused. */
  pixels: Buffer;
  name: string;
  send(b: Buffer): void;
  close(): void;
  reader: Reader;
  /** Encodings this session asked for, in order of preference. */
  encodings: number[];
}

/** Reads a stream into a Reader. */
export function readerOf(s: Duplex): Reader {
  const reader = new Reader();
  s.on('data', (b: Buffer) => reader.push(b));
  s.on('end', () => reader.end());
  s.on('close', () => reader.end());
  s.on('error', () => reader.end());
  return reader;
}

export async function openScreen(
  reader: Reader,
  send: (b: Buffer) => void,
  close: () => void,
  encodings: number[] = [Encoding.raw, Encoding.desktopSize],
): Promise<Screen> {
  const version = (await reader.read(12)).toString();
  if (!version.startsWith('RFB 003.')) throw new Error(`not RFB: ${JSON.stringify(version)}`);
  send(Buffer.from('RFB 003.008\n'));
  const n = (await reader.read(1))[0];
  if (n === 0) throw new Error('the server refused the connection');
  const types = [...(await reader.read(n))];
  if (!types.includes(1)) throw new Error(`no security None among ${types}`);
  send(Buffer.from([1]));
  if ((await reader.read(4)).readUInt32BE(0) !== 0) throw new Error('security refused');
  send(Buffer.from([1])); // shared
  const init = await reader.read(24);
  const name = (await reader.read(init.readUInt32BE(20))).toString();
  const width = init.readUInt16BE(0);
  const height = init.readUInt16BE(2);
  const pf = Buffer.alloc(20);
  pf[0] = 0;
  pf.set([32, 24, 0, 1], 4);
  pf.writeUInt16BE(255, 8);
  pf.writeUInt16BE(255, 10);
  pf.writeUInt16BE(255, 12);
  pf.set([16, 8, 0], 14);
  send(pf);
  const enc = Buffer.alloc(4 + 4 * encodings.length);
  enc[0] = 2;
  enc.writeUInt16BE(encodings.length, 2);
  for (const [i, e] of encodings.entries()) enc.writeInt32BE(e, 4 + 4 * i);
  send(enc);
  return { width, height, pixels: Buffer.alloc(width * height * 4), name, send, close, reader, encodings };
}

/** Asks for an update of the whole screen (`incremental`: only what changed since the last one). */
export function requestUpdate(s: Screen, incremental: boolean): void {
  const req = Buffer.alloc(10);
  req[0] = 3;
  req[1] = incremental ? 1 : 0;
  req.writeUInt16BE(s.width, 6);
  req.writeUInt16BE(s.height, 8);
  s.send(req);
}

export interface UpdateStats {
  bytes: number;
  rects: number;
  resized: boolean;
}

/** Reads the next framebuffer update (skipping bells and cut text), painting Raw rectangles. */
export async function readUpdate(s: Screen): Promise<UpdateStats> {
  for (;;) {
    const type = (await s.reader.read(1))[0];
    if (type === 2) continue;
    if (type === 3) {
      const len = (await s.reader.read(7)).readUInt32BE(3);
      await s.reader.read(len);
      continue;
    }
    if (type !== 0) throw new Error(`unexpected server message ${type}`);
    const rects = (await s.reader.read(3)).readUInt16BE(1);
    const st: UpdateStats = { bytes: 4, rects, resized: false };
    for (let i = 0; i < rects; i++) {
      const rh = await s.reader.read(12);
      st.bytes += 12;
      const x = rh.readUInt16BE(0);
      const y = rh.readUInt16BE(2);
      const w = rh.readUInt16BE(4);
      const h = rh.readUInt16BE(6);
      const encoding = rh.readInt32BE(8);
      if (encoding === Encoding.desktopSize) {
        s.width = w;
        s.height = h;
        s.pixels = Buffer.alloc(w * h * 4);
        st.resized = true;
      } else if (encoding === Encoding.raw) {
        const data = await s.reader.read(w * h * 4);
        st.bytes += data.length;
        for (let row = 0; row < h; row++) {
          if (y + row >= s.height) break;
          const from = row * w * 4;
          const len = Math.min(w, s.width - x) * 4;
          if (len > 0) data.copy(s.pixels, ((y + row) * s.width + x) * 4, from, from + len);
        }
      } else if (encoding === Encoding.zrle) {
        const len = (await s.reader.read(4)).readUInt32BE(0);
        await s.reader.read(len);
        st.bytes += 4 + len;
      } else throw new Error(`encoding ${encoding} not asked for`);
    }
    return st;
  }
}

/**
 * The whole screen as the server has it now: a non-incremental request, answered (after a resize the
 * server announces, a second request for the new size).
 */
export async function grab(s: Screen): Promise<Buffer> {
  requestUpdate(s, false);
  for (;;) {
    const st = await readUpdate(s);
    if (!st.resized) return s.pixels;
    requestUpdate(s, false);
  }
}

/** Presses and releases an X keysym (RFB KeyEvent). */
export function key(s: Screen, keysym: number): void {
  for (const down of [1, 0]) {
    const b = Buffer.alloc(8);
    b[0] = 4;
    b[1] = down;
    b.writeUInt32BE(keysym, 4);
    s.send(b);
  }
}

/** Types text (printable ASCII, and '\n' as Return). */
export function type(s: Screen, text: string): void {
  for (const ch of text) key(s, ch === '\n' ? 0xff0d : ch.charCodeAt(0));
}

/** Pixels whose brightest channel is above `level`: text on a console's black. */
export function litPixels(
  px: Buffer,
  x0: number,
  y0: number,
  w: number,
  h: number,
  width: number,
  level = 96,
) {
  let lit = 0;
  for (let y = y0; y < y0 + h; y++)
    for (let x = x0; x < x0 + w; x++) {
      const i = (y * width + x) * 4;
      if (Math.max(px[i], px[i + 1], px[i + 2]) > level) lit++;
    }
  return lit;
}

/** The qemu-system-riscv64 among `ancestor`'s descendants (a test's service, or the test itself). */
export function qemuUnder(ancestor: number): number {
  const parentOf = (p: number) =>
    Number(/^PPid:\s*(\d+)$/m.exec(fs.readFileSync(`/proc/${p}/status`, 'utf8'))?.[1]);
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (!fs.readFileSync(`/proc/${d}/cmdline`, 'latin1').startsWith('/usr/bin/qemu-system-riscv64'))
        continue;
      for (let p = parentOf(Number(d)); p > 1; p = parentOf(p)) if (p === ancestor) return Number(d);
    } catch {}
  }
  throw new Error(`no QEMU under process ${ancestor}`);
}

const STRAIGHT_RELAY =
  "const s=require('net').connect(5900,'127.0.0.1');" +
  "s.on('connect',()=>{process.stdin.pipe(s);s.pipe(process.stdout)});" +
  "s.on('error',e=>{console.error(e.message);process.exit(1)});s.on('close',()=>process.exit(0));" +
  "process.stdin.on('end',()=>s.end())";

/**
 * A session straight on QEMU's VNC server, not through the product: as root, `nsenter --net` into the
 * machine's namespace and a plain socket to its 127.0.0.1:5900 (what a test compares the product with).
 */
export async function straightScreen(qemuPid: number, encodings?: number[]): Promise<Screen> {
  const child = spawn(
    'nsenter',
    ['--target', String(qemuPid), '--net', '--', process.execPath, '-e', STRAIGHT_RELAY],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const s = Duplex.from({ readable: child.stdout, writable: child.stdin });
  s.once('close', () => child.kill('SIGKILL'));
  child.once('exit', () => setImmediate(() => s.destroy()));
  return openScreen(
    readerOf(s),
    (b) => s.write(b),
    () => s.destroy(),
    encodings,
  );
}
