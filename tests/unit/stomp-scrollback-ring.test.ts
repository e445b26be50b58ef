import { describe, expect, it } from 'vitest';
import { ScrollbackRing } from '#server/shells/ring.ts';

function bytes(from: number, n: number): Buffer {
  return Buffer.from(Array.from({ length: n }, (_, i) => (from + i) % 251));
}

describe('the scrollback ring', () => {
  it('answers exactly the bytes after an absolute offset across wrap-arounds and growth', () => {
    const ring = new ScrollbackRing(100_000);
    let written = 0;
    const sizes = [1, 7, 5000, 16_384, 33_000, 99_999, 100_000, 150_000, 3, 12_345];
    for (const n of sizes) {
      ring.append(bytes(written, n));
      written += n;
      expect(ring.end).toBe(written);
      expect(ring.start).toBe(Math.max(0, written - 100_000));
      for (const back of [0, 1, 17, 4096, 99_999, 100_000]) {
        const from = Math.max(ring.start, written - back);
        const got = ring.readFrom(from);
        expect(got.offset).toBe(from);
        expect(got.lost).toBe(0);
        expect(got.data.equals(bytes(from, written - from))).toBe(true);
      }
    }
    expect(ring.allocated).toBe(100_000);
  });

  it('counts the bytes lost when asked for an offset older than it holds', () => {
    const ring = new ScrollbackRing(1000);
    ring.append(bytes(0, 2500));
    const got = ring.readFrom(100);
    expect(got).toMatchObject({ offset: 1500, lost: 1400 });
    expect(got.data.equals(bytes(1500, 1000))).toBe(true);
  });

  it('keeps an idle shell small', () => {
    const ring = new ScrollbackRing(2 * 1024 * 1024);
    ring.append(Buffer.from('$ '));
    expect(ring.allocated).toBeLessThanOrEqual(16 * 1024);
  });
});
