import { describe, expect, it } from 'vitest';
import {
  bodyText,
  DEFAULT_STOMP_LIMITS,
  escapeHeader,
  parseMessage,
  StompCodecError,
  type StompLimits,
  serializeFrame,
  unescapeHeader,
} from '#shared/stomp-codec.ts';

const enc = (s: string) => new TextEncoder().encode(s);

describe('the STOMP codec parses', () => {
  const ok: Array<[string, string, { command: string; headers: Record<string, string>; body: string }[]]> = [
    [
      'a frame with LF line ends',
      'SEND\ndestination:/a\n\nhi\0',
      [{ command: 'SEND', headers: { destination: '/a' }, body: 'hi' }],
    ],
    [
      'a frame with CR LF line ends',
      'SEND\r\ndestination:/a\r\n\r\nhi\0',
      [{ command: 'SEND', headers: { destination: '/a' }, body: 'hi' }],
    ],
    ['a heart-beat as no frame', '\n', []],
    ['CR LF heart-beats as no frame', '\r\n\r\n', []],
    [
      'heart-beats around a frame',
      '\n\nDISCONNECT\n\n\0\n\n',
      [{ command: 'DISCONNECT', headers: {}, body: '' }],
    ],
    [
      'two frames in one message',
      'ACK\nid:1\n\n\0NACK\nid:2\n\n\0',
      [
        { command: 'ACK', headers: { id: '1' }, body: '' },
        { command: 'NACK', headers: { id: '2' }, body: '' },
      ],
    ],
    [
      'the first of repeated headers',
      'SEND\nfoo:1\nfoo:2\n\n\0',
      [{ command: 'SEND', headers: { foo: '1' }, body: '' }],
    ],
    [
      'escaped headers of a SEND',
      'SEND\na\\cb:c\\\\d\\ne\\r\n\n\0',
      [{ command: 'SEND', headers: { 'a:b': 'c\\d\ne\r' }, body: '' }],
    ],
    [
      'CONNECT headers without unescaping',
      'CONNECT\ntoken:a\\b\n\n\0',
      [{ command: 'CONNECT', headers: { token: 'a\\b' }, body: '' }],
    ],
    [
      'a body with NUL bytes under content-length',
      'SEND\ncontent-length:3\n\na\0b\0',
      [{ command: 'SEND', headers: { 'content-length': '3' }, body: 'a\0b' }],
    ],
    [
      'an empty header value',
      'SEND\nreceipt:\n\n\0',
      [{ command: 'SEND', headers: { receipt: '' }, body: '' }],
    ],
    [
      'a value holding a raw colon',
      'CONNECT\nhost:a:b\n\n\0',
      [{ command: 'CONNECT', headers: { host: 'a:b' }, body: '' }],
    ],
  ];
  for (const [name, input, want] of ok) {
    it(name, () => {
      const frames = parseMessage(input);
      expect(
        frames.map((f) => ({ command: f.command, headers: { ...f.headers }, body: bodyText(f) })),
      ).toEqual(want.map((w) => ({ ...w, headers: { ...w.headers } })));
    });
  }

  it('a header named __proto__ as a plain header, not a prototype', () => {
    const [f] = parseMessage('SEND\n__proto__:x\n\n\0');
    expect(Object.entries(f.headers)).toEqual([['__proto__', 'x']]);
    expect(Object.getPrototypeOf(f.headers)).toBeNull();
  });

  it('the same bytes from a binary message as from a text one', () => {
    const text = parseMessage('SEND\ndestination:/x\n\nbody\0');
    const bin = parseMessage(enc('SEND\ndestination:/x\n\nbody\0').buffer as ArrayBuffer);
    expect(bodyText(bin[0])).toBe(bodyText(text[0]));
  });
});

describe('the STOMP codec refuses', () => {
  const small: StompLimits = {
    maxFrameBytes: 200,
    maxHeaders: 3,
    maxHeaderLineBytes: 20,
    maxFramesPerMessage: 2,
  };
  const bad: Array<[string, string | Uint8Array, string]> = [
    ['an unknown command', 'HELLO\n\n\0', 'stomp.unknown_command'],
    ['a lower-case command', 'send\n\n\0', 'stomp.unknown_command'],
    ['a command line that never ends', 'X'.repeat(100), 'stomp.unknown_command'],
    ['a frame cut in its command', 'SEN', 'stomp.truncated'],
    ['a frame cut in its headers', 'SEND\ndestination:/a', 'stomp.truncated'],
    ['a frame without NUL', 'SEND\n\nbody', 'stomp.missing_nul'],
    ['a header without a colon', 'SEND\nnocolon\n\n\0', 'stomp.bad_header'],
    ['a header without a name', 'SEND\n:v\n\n\0', 'stomp.bad_header'],
    ['an undefined escape', 'SEND\na:b\\t\n\n\0', 'stomp.bad_escape'],
    ['a trailing backslash', 'SEND\na:b\\\n\n\0', 'stomp.bad_escape'],
    ['a negative content-length', 'SEND\ncontent-length:-1\n\n\0', 'stomp.bad_content_length'],
    ['a non-numeric content-length', 'SEND\ncontent-length:abc\n\n\0', 'stomp.bad_content_length'],
    ['a content-length beyond the frame', 'SEND\ncontent-length:50\n\nab\0', 'stomp.truncated'],
    ['a body longer than content-length', 'SEND\ncontent-length:1\n\nabc\0', 'stomp.missing_nul'],
    ['a content-length above the frame limit', 'SEND\ncontent-length:999\n\n\0', 'stomp.bad_content_length'],
    ['too many headers', 'SEND\na:1\nb:2\nc:3\nd:4\n\n\0', 'stomp.too_many_headers'],
    ['a header line too long', `SEND\na:${'v'.repeat(40)}\n\n\0`, 'stomp.header_too_long'],
    ['an unterminated header line too long', `SEND\na:${'v'.repeat(60)}`, 'stomp.header_too_long'],
    ['an oversized message', `SEND\n\n${'x'.repeat(300)}\0`, 'stomp.frame_too_large'],
    ['too many frames in one message', 'ACK\n\n\0ACK\n\n\0ACK\n\n\0', 'stomp.too_many_frames'],
  ];
  for (const [name, input, key] of bad) {
    it(name, () => {
      let caught: unknown;
      try {
        parseMessage(input, small);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(StompCodecError);
      expect((caught as StompCodecError).key).toBe(key);
    });
  }
});

describe('the STOMP codec serialises', () => {
  it('a MESSAGE that parses back to the same headers and binary body', () => {
    const body = new Uint8Array([0, 1, 2, 255, 0, 10]);
    const bytes = serializeFrame({
      command: 'MESSAGE',
      headers: { destination: '/topic/a:b', 'x\ny': 'v\\' },
      body,
    });
    const [f] = parseMessage(bytes);
    expect(f.command).toBe('MESSAGE');
    expect(f.headers.destination).toBe('/topic/a:b');
    expect(f.headers['x\ny']).toBe('v\\');
    expect(f.headers['content-length']).toBe('6');
    expect([...f.body]).toEqual([...body]);
  });

  it('CONNECTED headers without escaping', () => {
    const text = new TextDecoder().decode(
      serializeFrame({ command: 'CONNECTED', headers: { version: '1.2', 'heart-beat': '0,20000' } }),
    );
    expect(text).toBe('CONNECTED\nversion:1.2\nheart-beat:0,20000\n\n\0');
  });

  it('escapes and unescapes every special character symmetrically', () => {
    for (const s of ['a:b', 'c\\d', 'e\nf', 'g\rh', '\\c', ':::', ''])
      expect(unescapeHeader(escapeHeader(s))).toBe(s);
  });
});

describe('the STOMP codec under fuzzing', () => {
  // A seeded generator keeps a failure reproducible.
  function rng(seed: number) {
    let s = seed >>> 0;
    return () => {
      s = (s * 1664525 + 1013904223) >>> 0;
      return s / 2 ** 32;
    };
  }
  const seeds = [
    'CONNECT\naccept-version:1.2\ntoken:abc\n\n\0',
    'SEND\ndestination:/app/shell/x/input\ncontent-length:5\n\nhello\0',
    'SUBSCRIBE\nid:1\ndestination:/topic/shell/x\noffset:12\n\n\0',
    'MESSAGE\nsubscription:1\nmessage-id:2\ndestination:/x\n\n\0',
    '\n',
  ];
  const alphabet = [0, 10, 13, 58, 92, 99, 110, 114, 48, 57, 65, 255, 45];

  it('never throws anything but a codec error on 20000 mutated, truncated and oversized messages', () => {
    const r = rng(42);
    const limits = { ...DEFAULT_STOMP_LIMITS, maxFrameBytes: 4096 };
    let parsed = 0;
    let refused = 0;
    for (let i = 0; i < 20_000; i++) {
      const base = enc(seeds[Math.floor(r() * seeds.length)]);
      let buf: Uint8Array;
      const mode = r();
      if (mode < 0.3) {
        buf = base.slice(0, Math.floor(r() * base.length));
      } else if (mode < 0.7) {
        buf = base.slice();
        const flips = 1 + Math.floor(r() * 4);
        for (let k = 0; k < flips; k++)
          buf[Math.floor(r() * buf.length)] = alphabet[Math.floor(r() * alphabet.length)];
      } else if (mode < 0.85) {
        buf = new Uint8Array(Math.floor(r() * 200)).map(() => Math.floor(r() * 256));
      } else if (mode < 0.95) {
        const reps = 1 + Math.floor(r() * 200);
        const parts = Array.from({ length: reps }, () => base);
        buf = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
        let o = 0;
        for (const p of parts) {
          buf.set(p, o);
          o += p.length;
        }
      } else {
        buf = enc(
          `SEND\ncontent-length:${Math.floor(r() * 1e10)}\n\n${'y'.repeat(Math.floor(r() * 5000))}\0`,
        );
      }
      try {
        parseMessage(buf, limits);
        parsed++;
      } catch (e) {
        if (!(e instanceof StompCodecError)) throw e;
        refused++;
      }
    }
    expect(parsed).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });
});
