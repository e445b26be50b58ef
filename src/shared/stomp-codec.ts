// A pure STOMP 1.2 frame codec, shared by the server, the console (realtime/fast-frames.ts) and the
// tests. It parses one WebSocket message (text or binary: both arrive as bytes) into frames and
// serialises frames back to bytes.
// Parsing never throws anything but StompCodecError, whatever the input: limits on message size,
// header count and header line length are checked before any allocation grows with the input.
//
// Wire rules followed (STOMP 1.2):
// - a frame is COMMAND EOL *(header EOL) EOL body NUL, EOL being LF or CR LF;
// - EOLs between frames are heart-beats and are skipped;
// - with `content-length`, the body is exactly that many octets and must be followed by NUL;
//   without it, the body runs to the first NUL;
// - header names and values are escaped (\r \n \c \\) in every frame except CONNECT, STOMP and
//   CONNECTED; an undefined escape is an error;
// - a repeated header keeps its first value.
// A frame must fit within one WebSocket message: the console's client (stompjs) never splits frames
// across messages, so a message ending inside a frame is a truncated frame, not a partial one.

import { DEFAULT_STOMP_LIMITS, type StompLimits } from './stomp-limits.ts';

export { DEFAULT_STOMP_LIMITS, type StompLimits };

export const CLIENT_COMMANDS = [
  'CONNECT',
  'STOMP',
  'SEND',
  'SUBSCRIBE',
  'UNSUBSCRIBE',
  'BEGIN',
  'COMMIT',
  'ABORT',
  'ACK',
  'NACK',
  'DISCONNECT',
] as const;
export const SERVER_COMMANDS = ['CONNECTED', 'MESSAGE', 'RECEIPT', 'ERROR'] as const;
export type ClientCommand = (typeof CLIENT_COMMANDS)[number];
export type ServerCommand = (typeof SERVER_COMMANDS)[number];
export type StompCommand = ClientCommand | ServerCommand;

const ALL_COMMANDS: ReadonlySet<string> = new Set<string>([...CLIENT_COMMANDS, ...SERVER_COMMANDS]);
const UNESCAPED_COMMANDS: ReadonlySet<string> = new Set(['CONNECT', 'STOMP', 'CONNECTED']);

export interface StompFrame {
  command: StompCommand;
  /** Null-prototype record: a header named `__proto__` is just a header. */
  headers: Record<string, string>;
  body: Uint8Array;
}

export type StompCodecErrorKey =
  | 'stomp.frame_too_large'
  | 'stomp.too_many_headers'
  | 'stomp.header_too_long'
  | 'stomp.bad_header'
  | 'stomp.bad_escape'
  | 'stomp.unknown_command'
  | 'stomp.bad_content_length'
  | 'stomp.truncated'
  | 'stomp.missing_nul'
  | 'stomp.too_many_frames';

export class StompCodecError extends Error {
  constructor(
    readonly key: StompCodecErrorKey,
    message: string,
  ) {
    super(message);
    this.name = 'StompCodecError';
  }
}

const LF = 0x0a;
const CR = 0x0d;
const NUL = 0x00;
const COLON = 0x3a;

const utf8 = new TextDecoder('utf-8', { fatal: false });
const encoder = new TextEncoder();

function toBytes(data: Uint8Array | ArrayBuffer | string): Uint8Array {
  if (typeof data === 'string') return encoder.encode(data);
  if (data instanceof Uint8Array) return data;
  return new Uint8Array(data);
}

export function unescapeHeader(s: string): string {
  if (!s.includes('\\')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== '\\') {
      out += c;
      continue;
    }
    const n = s[++i];
    if (n === 'r') out += '\r';
    else if (n === 'n') out += '\n';
    else if (n === 'c') out += ':';
    else if (n === '\\') out += '\\';
    else throw new StompCodecError('stomp.bad_escape', `Undefined escape sequence \\${n ?? ''} in a header`);
  }
  return out;
}

export function escapeHeader(s: string): string {
  return s.replace(/[\\\r\n:]/g, (c) =>
    c === '\\' ? '\\\\' : c === '\r' ? '\\r' : c === '\n' ? '\\n' : '\\c',
  );
}

/** Index of the end of the line starting at `from` (the LF), or -1 if none within `limit`. */
function lineEnd(buf: Uint8Array, from: number, limit: number): number {
  const end = Math.min(buf.length, from + limit + 2);
  for (let i = from; i < end; i++) if (buf[i] === LF) return i;
  return -1;
}

function lineText(buf: Uint8Array, from: number, lf: number): string {
  const to = lf > from && buf[lf - 1] === CR ? lf - 1 : lf;
  return utf8.decode(buf.subarray(from, to));
}

/**
 * Parses a whole WebSocket message into frames. A message holding only EOLs is a heart-beat and
 * yields no frame.
 */
export function parseMessage(
  data: Uint8Array | ArrayBuffer | string,
  limits: StompLimits = DEFAULT_STOMP_LIMITS,
): StompFrame[] {
  const buf = toBytes(data);
  if (buf.length > limits.maxFrameBytes)
    throw new StompCodecError('stomp.frame_too_large', `Frame larger than ${limits.maxFrameBytes} bytes`);
  const frames: StompFrame[] = [];
  let pos = 0;
  for (;;) {
    while (pos < buf.length && (buf[pos] === LF || (buf[pos] === CR && buf[pos + 1] === LF)))
      pos += buf[pos] === CR ? 2 : 1;
    if (pos >= buf.length) return frames;
    if (frames.length >= limits.maxFramesPerMessage)
      throw new StompCodecError(
        'stomp.too_many_frames',
        `More than ${limits.maxFramesPerMessage} frames in one message`,
      );
    const [frame, next] = parseFrameAt(buf, pos, limits);
    frames.push(frame);
    pos = next;
  }
}

function parseFrameAt(buf: Uint8Array, start: number, limits: StompLimits): [StompFrame, number] {
  const cmdEnd = lineEnd(buf, start, 32);
  if (cmdEnd < 0) {
    throw lineEnd(buf, start, buf.length) < 0 && buf.length - start <= 32
      ? new StompCodecError('stomp.truncated', 'Frame ends inside its command line')
      : new StompCodecError('stomp.unknown_command', 'Unknown or missing command');
  }
  const command = lineText(buf, start, cmdEnd);
  if (!ALL_COMMANDS.has(command))
    throw new StompCodecError(
      'stomp.unknown_command',
      `Unknown command ${JSON.stringify(command.slice(0, 32))}`,
    );
  const escaped = !UNESCAPED_COMMANDS.has(command);

  const headers: Record<string, string> = Object.create(null);
  let count = 0;
  let pos = cmdEnd + 1;
  for (;;) {
    if (pos >= buf.length) throw new StompCodecError('stomp.truncated', 'Frame ends inside its headers');
    if (buf[pos] === LF) {
      pos += 1;
      break;
    }
    if (buf[pos] === CR && buf[pos + 1] === LF) {
      pos += 2;
      break;
    }
    const lf = lineEnd(buf, pos, limits.maxHeaderLineBytes);
    if (lf < 0) {
      if (buf.length - pos > limits.maxHeaderLineBytes)
        throw new StompCodecError(
          'stomp.header_too_long',
          `Header line longer than ${limits.maxHeaderLineBytes} bytes`,
        );
      throw new StompCodecError('stomp.truncated', 'Frame ends inside a header line');
    }
    if (lf - pos > limits.maxHeaderLineBytes + 1)
      throw new StompCodecError(
        'stomp.header_too_long',
        `Header line longer than ${limits.maxHeaderLineBytes} bytes`,
      );
    if (++count > limits.maxHeaders)
      throw new StompCodecError('stomp.too_many_headers', `More than ${limits.maxHeaders} headers`);
    let colon = -1;
    for (let i = pos; i < lf; i++) {
      if (buf[i] === COLON) {
        colon = i;
        break;
      }
    }
    if (colon <= pos) throw new StompCodecError('stomp.bad_header', 'Header line without a name and a colon');
    const rawName = utf8.decode(buf.subarray(pos, colon));
    const rawValue = lineText(buf, colon + 1, lf);
    const name = escaped ? unescapeHeader(rawName) : rawName;
    const value = escaped ? unescapeHeader(rawValue) : rawValue;
    if (!(name in headers)) headers[name] = value;
    pos = lf + 1;
  }

  const cl = headers['content-length'];
  let bodyEnd: number;
  if (cl !== undefined) {
    if (!/^\d{1,10}$/.test(cl.trim()))
      throw new StompCodecError('stomp.bad_content_length', 'content-length is not a non-negative integer');
    const n = Number(cl.trim());
    if (n > limits.maxFrameBytes)
      throw new StompCodecError('stomp.bad_content_length', `content-length above ${limits.maxFrameBytes}`);
    if (pos + n > buf.length)
      throw new StompCodecError('stomp.truncated', 'Body shorter than content-length');
    bodyEnd = pos + n;
    if (bodyEnd >= buf.length) throw new StompCodecError('stomp.missing_nul', 'Frame not terminated by NUL');
    if (buf[bodyEnd] !== NUL)
      throw new StompCodecError('stomp.missing_nul', 'Body longer than content-length (no NUL after it)');
  } else {
    bodyEnd = buf.indexOf(NUL, pos);
    if (bodyEnd < 0) throw new StompCodecError('stomp.missing_nul', 'Frame not terminated by NUL');
  }
  return [{ command: command as StompCommand, headers, body: buf.subarray(pos, bodyEnd) }, bodyEnd + 1];
}

export interface SerializeInput {
  command: StompCommand;
  headers?: Record<string, string | number | undefined>;
  body?: Uint8Array | string;
  /** Add content-length (default true; always right for binary bodies). */
  contentLength?: boolean;
}

/** The head of a frame (command, headers, blank line) as a string; the caller appends body and NUL. */
export function serializeHead(
  command: StompCommand,
  headers: Record<string, string | number | undefined>,
): string {
  const escaped = !UNESCAPED_COMMANDS.has(command);
  let head = `${command}\n`;
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined) continue;
    const value = String(v);
    head += escaped ? `${escapeHeader(name)}:${escapeHeader(value)}\n` : `${name}:${value}\n`;
  }
  return `${head}\n`;
}

export function serializeFrame(input: SerializeInput): Uint8Array {
  const body = input.body === undefined ? new Uint8Array(0) : toBytes(input.body);
  const headers = { ...(input.headers ?? {}) };
  if (input.contentLength !== false && body.length > 0) headers['content-length'] = body.length;
  const head = encoder.encode(serializeHead(input.command, headers));
  const out = new Uint8Array(head.length + body.length + 1);
  out.set(head, 0);
  out.set(body, head.length);
  out[out.length - 1] = NUL;
  return out;
}

export function bodyText(frame: StompFrame): string {
  return utf8.decode(frame.body);
}
