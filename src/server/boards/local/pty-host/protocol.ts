// The wire between the service and a board's PTY host (program.ts), over the host's stdin and stdout:
// frames of a 9-byte header — type (u8), shell id (u32), payload length (u32), big-endian — and the
// payload. One pipe per board carries every shell of it; output stays raw bytes, so the service slices
// frames out of the chunks it reads without copying them.
//
// Everything the host sends is read as hostile: the host runs inside the board as its root, who can
// replace or drive it. The reader refuses a frame longer than MAX_FRAME and the service checks every
// type and id (pty-host.ts); nothing a board sends can make the service allocate without bound.

/** Service → host. */
export const ToHost = {
  /** JSON {argv, env, cwd, cols, rows}: start a program on a new terminal of the board. */
  open: 1,
  input: 2,
  /** u16 cols, u16 rows. */
  resize: 3,
  pause: 4,
  resume: 5,
  /** The signal's name, "SIGHUP" or "SIGKILL", sent to the program (its login shell). */
  signal: 6,
} as const;

/** Host → service. */
export const FromHost = {
  /** The host is up and takes frames (id 0). */
  ready: 0,
  /** u32: the program's pid inside the board. */
  opened: 1,
  data: 2,
  /** JSON {code, signal}: the program ended and every byte of its terminal has been sent. */
  exit: 3,
  /** UTF-8 text: the program could not be started. */
  failed: 4,
} as const;

export const HEADER = 9;
/** Largest payload either side sends (output is read 64 KiB at a time; input is cut to this). */
export const MAX_FRAME = 256 * 1024;

export function header(type: number, id: number, length: number): Buffer {
  const h = Buffer.allocUnsafe(HEADER);
  h.writeUInt8(type, 0);
  h.writeUInt32BE(id, 1);
  h.writeUInt32BE(length, 5);
  return h;
}

export function frame(type: number, id: number, payload?: Buffer): Buffer[] {
  return payload && payload.length > 0 ? [header(type, id, payload.length), payload] : [header(type, id, 0)];
}

export interface Frame {
  type: number;
  id: number;
  payload: Buffer;
}

/**
 * Cuts frames out of a byte stream. Payloads are views of the chunk read when a frame lies within one
 * chunk (the usual case for output); only a frame split across chunks is copied, and only that frame's
 * bytes — never the rest of the chunk. Throws on a frame longer than `max`.
 */
export class FrameReader {
  /** The start of a frame split across chunks. */
  private rest: Buffer | null = null;

  constructor(private readonly max = MAX_FRAME) {}

  push(chunk: Buffer, emit: (f: Frame) => void): void {
    let at = 0;
    if (this.rest) {
      let rest = this.rest;
      if (rest.length < HEADER) {
        const take = Math.min(HEADER - rest.length, chunk.length);
        rest = Buffer.concat([rest, chunk.subarray(0, take)]);
        at = take;
        if (rest.length < HEADER) {
          this.rest = rest;
          return;
        }
      }
      const total = HEADER + this.length(rest, 0);
      const take = Math.min(total - rest.length, chunk.length - at);
      rest = take > 0 ? Buffer.concat([rest, chunk.subarray(at, at + take)]) : rest;
      at += take;
      if (rest.length < total) {
        this.rest = rest;
        return;
      }
      this.rest = null;
      emit({ type: rest.readUInt8(0), id: rest.readUInt32BE(1), payload: rest.subarray(HEADER) });
    }
    while (chunk.length - at >= HEADER) {
      const length = this.length(chunk, at);
      if (chunk.length - at < HEADER + length) break;
      emit({
        type: chunk.readUInt8(at),
        id: chunk.readUInt32BE(at + 1),
        payload: chunk.subarray(at + HEADER, at + HEADER + length),
      });
      at += HEADER + length;
    }
    if (at < chunk.length) {
      if (chunk.length - at >= HEADER) this.length(chunk, at);
      this.rest = Buffer.from(chunk.subarray(at));
    }
  }

  private length(b: Buffer, at: number): number {
    const length = b.readUInt32BE(at + 5);
    if (length > this.max) throw new Error(`frame of ${length} bytes is over the limit of ${this.max}`);
    return length;
  }
}
