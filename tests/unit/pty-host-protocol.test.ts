import { describe, expect, it } from 'vitest';
import { type Frame, FrameReader, frame, HEADER } from '#server/boards/local/pty-host/protocol.ts';
import { openPayload } from '#server/boards/local/pty-host/pty-host.ts';

const wire = (...frames: Buffer[][]) => Buffer.concat(frames.flat());
const readAll = (r: FrameReader, chunks: Buffer[]) => {
  const got: Frame[] = [];
  for (const c of chunks) r.push(c, (f) => got.push({ ...f, payload: Buffer.from(f.payload) }));
  return got.map((f) => [f.type, f.id, f.payload.toString()]);
};
const read = (r: FrameReader, ...chunks: Buffer[]) => readAll(r, chunks);

describe("the PTY host's frames", () => {
  it('cuts several frames out of one chunk, empty payloads included', () => {
    const bytes = wire(frame(2, 7, Buffer.from('hello')), frame(4, 7), frame(2, 9, Buffer.from('x')));
    expect(read(new FrameReader(), bytes)).toEqual([
      [2, 7, 'hello'],
      [4, 7, ''],
      [2, 9, 'x'],
    ]);
  });

  it('joins a frame split at every byte, header included', () => {
    const bytes = wire(frame(2, 0xfffffffe, Buffer.from('split payload')), frame(3, 1, Buffer.from('{}')));
    const chunks = [...bytes].map((b) => Buffer.from([b]));
    expect(read(new FrameReader(), ...chunks)).toEqual([
      [2, 0xfffffffe, 'split payload'],
      [3, 1, '{}'],
    ]);
  });

  it('gives views of the chunk read for whole frames (no copy), and keeps no view of it for a partial one', () => {
    const chunk = wire(frame(2, 1, Buffer.from('abc')), [Buffer.from([2, 0, 0])]);
    const r = new FrameReader();
    const views: Buffer[] = [];
    r.push(chunk, (f) => views.push(f.payload));
    expect(views[0].buffer).toBe(chunk.buffer);
    chunk[HEADER] = 'z'.charCodeAt(0);
    expect(views[0].toString()).toBe('zbc');
    chunk.fill(0);
    expect(read(r, Buffer.from([0, 1, 0, 0, 0, 1, 0x41]))).toEqual([[2, 1, 'A']]);
  });

  it('reads the same frames however the stream is cut (random frames, random cuts)', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const sent = Array.from({ length: 300 }, (_, i) => [2, i, 'x'.repeat(rnd(9000))] as const);
    const bytes = wire(...sent.map(([t, id, p]) => frame(t, id, Buffer.from(p))));
    for (let round = 0; round < 5; round++) {
      const chunks: Buffer[] = [];
      for (let at = 0; at < bytes.length; ) {
        const n = 1 + rnd(round % 2 ? 20 : 70_000);
        chunks.push(bytes.subarray(at, at + n));
        at += n;
      }
      expect(readAll(new FrameReader(), chunks)).toEqual(sent.map(([t, id, p]) => [t, id, p]));
    }
  });

  it('hands on output in pieces as it arrives, views of the chunks read, and control frames whole', () => {
    const bytes = wire(frame(2, 1, Buffer.from('0123456789')), frame(3, 1, Buffer.from('{"code":0}')));
    const chunks = [bytes.subarray(0, 12), bytes.subarray(12, 25), bytes.subarray(25)];
    const r = new FrameReader(1024, new Set([2]));
    const got: Frame[] = [];
    for (const c of chunks) r.push(c, (f) => got.push(f));
    expect(got.map((f) => [f.type, f.payload.toString()])).toEqual([
      [2, '012'],
      [2, '3456789'],
      [3, '{"code":0}'],
    ]);
    expect(got[0].payload.buffer).toBe(bytes.buffer);
    expect(got[1].payload.buffer).toBe(bytes.buffer);
  });

  it('refuses a frame longer than the limit before waiting for its bytes', () => {
    const r = new FrameReader(1024);
    const h = frame(2, 1, Buffer.alloc(1025))[0];
    expect(() => r.push(h, () => {})).toThrow(/over the limit/);
    expect(() => new FrameReader(1024).push(frame(2, 1, Buffer.alloc(1024))[0], () => {})).not.toThrow();
  });
});

describe("the PTY host's open frame", () => {
  const spec = {
    argv: ['/bin/bash', '-l'],
    env: { TERM: 'xterm', A: 'b=c' },
    cwd: '/root',
    size: { cols: 91, rows: 33 },
  };

  it('carries the size, counts and NUL-ended strings host.c reads', () => {
    const p = openPayload(spec);
    expect([p.readUInt16BE(0), p.readUInt16BE(2), p.readUInt16BE(4), p.readUInt16BE(6)]).toEqual([
      91, 33, 2, 2,
    ]);
    expect(p.subarray(8).toString()).toBe('/root\0/bin/bash\0-l\0TERM=xterm\0A=b=c\0');
  });

  it('refuses what a C string cannot hold, or no program at all', () => {
    expect(() => openPayload({ ...spec, env: { X: 'a\0b' } })).toThrow(/cannot be started/);
    expect(() => openPayload({ ...spec, argv: [] })).toThrow(/cannot be started/);
    expect(() => openPayload({ ...spec, cwd: 'x'.repeat(300 * 1024) })).toThrow(/cannot be started/);
  });
});
