// MESSAGE frames for the console's own subscriptions are decoded here, not by @stomp/stompjs.
//
// stompjs parses every incoming byte in a function call of its own (its body collector copies a
// 100 KB shell frame byte by byte): in a 64 MiB flood in Chromium that was 1.8 s of the page's main
// thread (tests/bench/flood.bench.ts with BENCH_FLOOD_CPUPROFILE), spent in the WebSocket's message
// task — so at normal priority, ahead of xterm, and in front of another shell's echo queued behind the
// flood on the same socket. The shared codec (#shared/stomp-codec.ts, the server's) finds the frame's
// end from its content-length and hands the body on as a view of the received buffer, without a copy.
//
// stompjs keeps the connection: CONNECT, heart-beats, receipts, errors, and every frame this cannot
// place. A message is taken here only if it is binary and every frame in it is a MESSAGE for a
// subscription `route` knows; anything else (a text frame, an ERROR, a frame the codec refuses) goes
// to stompjs whole and unchanged, in its turn. Once stompjs has stopped listening to the socket (it
// swaps its handler for a no-op when it closes or discards one), nothing is taken here either: a
// closing socket's last frames must not reach a subscription made again on the next one.
import { parseMessage, type StompFrame, type StompLimits } from '#shared/stomp-codec.ts';

/** What a subscription's handler reads of a message (stompjs's IMessage has the same three). */
export interface RealtimeMessage {
  readonly headers: Record<string, string>;
  /** The body as UTF-8 text. */
  readonly body: string;
  /** The body's bytes (a view: not to be written to). */
  readonly binaryBody: Uint8Array;
}

export type MessageRoute = (subscription: string) => ((m: RealtimeMessage) => void) | undefined;

/** The server's frames can be larger than what it accepts from clients (replays: 1 MiB of output). */
const INCOMING: StompLimits = {
  maxFrameBytes: 64 * 1024 * 1024,
  maxHeaders: 64,
  maxHeaderLineBytes: 64 * 1024,
  maxFramesPerMessage: 1024,
};

const utf8 = new TextDecoder();
const PREFIX = new TextEncoder().encode('MESSAGE\n');

class Message implements RealtimeMessage {
  constructor(
    readonly headers: Record<string, string>,
    readonly binaryBody: Uint8Array,
  ) {}

  get body(): string {
    return utf8.decode(this.binaryBody);
  }
}

/** Delivers a message's frames if all of them can be delivered here; false leaves it to stompjs. */
export function deliverMessages(data: unknown, route: MessageRoute): boolean {
  if (!(data instanceof ArrayBuffer) || data.byteLength < PREFIX.length) return false;
  const bytes = new Uint8Array(data);
  for (let i = 0; i < PREFIX.length; i++) if (bytes[i] !== PREFIX[i]) return false;
  let frames: StompFrame[];
  try {
    frames = parseMessage(bytes, INCOMING);
  } catch {
    return false;
  }
  const handlers: Array<(m: RealtimeMessage) => void> = [];
  for (const f of frames) {
    const handler = f.command === 'MESSAGE' ? route(f.headers.subscription ?? '') : undefined;
    if (!handler) return false;
    handlers.push(handler);
  }
  for (let i = 0; i < frames.length; i++) handlers[i](new Message(frames[i].headers, frames[i].body));
  return true;
}

/**
 * Puts itself in front of the `onmessage` handler stompjs sets on `ws`: messages `route` can place are
 * delivered here, the rest reach stompjs's handler as before.
 */
export function interceptMessages<S extends WebSocket>(ws: S, route: MessageRoute): S {
  type OnMessage = ((this: WebSocket, ev: MessageEvent) => unknown) | null;
  let current: OnMessage = null;
  let first: OnMessage = null;
  Object.defineProperty(ws, 'onmessage', {
    configurable: true,
    get: () => current,
    set: (fn: OnMessage) => {
      current = fn;
      first ??= fn;
    },
  });
  ws.addEventListener('message', (ev) => {
    const handler = current;
    if (!handler) return;
    if (handler === first && deliverMessages(ev.data, route)) return;
    handler.call(ws, ev);
  });
  return ws;
}
