// A shell's scrollback ring: the last `capacity` bytes of its output, addressed by absolute byte
// offsets from the shell's first byte, so that a client that saw bytes up to N resumes at N exactly.
// Memory grows with the output (an idle shell holds a few KiB), doubling up to the capacity.
const INITIAL_BYTES = 16 * 1024;

export class ScrollbackRing {
  private buf: Buffer;
  /** Absolute offset one past the newest byte. */
  private endOffset = 0;
  /** Bytes held (≤ buf.length). */
  private held = 0;

  constructor(readonly capacity: number) {
    this.buf = Buffer.alloc(Math.min(INITIAL_BYTES, capacity));
  }

  get start(): number {
    return this.endOffset - this.held;
  }

  get end(): number {
    return this.endOffset;
  }

  /** Bytes allocated for this ring. */
  get allocated(): number {
    return this.buf.length;
  }

  append(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.grow(this.held + chunk.length);
    const cap = this.buf.length;
    let src = chunk;
    if (src.length > cap) src = src.subarray(src.length - cap);
    // Byte at absolute offset x lives at x % cap.
    const at = (this.endOffset + chunk.length - src.length) % cap;
    const first = Math.min(src.length, cap - at);
    this.buf.set(src.subarray(0, first), at);
    if (first < src.length) this.buf.set(src.subarray(first), 0);
    this.endOffset += chunk.length;
    this.held = Math.min(cap, this.held + chunk.length);
  }

  /**
   * Bytes from `from` (clamped to what the ring still holds) to the end, or at most `max` of them,
   * copied out. `lost` counts the requested bytes that have already left the ring.
   */
  readFrom(from: number, max = Number.POSITIVE_INFINITY): { offset: number; data: Buffer; lost: number } {
    const start = this.start;
    const offset = Math.min(Math.max(from, start), this.endOffset);
    const lost = from < start ? start - Math.max(from, 0) : 0;
    const n = Math.min(this.endOffset - offset, Math.max(0, max));
    const out = Buffer.allocUnsafe(n);
    if (n > 0) {
      const cap = this.buf.length;
      const at = offset % cap;
      const first = Math.min(n, cap - at);
      this.buf.copy(out, 0, at, at + first);
      if (first < n) this.buf.copy(out, first, 0, n - first);
    }
    return { offset, data: out, lost };
  }

  private grow(need: number): void {
    if (need <= this.buf.length || this.buf.length >= this.capacity) return;
    let size = this.buf.length;
    while (size < need && size < this.capacity) size *= 2;
    size = Math.min(size, this.capacity);
    // Unwrap into the new buffer keeping absolute-offset addressing (offset % size).
    const { data } = this.readFrom(this.start);
    const next = Buffer.alloc(size);
    const start = this.start;
    const at = start % size;
    const first = Math.min(data.length, size - at);
    data.copy(next, at, 0, first);
    if (first < data.length) data.copy(next, 0, first);
    this.buf = next;
  }
}
