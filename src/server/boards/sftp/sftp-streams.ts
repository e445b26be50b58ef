// Pipelined read and write streams over an open SFTP file handle. ssh2's own createReadStream and
// createWriteStream keep one request in flight at a time (and its reads are 64 KiB), so every chunk
// waits a full round trip to the server and back: a few tens of MiB/s. These keep several requests
// of the server's largest size (OpenSSH: 255 KiB, from limits@openssh.com) outstanding, each at its
// absolute offset, as `sftp` and OpenSSH's own client do.
//
// Lifecycle: the caller opens the handle and hands it over; the stream closes it. A write stream's
// 'finish' comes after every write was acknowledged and the handle closed, so a finished stream's file
// is complete on the server. A read stream delivers bytes in file order and ends at the server's EOF.
// Destroying either stream stops issuing requests, waits (bounded) for those in flight, then closes
// the handle. Errors go through `mapError` so they reach callers as DriverErrors.
//
// Copies: over a stdio session (a local board's sftp-server) the bytes are never copied here — writes
// send the caller's buffers as they are and reads deliver slices of the pipe's chunks (`bulkOf`, see
// stdio-sftp.ts). Over SSH, ssh2 copies each request into its packet before write() returns, so the
// pieces of a request are gathered in one staging buffer that every request reuses.
import { Readable, Writable } from 'node:stream';
import type { SFTPWrapper } from 'ssh2';
import { type BulkSftp, bulkOf } from './stdio-sftp.ts';

/** Requests in flight per stream: 16 × 255 KiB keeps a local pipe and a LAN link busy. */
export const MAX_IN_FLIGHT = 16;
const FALLBACK_CHUNK = 32 * 1024;

/** ssh2 keeps the sizes it negotiated (limits@openssh.com, or the OpenSSH defaults) on the session. */
function chunkOf(sftp: SFTPWrapper, which: '_maxReadLen' | '_maxWriteLen'): number {
  const n = Number((sftp as unknown as Record<string, unknown>)[which]);
  return Number.isFinite(n) && n >= 4096 ? Math.min(n, 256 * 1024) : FALLBACK_CHUNK;
}

export interface HandleStreamOptions {
  /** Maps an SFTP failure to the error the stream reports. */
  mapError: (err: Error) => Promise<Error>;
  /** How long a destroyed stream waits for its requests in flight before it gives the handle up. */
  settleMs: number;
  inFlight?: number;
  /** Write streams: fsync@openssh.com before the close, where the server offers it. */
  fsync?: boolean;
  /** Read streams: the offset to read from (a resumed download). */
  start?: number;
}

/** Resolves when `count()` reaches 0 (checked whenever `wake` runs), or after `ms`. */
class Idle {
  private waiters: Array<() => void> = [];
  wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  wait(busy: () => boolean, ms?: number): Promise<boolean> {
    if (!busy()) return Promise.resolve(true);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        if (!busy()) {
          clearTimeout(timer);
          resolve(true);
        } else this.waiters.push(check);
      };
      if (ms !== undefined) {
        timer = setTimeout(() => {
          this.waiters = this.waiters.filter((f) => f !== check);
          resolve(false);
        }, ms);
        timer.unref?.();
      }
      this.waiters.push(check);
    });
  }
}

const closeHandle = (sftp: SFTPWrapper, handle: Buffer) =>
  new Promise<Error | undefined>((resolve) => sftp.close(handle, (err) => resolve(err ?? undefined)));

/** A close that does not wait past `ms` (a hung session must not keep a destroyed stream from closing). */
const closeWithin = (sftp: SFTPWrapper, handle: Buffer, ms: number) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref?.();
    void closeHandle(sftp, handle).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });

function fsyncHandle(sftp: SFTPWrapper, handle: Buffer): Promise<Error | undefined> {
  return new Promise((resolve) => {
    try {
      sftp.ext_openssh_fsync(handle, (err) => resolve(err ?? undefined));
    } catch {
      // ssh2 throws when the server lacks fsync@openssh.com: the close is all there is.
      resolve(undefined);
    }
  });
}

/** Writes at increasing offsets from 0, up to `inFlight` requests at once. */
export class SftpWriteStream extends Writable {
  private pos = 0;
  private inFlight = 0;
  /** The pieces of the next request (slices of what was written, not copies). */
  private pending: Buffer[] = [];
  private pendingLen = 0;
  /** Over SSH: where a request's pieces are gathered for ssh2, reused (ssh2 copies it at once). */
  private staging: Buffer | null = null;
  /** The callback of a write held back until a request in flight completes (backpressure). */
  private held: ((err?: Error | null) => void) | null = null;
  private failure: Error | null = null;
  private handleClosed = false;
  private readonly idle = new Idle();
  private readonly chunk: number;
  private readonly max: number;
  private readonly bulk: BulkSftp | undefined;

  constructor(
    private readonly sftp: SFTPWrapper,
    private readonly handle: Buffer,
    private readonly o: HandleStreamOptions,
  ) {
    super({ highWaterMark: 1 << 20 });
    this.chunk = chunkOf(sftp, '_maxWriteLen');
    this.max = o.inFlight ?? MAX_IN_FLIGHT;
    this.bulk = bulkOf(sftp);
  }

  /** Bytes handed to the server so far. */
  get position(): number {
    return this.pos;
  }

  override _write(data: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.failure) {
      cb(this.failure);
      return;
    }
    // Cut into requests of the server's largest size; a request may span several writes.
    let off = 0;
    while (off < data.length) {
      const n = Math.min(this.chunk - this.pendingLen, data.length - off);
      this.pending.push(off === 0 && n === data.length ? data : data.subarray(off, off + n));
      this.pendingLen += n;
      off += n;
      if (this.pendingLen === this.chunk) this.flush();
    }
    if (this.inFlight >= this.max) this.held = cb;
    else cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (!this.failure) this.flush();
    void (async () => {
      await this.idle.wait(() => this.inFlight > 0);
      if (this.failure) return cb(this.failure);
      this.handleClosed = true;
      const synced = this.o.fsync ? await fsyncHandle(this.sftp, this.handle) : undefined;
      const err = (await closeHandle(this.sftp, this.handle)) ?? synced;
      cb(err ? await this.o.mapError(err) : null);
    })();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    void (async () => {
      if (!this.handleClosed) {
        this.handleClosed = true;
        // Requests in flight are answered or failed when the session ends; a hung session is not waited for.
        if (await this.idle.wait(() => this.inFlight > 0, this.o.settleMs))
          await closeWithin(this.sftp, this.handle, this.o.settleMs);
      }
      cb(err);
    })();
  }

  /** Sends what is pending as one request. */
  private flush(): void {
    if (!this.pendingLen) return;
    const pieces = this.pending;
    const len = this.pendingLen;
    this.pending = [];
    this.pendingLen = 0;
    this.request(pieces, len);
  }

  private request(pieces: Buffer[], len: number): void {
    const at = this.pos;
    this.pos += len;
    this.inFlight++;
    const answered = (err?: Error | null) => {
      void (async () => {
        if (err && !this.failure) this.failure = await this.o.mapError(err);
        this.inFlight--;
        const held = this.held;
        if (held && (this.inFlight < this.max || this.failure)) {
          this.held = null;
          held(this.failure);
        }
        this.idle.wake();
      })();
    };
    if (this.bulk) {
      this.bulk.write(this.handle, pieces, len, at, answered);
      return;
    }
    let data = pieces[0];
    if (pieces.length > 1) {
      this.staging ??= Buffer.allocUnsafe(this.chunk);
      let p = 0;
      for (const piece of pieces) p += piece.copy(this.staging, p);
      data = this.staging;
    }
    // ssh2 copies the bytes into its packet before it returns (no request exceeds its largest
    // size, so it never reads `data` later): the staging buffer is free again at once.
    this.sftp.write(this.handle, data, 0, len, at, answered);
  }
}

interface Slot {
  at: number;
  len: number;
  /** The bytes read, in order; set with `got`. */
  pieces?: Buffer[];
  /** Bytes read; undefined while the request is in flight. */
  got?: number;
}

/** Reads from offset `start` (0) to the server's EOF, up to `inFlight` requests at once, delivered in order. */
export class SftpReadStream extends Readable {
  private next = 0;
  private readonly slots: Slot[] = [];
  private inFlight = 0;
  private eof = false;
  private wanted = false;
  private stopped = false;
  private handleClosed = false;
  private readonly idle = new Idle();
  private readonly chunk: number;
  private readonly max: number;
  private readonly bulk: BulkSftp | undefined;

  constructor(
    private readonly sftp: SFTPWrapper,
    private readonly handle: Buffer,
    private readonly o: HandleStreamOptions,
  ) {
    super({ highWaterMark: 1 << 20 });
    this.next = o.start ?? 0;
    this.chunk = chunkOf(sftp, '_maxReadLen');
    this.max = o.inFlight ?? MAX_IN_FLIGHT;
    this.bulk = bulkOf(sftp);
  }

  override _read(): void {
    this.wanted = true;
    this.fill();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.stopped = true;
    void (async () => {
      if (!this.handleClosed) {
        this.handleClosed = true;
        if (await this.idle.wait(() => this.inFlight > 0, this.o.settleMs))
          await closeWithin(this.sftp, this.handle, this.o.settleMs);
      }
      cb(err);
    })();
  }

  private fill(): void {
    while (this.wanted && !this.eof && !this.stopped && this.slots.length < this.max) {
      this.request({ at: this.next, len: this.chunk }, false);
      this.next += this.chunk;
    }
  }

  private request(slot: Slot, first: boolean): void {
    if (first) this.slots.unshift(slot);
    else this.slots.push(slot);
    this.inFlight++;
    const answered = (err: Error | undefined | null, pieces: Buffer[], nb: number) => {
      this.inFlight--;
      this.idle.wake();
      if (this.stopped) return;
      if (err) {
        this.stopped = true;
        void this.o.mapError(err).then((e) => this.destroy(e));
        return;
      }
      slot.pieces = pieces;
      slot.got = nb;
      this.deliver();
    };
    if (this.bulk) {
      this.bulk.read(this.handle, slot.len, slot.at, answered);
      return;
    }
    const buf = Buffer.allocUnsafe(slot.len);
    this.sftp.read(this.handle, buf, 0, slot.len, slot.at, (err, nb) =>
      answered(err, nb ? [buf.subarray(0, nb)] : [], nb ?? 0),
    );
  }

  /** Pushes completed slots from the head, in file order. */
  private deliver(): void {
    while (this.slots.length && this.slots[0].got !== undefined && !this.stopped) {
      const slot = this.slots.shift() as Slot;
      const got = slot.got as number;
      if (got === 0) {
        // EOF: requests further on answer EOF too; end once none is left in flight.
        this.eof = true;
        this.slots.length = 0;
        void this.finishAtEof();
        return;
      }
      if (got < slot.len) {
        // A short read before EOF: ask for the rest before anything later is delivered.
        this.request({ at: slot.at + got, len: slot.len - got }, true);
      }
      for (const piece of slot.pieces ?? []) if (!this.push(piece)) this.wanted = false;
    }
    this.fill();
  }

  private async finishAtEof(): Promise<void> {
    await this.idle.wait(() => this.inFlight > 0, this.o.settleMs);
    if (this.stopped) return;
    this.handleClosed = true;
    const err = await closeHandle(this.sftp, this.handle);
    if (err) this.destroy(await this.o.mapError(err));
    else this.push(null);
  }
}
