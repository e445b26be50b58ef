// The raw disk image writer that flashes QEMU boards, against what a user may upload: images of
// each format written whole, sparse and hashed; truncated and corrupt streams, decompression bombs,
// files that are no disk and partition tables that lie refused, each leaving nothing behind; an
// abort that removes the half-written disk; a read-back that catches one changed byte; and a
// destination that is never written through. Test disks are made here with truncate + sfdisk and a
// few regions of random bytes, compressed with the gzip, xz and zstd tools.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  detectRawFormat,
  PARTITION_TABLE_BYTES,
  parsePartitionTable,
  RawImageError,
  type RawImageFormat,
  verifyRawImage,
  writeRawImage,
} from '#server/boards/qemu/raw-image.ts';

const MIB = 1024 * 1024;
const DISK = 32 * MIB;
const ESP = 'C12A7328-F81F-11D2-BA4B-00A0C93EC93B';
const LINUX = '0FC63DAF-8483-4772-8E79-3D69E4477DE4';
const FORMATS: RawImageFormat[] = ['img', 'img.gz', 'img.xz', 'img.zst'];

let work: string;
const at = (name: string) => path.join(work, name);
let seq = 0;
/** A destination path not used before. */
const fresh = () => at(`dest-${++seq}.img`);

const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** A disk of `bytes` with a partition table made by sfdisk and random bytes at `regions` (offset, length). */
function makeDisk(
  name: string,
  opts: { label: 'gpt' | 'dos'; bytes?: number; regions?: Array<[number, number]> },
): string {
  const file = at(name);
  fs.writeFileSync(file, '');
  fs.truncateSync(file, opts.bytes ?? DISK);
  const table =
    opts.label === 'gpt'
      ? `label: gpt\nstart=2048, size=8192, type=${ESP}, name="boot"\nstart=10240, type=${LINUX}, name="rootfs", attrs="LegacyBIOSBootable"\n`
      : 'label: dos\nstart=2048, size=8192, type=c, bootable\nstart=10240, type=83\n';
  execFileSync('sfdisk', ['--quiet', file], { input: table });
  const fd = fs.openSync(file, 'r+');
  // Unaligned regions too: a 4 KiB block that is partly data must be written whole.
  for (const [offset, length] of opts.regions ?? [
    [1 * MIB + 100, 200_000],
    [6 * MIB, 300_000],
    [20 * MIB + 4096 * 3 + 17, 150_000],
  ])
    fs.writeSync(fd, crypto.randomBytes(length), 0, length, offset);
  fs.closeSync(fd);
  return file;
}

/** `file` compressed as `format` next to it (the tools' own output, whole files). */
function compress(file: string, format: RawImageFormat, out = `${file}.${format.slice(4)}`): string {
  if (format === 'img') return file;
  const tool = {
    'img.gz': ['gzip', '-c', '-1'],
    'img.xz': ['xz', '-c', '-0', '-T1'],
    'img.zst': ['zstd', '-q', '-c'],
  }[format];
  fs.writeFileSync(out, execFileSync(tool[0], [...tool.slice(1), file], { maxBuffer: 256 * MIB }));
  return out;
}

/** The first bytes of a disk as parsePartitionTable reads them. */
const headOf = (file: string) => fs.readFileSync(file).subarray(0, PARTITION_TABLE_BYTES);

/** Recomputes a GPT's entries CRC and then its header CRC (a forged table that checks out). */
function reseal(head: Buffer): Buffer {
  const h = head.subarray(512, 1024);
  const entries = Number(h.readBigUInt64LE(72)) * 512;
  const count = h.readUInt32LE(80);
  const size = h.readUInt32LE(84);
  if (entries + count * size <= head.length)
    h.writeUInt32LE(zlib.crc32(head.subarray(entries, entries + count * size)), 88);
  h.writeUInt32LE(0, 16);
  h.writeUInt32LE(zlib.crc32(h.subarray(0, h.readUInt32LE(12))), 16);
  return head;
}

/** A copy of `disk` whose first bytes `edit` changed. */
function forged(disk: string, name: string, edit: (head: Buffer) => void): string {
  const out = at(name);
  fs.copyFileSync(disk, out);
  const head = headOf(out);
  edit(head);
  const fd = fs.openSync(out, 'r+');
  fs.writeSync(fd, head, 0, head.length, 0);
  fs.closeSync(fd);
  return out;
}

async function refusal(p: Promise<unknown>): Promise<RawImageError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RawImageError);
  return err as RawImageError;
}

let gpt: string;
let mbr: string;

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-raw-image-'));
  gpt = makeDisk('gpt.img', { label: 'gpt' });
  mbr = makeDisk('mbr.img', { label: 'dos' });
  for (const f of FORMATS) {
    compress(gpt, f);
    compress(mbr, f);
  }
  // Files that are no disk: random bytes (no boot signature by chance), a tar of them.
  const random = crypto.randomBytes(MIB);
  random[510] = 0;
  fs.writeFileSync(at('random.bin'), random);
  execFileSync('tar', ['-cf', at('some.tar'), '-C', work, 'random.bin']);
});

afterAll(() => {
  fs.rmSync(work, { recursive: true, force: true });
});

describe('detectRawFormat', () => {
  it.each(FORMATS)('knows a .%s by its first bytes', async (format) => {
    const file = format === 'img' ? gpt : `${gpt}.${format.slice(4)}`;
    // Named nothing like what it is: the name is never trusted.
    const renamed = at(`renamed-${format}`);
    fs.copyFileSync(file, renamed);
    expect(await detectRawFormat(renamed)).toBe(format);
    expect(await detectRawFormat(format === 'img' ? mbr : `${mbr}.${format.slice(4)}`)).toBe(format);
  });

  it('answers null for random bytes, a tar and a disk-like file that is not whole sectors', async () => {
    const ragged = Buffer.concat([fs.readFileSync(gpt).subarray(0, MIB), Buffer.alloc(100)]);
    fs.writeFileSync(at('ragged.img'), ragged);
    expect(await detectRawFormat(at('random.bin'))).toBeNull();
    expect(await detectRawFormat(at('some.tar'))).toBeNull();
    expect(await detectRawFormat(at('ragged.img'))).toBeNull();
  });
});

describe('parsePartitionTable', () => {
  it('reads a GPT: partitions, types, names and the bootable ones', () => {
    expect(parsePartitionTable(headOf(gpt), DISK)).toEqual({
      scheme: 'gpt',
      partitions: [
        { index: 1, startBytes: MIB, sizeBytes: 4 * MIB, typeGuid: ESP, name: 'boot', bootable: true },
        {
          index: 2,
          startBytes: 5 * MIB,
          // sfdisk ends the last partition on a MiB boundary, short of the backup table.
          sizeBytes: DISK - 6 * MIB,
          typeGuid: LINUX,
          name: 'rootfs',
          bootable: true,
        },
      ],
    });
  });

  it('reads an MBR: partitions, type bytes and the active one', () => {
    expect(parsePartitionTable(headOf(mbr), DISK)).toEqual({
      scheme: 'mbr',
      partitions: [
        { index: 1, startBytes: MIB, sizeBytes: 4 * MIB, mbrType: 0x0c, bootable: true },
        { index: 2, startBytes: 5 * MIB, sizeBytes: DISK - 5 * MIB, mbrType: 0x83, bootable: false },
      ],
    });
  });

  // Each forged table would pass if the check it names were missing (the CRCs are recomputed).
  const gptCases: Array<[string, (h: Buffer) => void, RegExp]> = [
    ['a header whose CRC32 does not match', (h) => (h[512 + 56] ^= 1), /header CRC32/],
    ['entries whose CRC32 does not match', (h) => (h[1024 + 56] ^= 1), /entries CRC32/],
    [
      'a partition that ends beyond the disk',
      (h) => {
        h.writeBigUInt64LE(BigInt(DISK / 512 + 100), 1024 + 128 + 40);
        reseal(h);
      },
      /outside the usable area/,
    ],
    [
      'a usable area larger than the disk',
      (h) => {
        h.writeBigUInt64LE(BigInt((2 * DISK) / 512 - 34), 512 + 48);
        reseal(h);
      },
      /beyond the disk/,
    ],
    [
      '2^20 entries',
      (h) => {
        h.writeUInt32LE(2 ** 20, 512 + 80);
        reseal(h);
      },
      /entry count 1048576/,
    ],
    [
      'overlapping partitions',
      (h) => {
        h.writeBigUInt64LE(4096n, 1024 + 128 + 32);
        reseal(h);
      },
      /overlap/,
    ],
    [
      'entries placed over the header',
      (h) => {
        h.writeBigUInt64LE(1n, 512 + 72);
        reseal(h);
      },
      /overlap the header/,
    ],
    [
      'a protective MBR without a GPT header',
      (h) => h.write('NOT PART', 512, 'latin1'),
      /without a GPT header/,
    ],
  ];
  it.each(gptCases)('refuses a GPT with %s', (_, edit, message) => {
    const head = Buffer.from(headOf(gpt));
    expect(() => parsePartitionTable(head, DISK)).not.toThrow();
    edit(head);
    expect(() => parsePartitionTable(head, DISK)).toThrow(message);
    try {
      parsePartitionTable(head, DISK);
    } catch (err) {
      expect((err as RawImageError).key).toBe('flash.image_invalid');
    }
  });

  const mbrCases: Array<[string, (h: Buffer) => void, RegExp]> = [
    ['a partition beyond the disk', (h) => h.writeUInt32LE(DISK / 512, 446 + 16 + 12), /outside the disk/],
    ['overlapping partitions', (h) => h.writeUInt32LE(4096, 446 + 16 + 8), /overlap/],
    ['a bad status byte', (h) => (h[446] = 0x42), /status/],
    ['no boot signature', (h) => (h[511] = 0), /boot signature/],
    [
      'no partition at all',
      (h) => {
        h.fill(0, 446, 510);
      },
      /no partition/,
    ],
  ];
  it.each(mbrCases)('refuses an MBR with %s', (_, edit, message) => {
    const head = Buffer.from(headOf(mbr));
    expect(() => parsePartitionTable(head, DISK)).not.toThrow();
    edit(head);
    expect(() => parsePartitionTable(head, DISK)).toThrow(message);
  });

  it('refuses a table read against a disk smaller than it says', () => {
    expect(() => parsePartitionTable(headOf(gpt), DISK / 2)).toThrow(/beyond the disk/);
    expect(() => parsePartitionTable(headOf(mbr), DISK / 2)).toThrow(/outside the disk/);
  });
});

describe('writeRawImage and verifyRawImage', () => {
  it.each(FORMATS)('writes a .%s whole, hashed and sparse, and reads it back', async (format) => {
    const src = format === 'img' ? gpt : `${gpt}.${format.slice(4)}`;
    const dest = fresh();
    const progress: number[] = [];
    const r = await writeRawImage(src, dest, { maxBytes: 64 * MIB, onProgress: (d) => progress.push(d) });
    expect(r.bytes).toBe(DISK);
    expect(r.sha256).toBe(sha256(gpt));
    // The file itself, read independently, is the disk.
    expect(sha256(dest)).toBe(r.sha256);
    const st = fs.statSync(dest);
    expect(st.size).toBe(DISK);
    expect(st.mode & 0o777).toBe(0o600);
    // 650 KB of data in a 32 MiB disk: holes everywhere else.
    expect(st.blocks * 512).toBeLessThan(DISK / 8);
    expect(r.allocatedBytes).toBe(st.blocks * 512);
    expect(progress.at(-1)).toBe(DISK);
    await verifyRawImage(dest, r);
  });

  it('writes an MBR disk from .img.zst', async () => {
    const dest = fresh();
    const r = await writeRawImage(`${mbr}.zst`, dest, { maxBytes: 64 * MIB });
    expect(r).toMatchObject({ bytes: DISK, sha256: sha256(mbr) });
    expect(fs.statSync(dest).blocks * 512).toBeLessThan(DISK / 8);
  });

  it.each(['img.gz', 'img.xz', 'img.zst'] as const)(
    'refuses a truncated and a corrupt .%s, leaving no disk file',
    async (format) => {
      const whole = fs.readFileSync(`${gpt}.${format.slice(4)}`);
      const truncated = at(`truncated.${format}`);
      fs.writeFileSync(truncated, whole.subarray(0, Math.floor(whole.length * 0.6)));
      const corrupt = at(`corrupt.${format}`);
      const bad = Buffer.from(whole);
      bad[Math.floor(bad.length / 2)] ^= 0x55;
      fs.writeFileSync(corrupt, bad);
      for (const src of [truncated, corrupt]) {
        const dest = fresh();
        const err = await refusal(writeRawImage(src, dest, { maxBytes: 64 * MIB }));
        expect(err.key).toBe('flash.image_invalid');
        expect(fs.existsSync(dest)).toBe(false);
      }
    },
  );

  it.each(['img.gz', 'img.xz', 'img.zst'] as const)(
    'stops a .%s bomb at maxBytes, promptly and without the service growing',
    async (format) => {
      // A valid disk's first MiB, then 8 GiB of zeros as 128 concatenated 64 MiB members (gzip, xz
      // and zstd all read on across members): a few MiB on disk.
      const head = at(`bomb-head-${format}`);
      fs.writeFileSync(head, fs.readFileSync(gpt).subarray(0, MIB));
      const tool = { 'img.gz': 'gzip -9', 'img.xz': 'xz -0 -T1', 'img.zst': 'zstd -q' }[format];
      const member = execFileSync('sh', ['-c', `head -c 64M /dev/zero | ${tool} -c`], {
        maxBuffer: 64 * MIB,
      });
      const bomb = at(`bomb.${format}`);
      fs.writeFileSync(
        bomb,
        Buffer.concat([fs.readFileSync(compress(head, format, `${head}.c`)), ...Array(128).fill(member)]),
      );
      expect(fs.statSync(bomb).size).toBeLessThan(12 * MIB);
      global.gc?.();
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
      const dest = fresh();
      const t0 = Date.now();
      const err = await refusal(writeRawImage(bomb, dest, { maxBytes: 96 * MIB }));
      const took = Date.now() - t0;
      clearInterval(sampler);
      expect(err.key).toBe('flash.image_too_large');
      expect(fs.existsSync(dest)).toBe(false);
      // 96 MiB is well under a second of work; all 8 GiB would be a minute or more.
      expect(took).toBeLessThan(15_000);
      expect(peak - before).toBeLessThan(128 * MIB);
    },
  );

  it('stops a raw image larger than maxBytes', async () => {
    const dest = fresh();
    const err = await refusal(writeRawImage(gpt, dest, { maxBytes: DISK - 512 }));
    expect(err.key).toBe('flash.image_too_large');
    expect(fs.existsSync(dest)).toBe(false);
    // Exactly the limit is allowed.
    await writeRawImage(gpt, fresh(), { maxBytes: DISK });
  });

  it('refuses an xz stream whose dictionary exceeds the decompressor memory cap', async () => {
    // An ordinary .xz whose LZMA2 dictionary size is rewritten to 4 GiB (block header CRC32 fixed):
    // without the cap, xz would set out to allocate it and then decompress the disk.
    const xz = Buffer.from(fs.readFileSync(`${gpt}.xz`));
    const hdr = 12;
    const size = (xz[hdr] + 1) * 4;
    const flags = xz[hdr + 1];
    let p = hdr + 2;
    const skipVli = () => {
      while (xz[p++] & 0x80);
    };
    if (flags & 0x40) skipVli();
    if (flags & 0x80) skipVli();
    expect(xz[p]).toBe(0x21); // LZMA2
    expect(xz[p + 1]).toBe(1);
    xz[p + 2] = 40;
    xz.writeUInt32LE(zlib.crc32(xz.subarray(hdr, hdr + size - 4)), hdr + size - 4);
    fs.writeFileSync(at('bigdict.img.xz'), xz);
    const dest = fresh();
    const err = await refusal(writeRawImage(at('bigdict.img.xz'), dest, { maxBytes: 64 * MIB }));
    expect(err.key).toBe('flash.image_invalid');
    expect(err.message).toMatch(/xz refused/);
    expect(fs.existsSync(dest)).toBe(false);
  });

  it('refuses a zstd frame that asks for a window past the memory cap', async () => {
    // --long=28: a 256 MiB window, written in the frame header since the input size is unknown.
    const zst = execFileSync('sh', ['-c', `zstd -q -c --long=28 < '${gpt}'`], { maxBuffer: 64 * MIB });
    fs.writeFileSync(at('longwindow.img.zst'), zst);
    const dest = fresh();
    const err = await refusal(writeRawImage(at('longwindow.img.zst'), dest, { maxBytes: 64 * MIB }));
    expect(err.key).toBe('flash.image_invalid');
    expect(err.message).toMatch(/zstd refused/);
    expect(fs.existsSync(dest)).toBe(false);
  });

  it('refuses files that are no disk: random bytes, a tar, a tar.gz, a stream not whole sectors', async () => {
    execFileSync('sh', ['-c', `gzip -c '${at('some.tar')}' > '${at('some.tar.gz')}'`]);
    const ragged = Buffer.concat([fs.readFileSync(gpt), Buffer.alloc(100)]);
    fs.writeFileSync(at('ragged.bin'), ragged);
    const raggedZst = compress(at('ragged.bin'), 'img.zst', at('ragged.img.zst'));
    const notDisk = fs.readFileSync(gpt);
    notDisk[510] = 0;
    fs.writeFileSync(at('nosig.bin'), notDisk);
    const noSigZst = compress(at('nosig.bin'), 'img.zst', at('nosig.img.zst'));
    for (const src of [at('random.bin'), at('some.tar'), at('some.tar.gz'), raggedZst, noSigZst]) {
      const dest = fresh();
      const err = await refusal(writeRawImage(src, dest, { maxBytes: 64 * MIB }));
      expect(err.key, src).toBe('flash.image_invalid');
      expect(fs.existsSync(dest)).toBe(false);
    }
  });

  it('refuses GPT disks with a bad CRC, a partition beyond the disk or 2^20 entries', async () => {
    const cases = [
      forged(gpt, 'badcrc.img', (h) => (h[512 + 60] ^= 1)),
      forged(gpt, 'beyond.img', (h) => {
        h.writeBigUInt64LE(BigInt(DISK / 512 + 8), 1024 + 128 + 40);
        reseal(h);
      }),
      forged(gpt, 'million.img', (h) => {
        h.writeUInt32LE(2 ** 20, 512 + 80);
        reseal(h);
      }),
    ];
    for (const raw of cases) {
      for (const src of [raw, compress(raw, 'img.zst')]) {
        const dest = fresh();
        const err = await refusal(writeRawImage(src, dest, { maxBytes: 64 * MIB }));
        expect(err.key).toBe('flash.image_invalid');
        expect(fs.existsSync(dest)).toBe(false);
      }
    }
  });

  it('stops on abort: the decompressor killed, the half-written disk removed', async () => {
    // 256 MiB with data all along it, so that the write is still going when it is aborted.
    const big = makeDisk('big.img', {
      label: 'gpt',
      bytes: 256 * MIB,
      regions: Array.from({ length: 16 }, (_, i) => [8 * MIB + i * 15 * MIB, 4 * MIB] as [number, number]),
    });
    const src = compress(big, 'img.zst');
    fs.rmSync(big);
    const dest = fresh();
    const ac = new AbortController();
    const err = await writeRawImage(src, dest, {
      maxBytes: 512 * MIB,
      signal: ac.signal,
      onProgress: () => ac.abort(),
    }).then(
      () => null,
      (e: { key?: string }) => e,
    );
    expect(err?.key).toBe('flash.aborted');
    expect(fs.existsSync(dest)).toBe(false);
    // No sandbox or decompressor of ours is left running.
    const children = () =>
      fs
        .readdirSync(`/proc/${process.pid}/task`)
        .flatMap((t) => {
          // A thread may end between the listing and the read.
          try {
            return fs.readFileSync(`/proc/${process.pid}/task/${t}/children`, 'utf8').trim().split(/\s+/);
          } catch {
            return [];
          }
        })
        .filter(Boolean)
        .filter((pid) => {
          try {
            return /bwrap|zstd/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
          } catch {
            return false;
          }
        });
    for (let i = 0; i < 50 && children().length; i++) await new Promise((r) => setTimeout(r, 100));
    expect(children()).toEqual([]);
    // Already aborted: nothing is created at all.
    const again = fresh();
    await expect(writeRawImage(src, again, { maxBytes: 512 * MIB, signal: ac.signal })).rejects.toMatchObject(
      {
        key: 'flash.aborted',
      },
    );
    expect(fs.existsSync(again)).toBe(false);
  });

  it('verify catches one flipped byte, a changed size and a wrong hash', async () => {
    const dest = fresh();
    const r = await writeRawImage(`${gpt}.zst`, dest, { maxBytes: 64 * MIB });
    await verifyRawImage(dest, r);
    const fd = fs.openSync(dest, 'r+');
    const one = Buffer.alloc(1);
    fs.readSync(fd, one, 0, 1, 6 * MIB + 1234);
    one[0] ^= 0x01;
    fs.writeSync(fd, one, 0, 1, 6 * MIB + 1234);
    await expect(verifyRawImage(dest, r)).rejects.toMatchObject({ key: 'flash.verify_failed' });
    one[0] ^= 0x01;
    fs.writeSync(fd, one, 0, 1, 6 * MIB + 1234);
    await verifyRawImage(dest, r);
    // A byte flipped inside a hole (it reads as zero until written).
    fs.writeSync(fd, Buffer.from([1]), 0, 1, 30 * MIB);
    await expect(verifyRawImage(dest, r)).rejects.toMatchObject({ key: 'flash.verify_failed' });
    fs.writeSync(fd, Buffer.from([0]), 0, 1, 30 * MIB);
    await verifyRawImage(dest, r);
    fs.ftruncateSync(fd, DISK + 512);
    await expect(verifyRawImage(dest, r)).rejects.toThrow(/bytes, not/);
    fs.ftruncateSync(fd, DISK - 512);
    await expect(verifyRawImage(dest, r)).rejects.toThrow(/bytes, not/);
    fs.closeSync(fd);
    await expect(verifyRawImage(dest, { bytes: r.bytes, sha256: '0'.repeat(64) })).rejects.toBeInstanceOf(
      RawImageError,
    );
  });

  it('never writes through an existing destination or a link there', async () => {
    const existing = fresh();
    fs.writeFileSync(existing, 'keep me');
    await expect(writeRawImage(gpt, existing, { maxBytes: 64 * MIB })).rejects.toMatchObject({
      code: 'EEXIST',
    });
    expect(fs.readFileSync(existing, 'utf8')).toBe('keep me');

    const target = at('link-target');
    fs.writeFileSync(target, 'host file');
    const link = fresh();
    fs.symlinkSync(target, link);
    await expect(writeRawImage(`${gpt}.zst`, link, { maxBytes: 64 * MIB })).rejects.toMatchObject({
      code: 'EEXIST',
    });
    expect(fs.readFileSync(target, 'utf8')).toBe('host file');
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);

    // A dangling link: its target is not created either.
    const dangling = fresh();
    fs.symlinkSync(at('not-there'), dangling);
    await expect(writeRawImage(gpt, dangling, { maxBytes: 64 * MIB })).rejects.toMatchObject({
      code: 'EEXIST',
    });
    expect(fs.existsSync(at('not-there'))).toBe(false);
  });

  it('does not follow a link given as the image', async () => {
    const link = at('image-link.img');
    fs.symlinkSync(gpt, link);
    await expect(writeRawImage(link, fresh(), { maxBytes: 64 * MIB })).rejects.toMatchObject({
      code: 'ELOOP',
    });
    await expect(detectRawFormat(link)).rejects.toMatchObject({ code: 'ELOOP' });
  });
});
