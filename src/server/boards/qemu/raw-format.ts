// What a raw disk image is, learnt without trusting it: its format by magic bytes, and its partition
// table (MBR or GPT, CRCs and bounds checked against the disk) by parsing bytes — an image is never
// mounted, loop-attached or resolved by path. The errors a raw image's write or read-back refuses
// with, and the sizes the writer (raw-image.ts) and the decompressors (image-source.ts) share.
import fs from 'node:fs';
import zlib from 'node:zlib';
import { DriverError } from '../driver.ts';

export type RawImageFormat = 'img' | 'img.gz' | 'img.xz' | 'img.zst';

export interface PartitionInfo {
  /** The partition's number as the kernel names it (1-based: GPT entry index + 1, MBR slot + 1). */
  index: number;
  startBytes: number;
  sizeBytes: number;
  /** GPT: the type GUID, upper case, in its usual text form. */
  typeGuid?: string;
  /** MBR: the partition type byte. */
  mbrType?: number;
  /** GPT: the partition's name (control characters dropped). */
  name?: string;
  /** MBR: the active flag. GPT: the legacy-BIOS-bootable attribute, or an EFI system partition. */
  bootable: boolean;
}

/** Stable keys of what a raw image write or read-back refuses (worded by locales/<lng>/flash.json). */
export type RawImageErrorKey = 'flash.image_invalid' | 'flash.image_too_large' | 'flash.verify_failed';

export class RawImageError extends DriverError {
  constructor(
    override readonly key: RawImageErrorKey,
    message: string,
  ) {
    super(key, message);
  }
}

export const MIB = 1024 * 1024;
export const SECTOR = 512;
export const BLOCK = 4096;
export const CHUNK = 4 * MIB;
/** What parsePartitionTable needs of a disk's start: the MBR, the GPT header and its entries. */
export const PARTITION_TABLE_BYTES = MIB;
/** The largest disk a table may describe before the disk's real size is known. */
export const ANY_DISK = Number.MAX_SAFE_INTEGER - (Number.MAX_SAFE_INTEGER % SECTOR);
const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

export const invalid = (message: string) => new RawImageError('flash.image_invalid', message);
export const aborted = () => new DriverError('flash.aborted', 'The flash was stopped');

// ————— format —————

export function formatOf(head: Buffer, size: number): RawImageFormat | null {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'img.gz';
  if (head.length >= 6 && head.subarray(0, 6).equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])))
    return 'img.xz';
  if (head.length >= 4 && head.readUInt32LE(0) === 0xfd2fb528) return 'img.zst';
  if (size === 0 || size % SECTOR !== 0) return null;
  if (head.length >= SECTOR && head[510] === 0x55 && head[511] === 0xaa) return 'img';
  if (head.length >= SECTOR + 8 && head.toString('latin1', SECTOR, SECTOR + 8) === 'EFI PART') return 'img';
  return null;
}

export async function readHead(fh: fs.promises.FileHandle, bytes: number): Promise<Buffer> {
  const buf = Buffer.alloc(bytes);
  let n = 0;
  while (n < bytes) {
    const { bytesRead } = await fh.read(buf, n, bytes - n, n);
    if (bytesRead === 0) break;
    n += bytesRead;
  }
  return buf.subarray(0, n);
}

/** Opens an image for reading: never through a link, and only a regular file. */
export async function openImage(file: string): Promise<fs.promises.FileHandle> {
  const fh = await fs.promises.open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!(await fh.stat()).isFile()) {
    await fh.close();
    throw invalid('The image is not a regular file');
  }
  return fh;
}

/**
 * By magic bytes only (gzip 1f8b, xz fd377a585a00, zstd 28b52ffd; else 'img' when the file is a raw
 * disk: size a multiple of 512 and an MBR boot signature 55aa at 510 or 'EFI PART' at 512); null
 * otherwise. A link, or a missing file, is an error of its own (ELOOP, ENOENT).
 */
export async function detectRawFormat(file: string): Promise<RawImageFormat | null> {
  const fh = await fs.promises.open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) return null;
    return formatOf(await readHead(fh, 2 * SECTOR), st.size);
  } finally {
    await fh.close();
  }
}

// ————— partition table —————

const ESP_GUID = 'C12A7328-F81F-11D2-BA4B-00A0C93EC93B';
/** GPT attribute bit 2: legacy BIOS bootable. */
const GPT_LEGACY_BOOTABLE = 1n << 2n;

/** A 64-bit little-endian field as a number; past 2^53 it is out of every bound, so Infinity. */
function u64(buf: Buffer, off: number): number {
  const v = buf.readBigUInt64LE(off);
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(v);
}

function guidText(b: Buffer): string {
  const h = (s: Buffer) => s.toString('hex');
  const le = (s: Buffer) => h(Buffer.from(s).reverse());
  return `${le(b.subarray(0, 4))}-${le(b.subarray(4, 6))}-${le(b.subarray(6, 8))}-${h(b.subarray(8, 10))}-${h(b.subarray(10, 16))}`.toUpperCase();
}

function gptName(b: Buffer): string {
  let end = 0;
  while (end + 1 < b.length && (b[end] !== 0 || b[end + 1] !== 0)) end += 2;
  return b.toString('utf16le', 0, end).replace(/[\u0000-\u001f\u007f]/g, '');
}

function checkOverlaps(parts: PartitionInfo[]): void {
  const sorted = [...parts].sort((a, b) => a.startBytes - b.startBytes);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1];
    if (prev.startBytes + prev.sizeBytes > sorted[i].startBytes)
      throw invalid(`Partitions ${prev.index} and ${sorted[i].index} overlap`);
  }
}

function parseGpt(head: Buffer, sectors: number): PartitionInfo[] {
  if (head.length < 2 * SECTOR) throw invalid('The disk ends inside its GPT header');
  const h = head.subarray(SECTOR, 2 * SECTOR);
  if (h.toString('latin1', 0, 8) !== 'EFI PART') throw invalid('A protective MBR without a GPT header');
  if (h.readUInt32LE(8) !== 0x00010000) throw invalid('Unknown GPT revision');
  const headerSize = h.readUInt32LE(12);
  if (headerSize < 92 || headerSize > SECTOR) throw invalid(`GPT header size ${headerSize} is out of bounds`);
  const header = Buffer.from(h.subarray(0, headerSize));
  header.writeUInt32LE(0, 16);
  if (zlib.crc32(header) !== h.readUInt32LE(16)) throw invalid('GPT header CRC32 mismatch');
  if (u64(h, 24) !== 1) throw invalid('The GPT header does not say it is at LBA 1');
  const backup = u64(h, 32);
  const firstUsable = u64(h, 40);
  const lastUsable = u64(h, 48);
  const entriesLba = u64(h, 72);
  const count = h.readUInt32LE(80);
  const entrySize = h.readUInt32LE(84);
  if (backup <= 1 || backup >= sectors) throw invalid('The backup GPT header lies beyond the disk');
  if (firstUsable > lastUsable || lastUsable >= backup)
    throw invalid('The GPT usable area overlaps the backup header or lies beyond the disk');
  if (entrySize < 128 || entrySize > SECTOR || entrySize % 128 !== 0 || (entrySize & (entrySize - 1)) !== 0)
    throw invalid(`GPT entry size ${entrySize} is not supported`);
  const arrayBytes = count * entrySize;
  if (count === 0 || arrayBytes > PARTITION_TABLE_BYTES - 2 * SECTOR)
    throw invalid(`GPT entry count ${count} is out of bounds`);
  const arrayStart = entriesLba * SECTOR;
  if (entriesLba < 2 || entriesLba + Math.ceil(arrayBytes / SECTOR) > firstUsable)
    throw invalid('The GPT entries overlap the header or the usable area');
  if (arrayStart + arrayBytes > Math.min(head.length, sectors * SECTOR))
    throw invalid('The GPT entries lie beyond the disk or past its first MiB');
  const array = head.subarray(arrayStart, arrayStart + arrayBytes);
  if (zlib.crc32(array) !== h.readUInt32LE(88)) throw invalid('GPT entries CRC32 mismatch');
  const parts: PartitionInfo[] = [];
  for (let i = 0; i < count; i++) {
    const e = array.subarray(i * entrySize, (i + 1) * entrySize);
    const type = e.subarray(0, 16);
    if (type.equals(Buffer.alloc(16))) continue;
    const first = u64(e, 32);
    const last = u64(e, 40);
    if (first > last || first < firstUsable || last > lastUsable)
      throw invalid(`GPT partition ${i + 1} lies outside the usable area`);
    const typeGuid = guidText(type);
    parts.push({
      index: i + 1,
      startBytes: first * SECTOR,
      sizeBytes: (last - first + 1) * SECTOR,
      typeGuid,
      name: gptName(e.subarray(56, 128)),
      bootable: typeGuid === ESP_GUID || (e.readBigUInt64LE(48) & GPT_LEGACY_BOOTABLE) !== 0n,
    });
  }
  return parts;
}

/**
 * Parses a GPT (protective MBR + header at LBA 1, entries, CRC32 of header and entries checked) or a
 * plain MBR from the first bytes of a disk (PARTITION_TABLE_BYTES of them suffice; less when the disk is
 * smaller); throws RawImageError on anything malformed or out of bounds (entries beyond the disk,
 * overlapping, absurd counts), and on a table with no partition (it boots nothing). Sectors are 512
 * bytes. The backup GPT is not read; an MBR's extended partition is reported, not walked (its logical
 * partitions' records lie anywhere on the disk).
 */
export function parsePartitionTable(
  head: Buffer,
  diskBytes: number,
): { scheme: 'gpt' | 'mbr'; partitions: PartitionInfo[] } {
  if (!Number.isSafeInteger(diskBytes) || diskBytes < SECTOR || diskBytes % SECTOR !== 0)
    throw invalid(`A disk of ${diskBytes} bytes is not a whole number of sectors`);
  if (head.length < SECTOR) throw invalid('The disk is shorter than its partition table');
  if (head[510] !== 0x55 || head[511] !== 0xaa) throw invalid('No partition table (no MBR boot signature)');
  const sectors = diskBytes / SECTOR;
  const slots = [0, 1, 2, 3].map((i) => head.subarray(446 + 16 * i, 446 + 16 * (i + 1)));
  let scheme: 'gpt' | 'mbr' = 'mbr';
  let partitions: PartitionInfo[];
  if (slots.some((e) => e[4] === 0xee)) {
    scheme = 'gpt';
    partitions = parseGpt(head, sectors);
  } else {
    partitions = [];
    slots.forEach((e, i) => {
      const type = e[4];
      if (type === 0) return;
      const status = e[0];
      const start = e.readUInt32LE(8);
      const size = e.readUInt32LE(12);
      if (status !== 0 && status !== 0x80) throw invalid(`MBR partition ${i + 1} has a bad status byte`);
      if (start === 0 || size === 0 || start + size > sectors)
        throw invalid(`MBR partition ${i + 1} lies outside the disk`);
      partitions.push({
        index: i + 1,
        startBytes: start * SECTOR,
        sizeBytes: size * SECTOR,
        mbrType: type,
        bootable: status === 0x80,
      });
    });
  }
  if (!partitions.length) throw invalid('The partition table has no partition');
  checkOverlaps(partitions);
  return { scheme, partitions };
}
