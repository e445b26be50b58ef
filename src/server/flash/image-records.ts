import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { SQL } from 'drizzle-orm';
import { z } from 'zod';
import { type ImageFormat, type ImageKind, imageKind } from '#server/boards/driver.ts';
import { mkdirExact, writeExact } from '#server/boards/local/rootfs.ts';
import { BOARD_IMAGE_VARIANTS, boardImageFacts, boardImageTag } from '#server/boards/qemu/board-images.ts';
import { detectRawFormat } from '#server/boards/qemu/raw-image.ts';
import type { Db } from '#server/db/client.ts';
import type { DriverKind } from '#shared/boards.ts';
import { FLASH_IMAGE_FORMATS, type FlashImageDto, type FlashImageFacts } from '#shared/flash.ts';

export interface ImageRow {
  tag: string;
  name: string;
  os_version: string;
  description: string;
  models: string[];
  format: ImageFormat;
  size: string | number;
  sha256: string;
  path: string;
  source: FlashImageDto['source'];
  owner_id: string | null;
  created_at: Date | string;
  retired_at: Date | string | null;
  /** Built-in disk images: what their build read from them; null for the others. */
  facts: FlashImageFacts | null;
}

/** An image the lab file declares by host path or URL. */
export interface LabImage {
  tag: string;
  name: string;
  osVersion?: string;
  description?: string;
  models?: string[];
  path?: string;
  url?: string;
  sha256?: string;
}

export interface BuiltinSpec {
  tag: string;
  name: string;
  osVersion: string;
  description: string;
  prettyName: string;
  extra?: (root: string) => void;
}

export const PLUGINS_MOUNT = '/opt/bianbu/plugins';

/** The images every fresh start can flash: the default one, and one with developer tools. */
export const BUILTIN_IMAGES: readonly BuiltinSpec[] = [
  {
    tag: 'bianbu-minimal',
    name: 'Bianbu 2.0 minimal',
    osVersion: '2.0',
    description: 'The default image of the local boards: a minimal Bianbu root file system.',
    prettyName: 'Bianbu 2.0',
  },
  {
    tag: 'bianbu-developer',
    name: 'Bianbu 2.0 developer',
    osVersion: '2.0-dev',
    description:
      'Bianbu 2.0 with developer tools under /opt/bianbu-developer (board-info, a README) on the PATH.',
    prettyName: 'Bianbu 2.0 Developer',
    extra: (root) => {
      const dev = path.join(root, 'opt/bianbu-developer');
      mkdirExact(path.join(dev, 'bin'));
      writeExact(
        path.join(dev, 'README'),
        'Bianbu 2.0 developer image.\n\nTools in /opt/bianbu-developer/bin:\n  board-info   what this board is and which image it runs\n',
      );
      writeExact(
        path.join(dev, 'bin/board-info'),
        '#!/bin/sh\n. /etc/os-release\necho "image: $(cat /etc/bianbu-image)"\necho "os: $PRETTY_NAME"\necho "host: $(cat /etc/hostname)"\necho "cpus: $(nproc)"\n',
        0o755,
      );
      mkdirExact(path.join(root, 'etc/profile.d'));
      writeExact(
        path.join(root, 'etc/profile.d/bianbu-developer.sh'),
        'PATH="$PATH:/opt/bianbu-developer/bin"\nexport PATH\n',
      );
    },
  },
];

/**
 * What each riscv64 variant build.sh builds holds beyond Debian's base system, as the script's package
 * lists say (null: nothing): the only words of a built-in disk image's description not read from it.
 */
export const VARIANT_EXTRAS: Readonly<Record<(typeof BOARD_IMAGE_VARIANTS)[number], string | null>> = {
  minimal: null,
  developer: 'gcc, make, git, python3, build-essential',
};
/** Tags only the built-in disk images may have: an upload never takes one, even before they are built. */
export const BOARD_IMAGE_TAGS: ReadonlySet<string> = new Set(BOARD_IMAGE_VARIANTS.map(boardImageTag));

/** The .json build.sh writes beside a disk image: the facts it read from the image it built. */
export const boardImageJson = boardImageFacts.extend({
  os: z.string().min(1),
  kernel: z.string().min(1),
  packages: z.number().int().nonnegative().optional(),
});
export type BoardImageJson = z.infer<typeof boardImageJson>;

/** "Debian GNU/Linux 13 (trixie)" → "Debian 13": the distribution's first word and its release. */
export function shortOs(os: string): string {
  const m = /^(\S+).*?\b(\d+(?:\.\d+)*)\b/.exec(os);
  return m ? `${m[1]} ${m[2]}` : os;
}

/** A built-in disk image's catalogue text, from its facts and its variant's package list only. */
export function boardImageText(
  j: BoardImageJson,
  extra: string | null,
): { name: string; description: string } {
  const packages = j.packages === undefined ? '' : `, ${j.packages} packages`;
  return {
    name: `${shortOs(j.os)} ${j.arch} ${j.variant}`,
    description: extra
      ? `${j.os} for ${j.arch} with developer tools (${extra})${packages}; kernel ${j.kernel}. A raw disk image.`
      : `${j.os} for ${j.arch}, minimal${packages}; kernel ${j.kernel}. A raw disk image.`,
  };
}

export const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

/** What `fits` needs to know of a board: its model and its driver's kind (the boards table's). */
export interface BoardFit {
  model: string;
  driver: DriverKind;
}

export function imageDto(r: ImageRow, board?: BoardFit): FlashImageDto {
  return {
    tag: r.tag,
    name: r.name,
    osVersion: r.os_version,
    size: Number(r.size),
    sha256: r.sha256,
    description: r.description,
    models: r.models ?? [],
    format: r.format,
    ...(r.facts
      ? {
          facts: {
            arch: r.facts.arch,
            os: r.facts.os,
            kernel: r.facts.kernel,
            rawBytes: r.facts.rawBytes,
            rawSha256: r.facts.rawSha256,
          },
        }
      : {}),
    source: r.source,
    ownerId: r.owner_id,
    createdAt: iso(r.created_at)!,
    retiredAt: iso(r.retired_at),
    ...(board ? { fits: fits(r, board) } : {}),
  };
}

/**
 * The kind of image a board's flash takes, by its driver's kind: QEMU boards boot a whole disk, sandbox
 * boards unpack a root file system; ssh boards run whatever flash command the lab gives them, so either
 * (null). The same split as the drivers' `BoardDriver.flashes`, read from the boards table so that a
 * board whose driver is not running is judged alike.
 */
export function kindTaken(driver: DriverKind): ImageKind | null {
  return driver === 'qemu' ? 'disk' : driver === 'local' ? 'rootfs' : null;
}

/** Whether the board's driver takes the image's kind. */
export function kindFits(r: Pick<ImageRow, 'format'>, driver: DriverKind): boolean {
  const takes = kindTaken(driver);
  return takes === null || takes === imageKind(r.format);
}

/** Whether the image fits the board: its driver takes the image's kind, and its model is one the image names (none: every model). */
export function fits(r: Pick<ImageRow, 'models' | 'format'>, board: BoardFit): boolean {
  return kindFits(r, board.driver) && (!r.models?.length || r.models.includes(board.model));
}

/** The formats an image may have, for messages: "tar, tar.gz, img, img.gz, img.xz, img.zst". */
export const FORMAT_LIST = FLASH_IMAGE_FORMATS.join(', ');

/** A tar header's magic: 'ustar' at 257 (POSIX ustar, pax and GNU tar alike). */
export const isTarHeader = (head: Buffer) =>
  head.length >= 512 && head.subarray(257, 262).toString('latin1') === 'ustar';
/** A disk's partition table: the MBR boot signature, or a GPT header (behind its protective MBR). */
export const isDiskHead = (head: Buffer) =>
  (head.length >= 512 && head[510] === 0x55 && head[511] === 0xaa) ||
  (head.length >= 520 && head.toString('latin1', 512, 520) === 'EFI PART');

/**
 * The first `bytes` bytes of a gzip file's content, or fewer when it holds fewer or is not gzip past
 * its magic. Only as much of the file is read and inflated as they need.
 */
export async function gunzipHead(file: string, bytes: number): Promise<Buffer> {
  const src = fs.createReadStream(file, { highWaterMark: 64 * 1024 });
  const gunzip = zlib.createGunzip();
  // pipe() does not pass a read error on: without this the loop below would wait for good
  src.on('error', (err) => gunzip.destroy(err));
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const c of src.pipe(gunzip)) {
      chunks.push(c as Buffer);
      n += (c as Buffer).length;
      if (n >= bytes) break;
    }
  } catch {
    // corrupt or cut short: what came out is all there is
  } finally {
    src.destroy();
    gunzip.destroy();
  }
  return Buffer.concat(chunks).subarray(0, bytes);
}

/**
 * The image's format, read from its bytes (a file name says nothing), or null when it is no board
 * image. detectRawFormat knows raw disks by their magic: a plain disk by its partition table, an xz or
 * zstd stream as a compressed disk; a gzip stream it cannot tell from a tar.gz, so its content
 * decides: a tar header makes it a tar.gz, a partition table an img.gz, anything else neither.
 */
export async function formatOf(file: string): Promise<ImageFormat | null> {
  const raw = await detectRawFormat(file);
  if (raw === 'img.gz') {
    const head = await gunzipHead(file, 1024);
    return isTarHeader(head) ? 'tar.gz' : isDiskHead(head) ? 'img.gz' : null;
  }
  if (raw) return raw;
  const fh = await fs.promises.open(file, 'r');
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await fh.read(head, 0, 512, 0);
    return isTarHeader(head.subarray(0, bytesRead)) ? 'tar' : null;
  } finally {
    await fh.close();
  }
}

/** Temporary files of uploads in flight: `.upload-<upload id>` in the uploads directory. */
export const SNAPSHOT_CHARGES_SQL = `(select coalesce(sum(c.bytes), 0) from board_snapshot_charges c
    join leases l on l.id = c.lease_id and l.state = 'live' where c.user_id = $1)`;

export async function rowsOf<T = Record<string, unknown>>(db: Pick<Db, 'execute'>, q: SQL): Promise<T[]> {
  return ((await db.execute(q)) as unknown as { rows: T[] }).rows;
}
