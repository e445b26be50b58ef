// The wire between the service and a board's PTY host (host.c), over the host's stdin and stdout:
// frames of a 9-byte header — type (u8), shell id (u32), payload length (u32), big-endian — and the
// payload. One pipe per board carries every shell of it; output stays raw bytes, so the service slices
// frames out of the chunks it reads without copying them.
//
// Everything the host sends is read as hostile: the host runs inside the board as its root, who can
// replace or drive it. The reader refuses a frame longer than MAX_FRAME and the service checks every
// type and id (pty-host.ts); nothing a board sends can make the service allocate without bound.

/** Service → host. */
export const ToHost = {
  /**
   * Start a program on a new terminal of the board: u16 cols, rows, argc, envc, then cwd, argv and env
   * ("NAME=value") as NUL-ended strings (pty-host.ts openPayload).
   */
  open: 1,
  input: 2,
  /** u16 cols, u16 rows. */
  resize: 3,
  pause: 4,
  resume: 5,
  /** The signal's name, "SIGHUP" or "SIGKILL", sent to the program (its login shell). */
  signal: 6,
  /**
   * Start a program on a terminal the service made in the board's devpts and holds the master of
   * (ctl.c): u32 its number, then the payload of `open`. Its bytes never pass through the host.
   */
  openPts: 7,
} as const;

/** Host → service. */
export const FromHost = {
  /**
   * The host is up and takes frames (id 0). Payload: nothing, or u32 the number of its descriptor
   * holding the board's /dev/pts/ptmx (a path-only handle), for the service to make terminals through.
   */
  ready: 0,
  /** u32: the program's pid inside the board. */
  opened: 1,
  data: 2,
  /** JSON {code, signal}: the program ended and every byte of its terminal has been sent. */
  exit: 3,
  /** UTF-8 text: the program could not be started. */
  failed: 4,
} as const;

/** Terminal helper (ctl.c) → service, on its descriptor 4: output it read for the service. */
export const FromCtl = {
  data: 2,
  /** It stopped reading that terminal (quiet, or asked to): the service reads it again. */
  released: 5,
  /** It read the terminal's end. */
  ended: 6,
  /** Input a client gave the relay that the terminal had not taken when the client went: write it on. */
  typed: 7,
} as const;

export const HEADER = 9;
/** Largest payload either side sends (output is gathered 64 KiB at most; input is cut to this). */
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
 * Cuts frames out of a byte stream without copying output. Frames of the `streamed` types (terminal
 * output) are handed on in pieces as their bytes arrive — views of the chunks read, never copied,
 * however the stream was cut; only the other frames (small control frames) and a header split across
 * reads are put together. Throws on a frame longer than `max`.
 */
export class FrameReader {
  /** Header bytes of a frame split across reads. */
  private head: Buffer | null = null;
  /** The frame being read: its header, the payload bytes still to come, what was gathered of it. */
  private cur: { type: number; id: number; left: number; parts: Buffer[] | null } | null = null;

  constructor(
    private readonly max = MAX_FRAME,
    private readonly streamed: ReadonlySet<number> = new Set(),
  ) {}

  push(chunk: Buffer, emit: (f: Frame) => void): void {
    let at = 0;
    while (at < chunk.length) {
      if (!this.cur) {
        let h: Buffer;
        if (this.head || chunk.length - at < HEADER) {
          const have = this.head?.length ?? 0;
          const take = Math.min(HEADER - have, chunk.length - at);
          h = this.head
            ? Buffer.concat([this.head, chunk.subarray(at, at + take)])
            : Buffer.from(chunk.subarray(at, at + take));
          at += take;
          if (h.length < HEADER) {
            this.head = h;
            return;
          }
          this.head = null;
        } else {
          h = chunk.subarray(at, at + HEADER);
          at += HEADER;
        }
        const left = h.readUInt32BE(5);
        if (left > this.max) throw new Error(`frame of ${left} bytes is over the limit of ${this.max}`);
        const type = h.readUInt8(0);
        const id = h.readUInt32BE(1);
        if (left === 0) {
          emit({ type, id, payload: Buffer.alloc(0) });
          continue;
        }
        this.cur = { type, id, left, parts: this.streamed.has(type) ? null : [] };
      }
      const f = this.cur;
      const n = Math.min(f.left, chunk.length - at);
      const piece = chunk.subarray(at, at + n);
      at += n;
      f.left -= n;
      if (f.parts === null) emit({ type: f.type, id: f.id, payload: piece });
      else f.parts.push(f.left === 0 && f.parts.length === 0 ? piece : Buffer.from(piece));
      if (f.left === 0) {
        this.cur = null;
        if (f.parts)
          emit({
            type: f.type,
            id: f.id,
            payload: f.parts.length === 1 ? f.parts[0] : Buffer.concat(f.parts),
          });
      }
    }
  }
}
