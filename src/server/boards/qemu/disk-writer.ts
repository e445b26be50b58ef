// Writing an image onto a riscv64 board's disk (a flash, the default image at first start and at a
// lease's end): a new file beside the disk, read back against its hash, swapped in with the machine off.
import fs from 'node:fs';
import path from 'node:path';
import { DriverError, type FlashOptions, type FlashProgress } from '../driver.ts';
import type { BoardImages } from './board-images.ts';
import type { BoardFacts } from './facts.ts';
import type { Machine } from './machine.ts';
import { RawImageError, verifyRawImage, writeRawImage } from './raw-image.ts';
import type { BoardDisk } from './snapshot-disk.ts';

/** Largest disk a flash may write (decompressed): bombs stop here. */
export const MAX_DISK_BYTES = 64 * 1024 ** 3;

export interface DiskWriterInit {
  /** The board's raw disk (`<boardDir>/disk.img`); `<disk>.image` names the image it holds. */
  diskFile: string;
  disk: BoardDisk;
  images: BoardImages;
  /** The board's default image (its options' `image`). */
  image: string;
  /** The board's machine, once started. */
  machine: () => Machine | null;
  setFacts: (f: BoardFacts) => void;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
}

export class DiskWriter {
  constructor(private readonly o: DiskWriterInit) {}

  /** The board's default image onto its disk (waiting for it to be built if it is not yet). */
  async writeDefaultImage(onProgress?: (p: FlashProgress) => void, signal?: AbortSignal): Promise<void> {
    let img = this.o.images.find(this.o.image);
    if (!img) {
      this.o.log?.('waiting for the board image to be built', { image: this.o.image });
      await this.o.images.ensure();
      img = this.o.images.find(this.o.image);
    }
    if (!img) throw new DriverError('board.image_missing', `The board image ${this.o.image} is not built`);
    await this.replaceDisk(
      img.file,
      onProgress ?? (() => {}),
      { signal, format: 'img.zst', label: this.o.image, tag: this.o.image },
      img.facts.rawBytes,
      true,
    );
  }

  /**
   * Writes `image` to a new file beside the disk, reads it back against the written hash, and only then,
   * the machine off, renames it over the disk. A failure or cancel leaves the old disk as it was.
   */
  async replaceDisk(
    image: string,
    onProgress: (p: FlashProgress) => void,
    opts: FlashOptions,
    expectBytes?: number,
    dropSnapshots = false,
  ): Promise<void> {
    const disk = this.o.disk;
    const next = `${this.o.diskFile}.next`;
    fs.rmSync(next, { force: true });
    try {
      onProgress({
        phase: 'writing',
        percent: 0,
        log: `writing ${opts.label ?? path.basename(image)} to the board's disk`,
      });
      const written = await writeRawImage(image, next, {
        maxBytes: MAX_DISK_BYTES,
        signal: opts.signal,
        onProgress: (done) =>
          onProgress({
            phase: 'writing',
            percent: expectBytes ? Math.min(99, Math.floor((done / expectBytes) * 100)) : 0,
            bytesDone: done,
            bytesTotal: expectBytes,
          }),
      });
      onProgress({ phase: 'writing', percent: 100, bytesDone: written.bytes, bytesTotal: written.bytes });
      onProgress({ phase: 'verifying', percent: 0, log: `sha256 ${written.sha256}` });
      await verifyRawImage(next, written, {
        signal: opts.signal,
        onProgress: (done) =>
          onProgress({
            phase: 'verifying',
            percent: Math.min(99, Math.floor((done / written.bytes) * 100)),
            bytesDone: done,
            bytesTotal: written.bytes,
          }),
      });
      onProgress({ phase: 'verifying', percent: 100, bytesDone: written.bytes, bytesTotal: written.bytes });
      if (opts.signal?.aborted) throw new DriverError('flash.cancelled', 'Cancelled');
      await disk.exclusive(async () => {
        // Snapshots of the disk a flash replaces stay restorable: its pair becomes an older epoch.
        const keep = !dropSnapshots && (await disk.snapshots()).length > 0;
        // The new overlay first, then the base's rename commits (snapshot-disk.ts, prepare()).
        await disk.createOverlay(`${disk.overlay}.next`, written.bytes);
        const machine = this.o.machine();
        const wasOn = machine?.running ?? false;
        await machine?.powerOff();
        disk.commitFlash(keep);
        // The lease's end (the default image back): every older epoch goes too.
        if (dropSnapshots) disk.dropEpochs();
        this.afterSwap(image, opts);
        if (wasOn) await machine?.powerOn();
      });
    } catch (err) {
      // Before the commit (the base's rename) both new files go; after it, prepare() finishes the swap.
      if (fs.existsSync(next)) fs.rmSync(`${disk.overlay}.next`, { force: true });
      fs.rmSync(next, { force: true });
      if (err instanceof RawImageError) throw new DriverError(err.key, err.message);
      throw err;
    }
  }

  /** Which image the disk holds now (an older epoch's after its restore), for the catalogue. */
  readImageTag(): void {
    try {
      const tag = fs.readFileSync(`${this.o.diskFile}.image`, 'utf8').trim();
      if (tag) this.o.setFacts({ image: tag });
    } catch {}
  }

  private afterSwap(image: string, opts: FlashOptions): void {
    // Which image the disk holds now, for the catalogue (what the label names, or the file's name).
    const tag = opts.tag ?? opts.label ?? path.basename(image);
    fs.writeFileSync(`${this.o.diskFile}.image`, `${tag}\n`, { mode: 0o600 });
    this.o.setFacts({ image: tag });
  }
}
