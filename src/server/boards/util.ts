// Small helpers shared by the drivers: timeouts on every call, a byte ring for console scrollback.
import { DriverError } from './driver.ts';

/** Rejects with `driver.timeout` when `work` does not settle in time; `onTimeout` may cancel the work. */
export function withTimeout<T>(
  work: Promise<T>,
  ms: number,
  what: string,
  onTimeout?: () => void,
  /** The error to answer instead of the generic `driver.timeout` one. */
  error?: () => Error,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onTimeout?.();
      reject(error?.() ?? new DriverError('driver.timeout', `${what} timed out after ${ms} ms`));
    }, ms);
    timer.unref?.();
    work.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/** A bounded byte buffer keeping the newest bytes: console scrollback that survives reconnects. */
export class ByteRing {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly capacity: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.capacity && this.chunks.length) {
      const head = this.chunks[0];
      const excess = this.size - this.capacity;
      if (head.length <= excess) {
        this.chunks.shift();
        this.size -= head.length;
      } else {
        this.chunks[0] = head.subarray(excess);
        this.size -= excess;
      }
    }
  }

  snapshot(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
