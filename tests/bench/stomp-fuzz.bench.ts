// The long STOMP codec fuzz run (node --import tsx tests/bench/stomp-fuzz.bench.ts [iterations] [seed]).
// The test suite runs a bounded version; this one runs millions of mutated, truncated, repeated and
// random messages and stops at the first exception that is not a StompCodecError, printing its input.
import { DEFAULT_STOMP_LIMITS, parseMessage, StompCodecError, serializeFrame } from '#shared/stomp-codec.ts';

const iterations = Number(process.argv[2] ?? 2_000_000);
let s = Number(process.argv[3] ?? Date.now()) >>> 0;
const seed = s;
const r = () => {
  s = (s * 1664525 + 1013904223) >>> 0;
  return s / 2 ** 32;
};
const enc = (x: string) => new TextEncoder().encode(x);
const seeds = [
  enc('CONNECT\naccept-version:1.2\ntoken:abc\napplyId:x\nheart-beat:20000,0\n\n\0'),
  enc('SEND\ndestination:/app/shell/x/input\ncontent-length:5\n\nhello\0'),
  enc('SUBSCRIBE\nid:1\ndestination:/topic/shell/x\noffset:12\nreceipt:r\n\n\0'),
  enc('UNSUBSCRIBE\nid:1\n\n\0\n\nDISCONNECT\nreceipt:z\n\n\0'),
  serializeFrame({ command: 'MESSAGE', headers: { 'a:b': 'c\\d\ne' }, body: new Uint8Array([0, 1, 2, 3]) }),
  enc('\r\n'),
];
const special = [0, 10, 13, 58, 92, 99, 110, 114, 48, 57, 65, 255, 45, 0x80, 0xc3];
const limits = { ...DEFAULT_STOMP_LIMITS, maxFrameBytes: 8192 };
let parsed = 0;
let refused = 0;
const t0 = Date.now();
for (let i = 0; i < iterations; i++) {
  const base = seeds[Math.floor(r() * seeds.length)];
  let buf: Uint8Array;
  const mode = r();
  if (mode < 0.25) buf = base.slice(0, Math.floor(r() * (base.length + 1)));
  else if (mode < 0.6) {
    buf = base.slice();
    for (let k = 0, n = 1 + Math.floor(r() * 6); k < n; k++)
      buf[Math.floor(r() * buf.length)] =
        r() < 0.7 ? special[Math.floor(r() * special.length)] : Math.floor(r() * 256);
  } else if (mode < 0.75) {
    const cut = Math.floor(r() * base.length);
    const ins = new Uint8Array(Math.floor(r() * 40)).map(() => special[Math.floor(r() * special.length)]);
    buf = new Uint8Array([...base.subarray(0, cut), ...ins, ...base.subarray(cut)]);
  } else if (mode < 0.9) buf = new Uint8Array(Math.floor(r() * 400)).map(() => Math.floor(r() * 256));
  else {
    const reps = 1 + Math.floor(r() * 300);
    buf = new Uint8Array(reps * base.length);
    for (let k = 0; k < reps; k++) buf.set(base, k * base.length);
  }
  try {
    parseMessage(buf, limits);
    parsed++;
  } catch (e) {
    if (!(e instanceof StompCodecError)) {
      console.error(
        `seed ${seed}, iteration ${i}: ${String(e)}\ninput (base64): ${Buffer.from(buf).toString('base64')}`,
      );
      process.exit(1);
    }
    refused++;
  }
}
console.log(
  `${iterations} messages in ${Date.now() - t0} ms (seed ${seed}): ${parsed} parsed, ${refused} refused with a codec error, 0 other exceptions`,
);
