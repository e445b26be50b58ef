// The bounds the STOMP codec (stomp-codec.ts) parses within, in a module of their own: the console's
// first load needs these numbers (realtime.ts), not the codec, which it loads with the realtime client.

export interface StompLimits {
  /** Largest WebSocket message, and so the largest frame, in bytes. */
  maxFrameBytes: number;
  maxHeaders: number;
  /** Longest header line (name, colon and value, escaped) in bytes. */
  maxHeaderLineBytes: number;
  /** Most frames one message may carry. */
  maxFramesPerMessage: number;
}

export const DEFAULT_STOMP_LIMITS: StompLimits = {
  maxFrameBytes: 256 * 1024,
  maxHeaders: 32,
  maxHeaderLineBytes: 8 * 1024,
  maxFramesPerMessage: 64,
};
