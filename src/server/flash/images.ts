// The image catalogue. Images are files: built-in ones are built at first start under
// <data>/images/builtin (root file system archives for the sandbox boards) or found where
// scripts/board-images/build.sh left them (the Debian riscv64 disk images of the QEMU boards, used in
// place; registerBoardImages), uploaded ones are streamed to <data>/images/uploads, the lab file may
// name others by host path. Each row holds the size and sha256 measured when the image was added; a
// job checks the file against them before writing a byte to a board. An image is of one kind, a root
// file system archive or a raw disk image (its format, read from its bytes), and fits only boards
// whose driver takes that kind.
// An upload claims its tag and reserves its owner's quota in the database (its row, marked in flight)
// before a byte of it lands, names its temporary file by its own upload id, and becomes an image only
// whole; a start removes what uploads of a killed service left (recoverUploads).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Multipart } from '@fastify/multipart';
import { type SQL, sql } from 'drizzle-orm';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AuthUser } from '#server/auth/user-context.ts';
import { type ImageFormat, type ImageKind, imageKind } from '#server/boards/driver.ts';
import { createDefaultRoot, mkdirExact, writeExact } from '#server/boards/local/rootfs.ts';
import { BOARD_IMAGE_VARIANTS, boardImageFacts, boardImageTag } from '#server/boards/qemu/board-images.ts';
import { detectRawFormat } from '#server/boards/qemu/raw-image.ts';
import type { Db } from '#server/db/client.ts';
import { AppError, badRequest, conflict, forbidden, notFound } from '#server/errors.ts';
import type { DriverKind } from '#shared/boards.ts';
import { ResultCode } from '#shared/codes.ts';
import {
  FLASH_IMAGE_FORMATS,
  FlashErrorKey,
  type FlashImageDto,
  type FlashImageFacts,
  FlashPerm,
  type UploadImageFields,
  uploadImageFields,
} from '#shared/flash.ts';
import { hasPermission } from '#shared/permissions.ts';
import { hashFile, packTree } from './pack.ts';

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

interface BuiltinSpec {
  tag: string;
  name: string;
  osVersion: string;
  description: string;
  prettyName: string;
  extra?: (root: string) => void;
}

const PLUGINS_MOUNT = '/opt/bianbu/plugins';

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
const VARIANT_EXTRAS: Readonly<Record<(typeof BOARD_IMAGE_VARIANTS)[number], string | null>> = {
  minimal: null,
  developer: 'gcc, make, git, python3, build-essential',
};
/** Tags only the built-in disk images may have: an upload never takes one, even before they are built. */
const BOARD_IMAGE_TAGS: ReadonlySet<string> = new Set(BOARD_IMAGE_VARIANTS.map(boardImageTag));

/** The .json build.sh writes beside a disk image: the facts it read from the image it built. */
const boardImageJson = boardImageFacts.extend({
  os: z.string().min(1),
  kernel: z.string().min(1),
  packages: z.number().int().nonnegative().optional(),
});
type BoardImageJson = z.infer<typeof boardImageJson>;

/** "Debian GNU/Linux 13 (trixie)" → "Debian 13": the distribution's first word and its release. */
function shortOs(os: string): string {
  const m = /^(\S+).*?\b(\d+(?:\.\d+)*)\b/.exec(os);
  return m ? `${m[1]} ${m[2]}` : os;
}

/** A built-in disk image's catalogue text, from its facts and its variant's package list only. */
function boardImageText(j: BoardImageJson, extra: string | null): { name: string; description: string } {
  const packages = j.packages === undefined ? '' : `, ${j.packages} packages`;
  return {
    name: `${shortOs(j.os)} ${j.arch} ${j.variant}`,
    description: extra
      ? `${j.os} for ${j.arch} with developer tools (${extra})${packages}; kernel ${j.kernel}. A raw disk image.`
      : `${j.os} for ${j.arch}, minimal${packages}; kernel ${j.kernel}. A raw disk image.`,
  };
}

const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

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
const FORMAT_LIST = FLASH_IMAGE_FORMATS.join(', ');

/** A tar header's magic: 'ustar' at 257 (POSIX ustar, pax and GNU tar alike). */
const isTarHeader = (head: Buffer) =>
  head.length >= 512 && head.subarray(257, 262).toString('latin1') === 'ustar';
/** A disk's partition table: the MBR boot signature, or a GPT header (behind its protective MBR). */
const isDiskHead = (head: Buffer) =>
  (head.length >= 512 && head[510] === 0x55 && head[511] === 0xaa) ||
  (head.length >= 520 && head.toString('latin1', 512, 520) === 'EFI PART');

/**
 * The first `bytes` bytes of a gzip file's content, or fewer when it holds fewer or is not gzip past
 * its magic. Only as much of the file is read and inflated as they need.
 */
async function gunzipHead(file: string, bytes: number): Promise<Buffer> {
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
async function formatOf(file: string): Promise<ImageFormat | null> {
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
const TMP_PREFIX = '.upload-';
/** What the snapshots of the boards user $1 holds on live leases cost (board_snapshot_charges). */
const SNAPSHOT_CHARGES_SQL = `(select coalesce(sum(c.bytes), 0) from board_snapshot_charges c
    join leases l on l.id = c.lease_id and l.state = 'live' where c.user_id = $1)`;
/** Quota is reserved ahead of an upload's bytes in steps of this much. */
const RESERVE_STEP = 4 * 1024 * 1024;
/** How often an upload in flight tells the database it lives, and after how long silent it is dead. */
const UPLOAD_HEARTBEAT_MS = 30_000;
const UPLOAD_STALE_S = 300;

/** An upload in flight: its claim on the tag (row `upload_id` = id) and what it reserved and wrote. */
interface UploadClaim {
  id: string;
  tag: string;
  /** null: a public image, outside every quota. */
  owner: string | null;
  tmp: string;
  reserved: number;
  /** The file put under the tag, by inode, so a failure removes it only while it is still this one. */
  placed: { file: string; ino: number } | null;
  heartbeat: NodeJS.Timeout;
}

interface SweptClaim {
  tag: string;
  path: string;
}

const claimLost = (tag: string) =>
  conflict(
    `The upload lost its claim on the tag ${tag} (its service fell silent too long); upload it again`,
    FlashErrorKey.tagTaken,
  );

async function rowsOf<T = Record<string, unknown>>(db: Pick<Db, 'execute'>, q: SQL): Promise<T[]> {
  return ((await db.execute(q)) as unknown as { rows: T[] }).rows;
}

async function rmIfSame(file: string, ino: number): Promise<void> {
  const st = await fs.promises.lstat(file).catch(() => null);
  if (st?.ino === ino) await fs.promises.rm(file, { force: true });
}

/**
 * The files of dropped claims: the temporary file, and the file under the tag when the claim died
 * between putting it in place and completing (the same inode as its temporary file).
 */
async function dropClaimFiles(claims: readonly SweptClaim[]): Promise<void> {
  for (const c of claims) {
    const st = await fs.promises.lstat(c.path).catch(() => null);
    if (!st) continue;
    for (const ext of FLASH_IMAGE_FORMATS)
      await rmIfSame(path.join(path.dirname(c.path), `${c.tag}.${ext}`), st.ino);
    await fs.promises.rm(c.path, { force: true });
  }
}

export class ImageStore {
  readonly dir: string;
  /** Where build.sh leaves the riscv64 disk images (BIANBU_BOARD_IMAGES, or <data>/images/board). */
  readonly boardImagesDir: string;
  /** registerBoardImages runs one at a time: the start's and the lab's after a build. */
  private boardImagesTurn: Promise<unknown> = Promise.resolve();

  constructor(private readonly app: FastifyInstance) {
    this.dir = path.join(app.config.dataDir, 'images');
    this.boardImagesDir = app.config.BIANBU_BOARD_IMAGES
      ? path.resolve(app.config.BIANBU_BOARD_IMAGES)
      : path.join(this.dir, 'board');
  }

  private get db() {
    return this.app.storage;
  }

  private now(): Date {
    return this.app.clock.now();
  }

  get quotaBytes(): number {
    return this.app.config.BIANBU_FLASH_USER_QUOTA_MB * 1024 * 1024;
  }

  /** Builds the built-in images that are missing (first start, or a data dir that lost them). */
  async ensureBuiltins(): Promise<void> {
    const dir = path.join(this.dir, 'builtin');
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    for (const spec of BUILTIN_IMAGES) {
      const file = path.join(dir, `${spec.tag}.tar.gz`);
      const [row] = await this.db.query<ImageRow>('select * from flash_images where tag = $1', [spec.tag]);
      if (row && fs.existsSync(row.path)) continue;
      const begun = Date.now();
      const measured = await this.buildBuiltin(spec, file);
      await this.db.query(
        `insert into flash_images (tag, name, os_version, description, models, format, size, sha256, path, source, created_at)
         values ($1, $2, $3, $4, '[]'::jsonb, 'tar.gz', $5, $6, $7, 'builtin', $8)
         on conflict (tag) do update set size = excluded.size, sha256 = excluded.sha256, path = excluded.path, retired_at = null`,
        [
          spec.tag,
          spec.name,
          spec.osVersion,
          spec.description,
          measured.size,
          measured.sha256,
          file,
          this.now(),
        ],
      );
      this.app.log.info(
        { tag: spec.tag, bytes: measured.size, ms: Date.now() - begun },
        'built-in board image built',
      );
    }
  }

  /**
   * Catalogues the riscv64 disk images build.sh left in the board images directory, in place (no
   * copy), as built-in images with their facts. A variant counts only when both its .img.zst and its
   * .json are there, the .json names that variant and file, and the file is what the .json says
   * (size and sha256, measured here); anything else is left out with a warning, a variant not built
   * (yet) silently. Runs at start and again whenever the lab says a build finished; answers the tags
   * catalogued. A row of the same tag is updated (it stays retired if it was and its file did not
   * change); a tag some other image holds is left to it.
   */
  registerBoardImages(): Promise<string[]> {
    const run = this.boardImagesTurn.catch(() => {}).then(() => this.registerBoardImagesNow());
    this.boardImagesTurn = run;
    return run;
  }

  private async registerBoardImagesNow(): Promise<string[]> {
    const dir = this.boardImagesDir;
    const registered: string[] = [];
    for (const variant of BOARD_IMAGE_VARIANTS) {
      const tag = boardImageTag(variant);
      const file = path.join(dir, `${tag}.img.zst`);
      const jsonFile = path.join(dir, `${tag}.json`);
      if (!fs.existsSync(file) || !fs.existsSync(jsonFile)) continue;
      const leftOut = (why: string, detail: Record<string, unknown> = {}) =>
        this.app.log.warn({ tag, file, ...detail }, `board disk image left out of the catalogue: ${why}`);
      let facts: BoardImageJson;
      try {
        const parsed = boardImageJson.safeParse(JSON.parse(await fs.promises.readFile(jsonFile, 'utf8')));
        if (!parsed.success) {
          leftOut(`its .json is not what build.sh writes (${parsed.error.issues[0]?.path.join('.')})`);
          continue;
        }
        facts = parsed.data;
      } catch (err) {
        leftOut('its .json cannot be read', { err: (err as Error).message });
        continue;
      }
      if (facts.name !== tag || facts.variant !== variant || facts.file !== path.basename(file)) {
        leftOut('its .json names another image', {
          name: facts.name,
          variant: facts.variant,
          named: facts.file,
        });
        continue;
      }
      let measured: { size: number; sha256: string };
      try {
        const { size } = await fs.promises.stat(file);
        if (size !== facts.fileBytes) {
          leftOut('the file is not the size its .json says', { bytes: size, json: facts.fileBytes });
          continue;
        }
        // Catalogued before from this very file, as its .json still describes it: no second read of
        // hundreds of MB at every start (a flash job checks the file against its sha256 anyway).
        const [known] = await this.db.query<{ size: string | number; sha256: string; path: string }>(
          'select size, sha256, path from flash_images where tag = $1',
          [tag],
        );
        measured =
          known && known.path === file && Number(known.size) === size && known.sha256 === facts.fileSha256
            ? { size, sha256: known.sha256 }
            : await hashFile(file);
      } catch (err) {
        leftOut('the file cannot be read', { err: (err as Error).message });
        continue;
      }
      if (measured.size !== facts.fileBytes || measured.sha256 !== facts.fileSha256) {
        leftOut('the file is not the one its .json describes (sha256 differs)', {
          sha256: measured.sha256,
          json: facts.fileSha256,
        });
        continue;
      }
      const text = boardImageText(facts, VARIANT_EXTRAS[variant]);
      const stored: FlashImageFacts = {
        arch: facts.arch,
        os: facts.os,
        kernel: facts.kernel,
        rawBytes: facts.rawBytes,
        rawSha256: facts.rawSha256,
      };
      const [row] = await this.db.query<{ tag: string }>(
        `insert into flash_images (tag, name, os_version, description, models, format, size, sha256, path, source, created_at, facts)
         values ($1, $2, $3, $4, '[]'::jsonb, 'img.zst', $5, $6, $7, 'builtin', $8, $9::jsonb)
         on conflict (tag) do update set name = excluded.name, os_version = excluded.os_version,
           description = excluded.description, models = excluded.models, format = excluded.format,
           size = excluded.size, sha256 = excluded.sha256, path = excluded.path, facts = excluded.facts,
           retired_at = case when flash_images.sha256 = excluded.sha256 and flash_images.path = excluded.path
                             then flash_images.retired_at end
         where flash_images.source = 'builtin' and flash_images.upload_id is null
         returning tag`,
        [
          tag,
          text.name,
          facts.os,
          text.description,
          measured.size,
          measured.sha256,
          file,
          this.now(),
          JSON.stringify(stored),
        ],
      );
      if (!row) {
        leftOut('its tag is taken by another image');
        continue;
      }
      registered.push(tag);
      this.app.log.info({ tag, bytes: measured.size, kernel: facts.kernel }, 'board disk image catalogued');
    }
    return registered;
  }

  private async buildBuiltin(spec: BuiltinSpec, file: string): Promise<{ size: number; sha256: string }> {
    const work = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'bianbu-image-'));
    try {
      const root = path.join(work, 'root');
      createDefaultRoot(root, { hostname: 'bianbu', model: '', pluginsMount: PLUGINS_MOUNT });
      writeExact(path.join(root, 'etc/bianbu-image'), `${spec.tag}\n`);
      writeExact(
        path.join(root, 'etc/os-release'),
        `PRETTY_NAME="${spec.prettyName}"\nNAME="Bianbu"\nVERSION_ID="${spec.osVersion}"\nID=bianbu\nID_LIKE=debian\nBIANBU_IMAGE=${spec.tag}\n`,
      );
      spec.extra?.(root);
      const tmp = `${file}.tmp-${crypto.randomBytes(4).toString('hex')}`;
      const measured = await packTree(root, tmp);
      await fs.promises.rename(tmp, file);
      return measured;
    } finally {
      await fs.promises.rm(work, { recursive: true, force: true });
    }
  }

  /** Lab-file images: added or updated by tag; size and sha256 are measured unless the lab gives the sha256. */
  /**
   * Downloads the lab's URL images that are not here yet into <data>/images/lab (streamed to a
   * temporary file, checked against the lab's sha256 when it gives one, renamed whole), then
   * catalogues them. Runs in the background: a start never waits for a download.
   */
  async fetchLabUrls(images: readonly LabImage[]): Promise<void> {
    const dir = path.join(this.dir, 'lab');
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    for (const img of images) {
      if (!img.url) continue;
      const file = path.join(dir, `${img.tag}.img`);
      const [row] = await this.db.query<ImageRow>('select * from flash_images where tag = $1', [img.tag]);
      if (
        row?.path === file &&
        fs.existsSync(file) &&
        (!img.sha256 || row.sha256 === img.sha256.toLowerCase())
      ) {
        await this.applyLab([{ ...img, url: undefined, path: file, sha256: row.sha256 }]);
        continue;
      }
      const tmp = `${file}.part-${crypto.randomBytes(4).toString('hex')}`;
      try {
        const res = await fetch(img.url, {
          redirect: 'follow',
          signal: AbortSignal.timeout(this.app.config.BIANBU_TRANSFER_TIMEOUT_MS),
        });
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        const hash = crypto.createHash('sha256');
        const out = await fs.promises.open(tmp, 'wx', 0o600);
        try {
          for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
            hash.update(chunk);
            await out.write(chunk);
          }
          await out.sync();
        } finally {
          await out.close();
        }
        const sha256 = hash.digest('hex');
        if (img.sha256 && img.sha256.toLowerCase() !== sha256) {
          throw new Error(`sha256 is ${sha256}, the lab file says ${img.sha256}`);
        }
        await fs.promises.rename(tmp, file);
        await this.applyLab([{ ...img, url: undefined, path: file, sha256 }]);
        this.app.log.info({ tag: img.tag, url: img.url }, 'lab image downloaded');
      } catch (err) {
        await fs.promises.rm(tmp, { force: true });
        this.app.log.warn(
          { tag: img.tag, url: img.url, err: (err as Error).message },
          'lab image not downloaded: left out of the catalogue',
        );
      }
    }
  }

  async applyLab(images: readonly LabImage[]): Promise<void> {
    for (const img of images) {
      if (!img.path) continue;
      const file = path.resolve(img.path);
      let format: ImageFormat | null = null;
      let size = 0;
      try {
        size = (await fs.promises.stat(file)).size;
        format = await formatOf(file);
      } catch (err) {
        this.app.log.warn(
          { tag: img.tag, path: file, err: (err as Error).message },
          'lab image not readable: left out of the catalogue',
        );
        continue;
      }
      if (!format) {
        this.app.log.warn(
          { tag: img.tag, path: file },
          `lab image is not a board image (${FORMAT_LIST}): left out of the catalogue`,
        );
        continue;
      }
      const [row] = await this.db.query<ImageRow>('select * from flash_images where tag = $1', [img.tag]);
      if (row && row.source !== 'lab') {
        this.app.log.warn({ tag: img.tag }, 'lab image tag is taken by another image: left out');
        continue;
      }
      // The lab's sha256 is what the file must be; without one, what it is now becomes the reference.
      const sha256 =
        img.sha256?.toLowerCase() ??
        (row && Number(row.size) === size && row.path === file ? row.sha256 : (await hashFile(file)).sha256);
      await this.db.query(
        `insert into flash_images (tag, name, os_version, description, models, format, size, sha256, path, source, created_at)
         values ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, 'lab', $10)
         on conflict (tag) do update set name = excluded.name, os_version = excluded.os_version,
           description = excluded.description, models = excluded.models, format = excluded.format,
           size = excluded.size, sha256 = excluded.sha256, path = excluded.path, retired_at = null`,
        [
          img.tag,
          img.name,
          img.osVersion ?? '',
          img.description ?? '',
          JSON.stringify(img.models ?? []),
          format,
          size,
          sha256,
          file,
          this.now(),
        ],
      );
    }
  }

  /** An image of the catalogue by tag (an upload still in flight is none yet). */
  async get(tag: string): Promise<ImageRow | null> {
    const [r] = await this.db.query<ImageRow>(
      'select * from flash_images where tag = $1 and upload_id is null',
      [tag],
    );
    return r ?? null;
  }

  /** The image as the user may flash it, or the error that says why not. */
  async usable(tag: string, userId: string): Promise<ImageRow> {
    const r = await this.get(tag);
    if (!r || (r.owner_id !== null && r.owner_id !== userId)) {
      throw notFound(`No image tagged ${tag}`, FlashErrorKey.imageUnknown);
    }
    if (r.retired_at) throw conflict(`The image ${tag} is retired`, FlashErrorKey.imageRetired);
    return r;
  }

  async list(userId: string): Promise<ImageRow[]> {
    return this.db.query<ImageRow>(
      `select * from flash_images where retired_at is null and upload_id is null and (owner_id is null or owner_id = $1)
        order by owner_id nulls first, source = 'builtin' desc, name, tag`,
      [userId],
    );
  }

  /**
   * The user's private images plus what their uploads in flight have reserved, plus what the
   * snapshots of the boards they hold cost (src/server/snapshots: one quota for both).
   */
  async usedBy(userId: string): Promise<number> {
    const [r] = await this.db.query<{ used: string | null }>(
      `select coalesce(sum(size), 0) + ${SNAPSHOT_CHARGES_SQL} as used
         from flash_images where owner_id = $1 and retired_at is null`,
      [userId],
    );
    return Number(r?.used ?? 0);
  }

  private get uploadsDir(): string {
    return path.join(this.dir, 'uploads');
  }

  /**
   * At start: what uploads of a killed service left. No other service uses this data directory, so
   * every claim whose file is here, and every temporary file here, is dead; claims other services
   * left silent too long go as well. Their tags and quota are free again, their files gone.
   */
  async recoverUploads(): Promise<void> {
    const dir = this.uploadsDir;
    const swept = await this.db.query<SweptClaim>(
      `delete from flash_images
        where upload_id is not null
          and (starts_with(path, $1) or upload_seen_at < now() - make_interval(secs => $2))
        returning tag, path`,
      [dir + path.sep, UPLOAD_STALE_S],
    );
    await dropClaimFiles(swept);
    let names: string[] = [];
    try {
      names = await fs.promises.readdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    let bytes = 0;
    const left = names.filter((n) => n.startsWith(TMP_PREFIX));
    for (const n of left) {
      const file = path.join(dir, n);
      bytes += (await fs.promises.lstat(file).catch(() => null))?.size ?? 0;
      await fs.promises.rm(file, { force: true, recursive: true });
    }
    if (swept.length || left.length)
      this.app.log.warn(
        { claims: swept.map((c) => c.tag), files: left.length, bytes },
        'image uploads a stopped service left unfinished removed',
      );
  }

  /** Claims of uploads whose service fell silent (killed elsewhere): their tags and quota return. */
  private async sweepSilentClaims(): Promise<void> {
    const swept = await this.db.query<SweptClaim>(
      `delete from flash_images where upload_id is not null and upload_seen_at < now() - make_interval(secs => $1)
        returning tag, path`,
      [UPLOAD_STALE_S],
    );
    if (!swept.length) return;
    await dropClaimFiles(swept);
    this.app.log.warn({ claims: swept.map((c) => c.tag) }, 'image uploads whose service fell silent dropped');
  }

  /**
   * Takes the tag for an upload about to start, before any file lands: a row of its own that only
   * this upload (its id) may complete or drop. A tag anyone holds, as an image or an upload in
   * flight, is refused.
   */
  private async claim(meta: UploadImageFields, user: AuthUser): Promise<UploadClaim> {
    if (BOARD_IMAGE_TAGS.has(meta.tag) || BUILTIN_IMAGES.some((b) => b.tag === meta.tag))
      throw conflict(`The tag ${meta.tag} is a built-in image's`, FlashErrorKey.tagTaken);
    await this.sweepSilentClaims();
    const id = crypto.randomBytes(16).toString('hex');
    const tmp = path.join(this.uploadsDir, `${TMP_PREFIX}${id}`);
    const owner = meta.visibility === 'public' ? null : user.id;
    const taken = await this.db.query(
      `insert into flash_images (tag, name, os_version, description, models, format, size, sha256, path, source,
                                 owner_id, created_at, upload_id, upload_seen_at)
       values ($1, $2, $3, $4, $5::jsonb, 'tar', 0, '', $6, $7, $8, $9, $10, now())
       on conflict (tag) do nothing returning tag`,
      [
        meta.tag,
        meta.name,
        meta.osVersion,
        meta.description,
        JSON.stringify(meta.models),
        tmp,
        owner === null ? 'admin' : 'user',
        owner,
        this.now(),
        id,
      ],
    );
    if (!taken.length) throw conflict(`An image tagged ${meta.tag} exists`, FlashErrorKey.tagTaken);
    const claim: UploadClaim = {
      id,
      tag: meta.tag,
      owner,
      tmp,
      reserved: owner === null ? Number.POSITIVE_INFINITY : 0,
      placed: null,
      heartbeat: setInterval(() => {
        this.db
          .query('update flash_images set upload_seen_at = now() where tag = $1 and upload_id = $2', [
            claim.tag,
            claim.id,
          ])
          .catch((err) => this.app.log.warn({ err, tag: claim.tag }, 'image upload heartbeat failed'));
      }, UPLOAD_HEARTBEAT_MS),
    };
    claim.heartbeat.unref();
    return claim;
  }

  /**
   * Reserves quota for at least `need` bytes of the upload (a step more when it fits, so a large
   * upload takes one transaction per step, not per chunk). The owner's row lock makes reservations
   * of one user take turns, each seeing every image and reservation committed before it.
   */
  private async reserve(claim: UploadClaim, need: number): Promise<void> {
    const owner = claim.owner!;
    const want = Math.max(need, claim.reserved + RESERVE_STEP);
    const granted = await this.db.db.transaction(async (tx) => {
      await tx.execute(sql`select id from users where id = ${owner} for no key update`);
      const [r] = await rowsOf<{ used: string }>(
        tx,
        sql`select coalesce(sum(size), 0) + (select coalesce(sum(c.bytes), 0) from board_snapshot_charges c
                join leases l on l.id = c.lease_id and l.state = 'live' where c.user_id = ${owner}) as used
              from flash_images where owner_id = ${owner} and retired_at is null and tag <> ${claim.tag}`,
      );
      const free = this.quotaBytes - Number(r?.used ?? 0);
      if (free < need) return null;
      const grant = Math.min(want, free);
      const held = await rowsOf(
        tx,
        sql`update flash_images set size = ${grant}, upload_seen_at = now()
             where tag = ${claim.tag} and upload_id = ${claim.id} returning tag`,
      );
      if (!held.length) throw claimLost(claim.tag);
      return grant;
    });
    if (granted === null)
      throw new AppError(
        413,
        ResultCode.BadRequest,
        FlashErrorKey.quotaExceeded,
        'The image does not fit in your private-image quota',
        undefined,
        undefined,
        { limitBytes: this.quotaBytes },
      );
    claim.reserved = granted;
  }

  /**
   * The upload becomes the image: its file is put in place under the tag (never over another's
   * file), then the claim turns into the image row, measured, its reservation shrunk to its size.
   */
  private async complete(
    claim: UploadClaim,
    measured: { format: ImageFormat; size: number; sha256: string },
  ): Promise<ImageRow> {
    const file = path.join(this.uploadsDir, `${claim.tag}.${measured.format}`);
    const { ino } = await fs.promises.stat(claim.tmp);
    try {
      await fs.promises.link(claim.tmp, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A file under the tag that no image names: a crashed upload's (or a deleted user's) leftover.
      const [named] = await this.db.query(
        'select 1 from flash_images where path = $1 and upload_id is null',
        [file],
      );
      if (named) throw conflict(`An image's file is named ${path.basename(file)}`, FlashErrorKey.tagTaken);
      await fs.promises.rename(claim.tmp, file);
    }
    claim.placed = { file, ino };
    const [row] = await this.db.query<ImageRow>(
      `update flash_images set format = $3, size = $4, sha256 = $5, path = $6, created_at = $7,
              upload_id = null, upload_seen_at = null
        where tag = $1 and upload_id = $2 returning *`,
      [claim.tag, claim.id, measured.format, measured.size, measured.sha256, file, this.now()],
    );
    if (!row) throw claimLost(claim.tag);
    clearInterval(claim.heartbeat);
    await fs.promises.rm(claim.tmp, { force: true });
    return row;
  }

  /** An upload that failed: its files go, then its claim (tag and reservation). */
  private async abandon(claim: UploadClaim): Promise<void> {
    clearInterval(claim.heartbeat);
    if (claim.placed) await rmIfSame(claim.placed.file, claim.placed.ino);
    await fs.promises.rm(claim.tmp, { force: true });
    await this.db.query('delete from flash_images where tag = $1 and upload_id = $2', [claim.tag, claim.id]);
  }

  /**
   * A multipart upload: the fields (UploadImageFields), then one file, streamed to a temporary file
   * while it is measured; it becomes an image only whole, with the sha256 the form named (when it
   * named one), a tar or tar.gz root file system archive or a raw disk image (img, img.gz, img.xz,
   * img.zst: told by its bytes, whatever the file is called), within the owner's quota. The tag is
   * claimed before the file is written and quota reserved before each step of it, so parallel uploads
   * cannot beat either.
   */
  async upload(req: FastifyRequest, user: AuthUser): Promise<ImageRow> {
    if (!req.isMultipart())
      throw badRequest(
        'Expected a multipart form: the image fields, then the file',
        FlashErrorKey.imageInvalid,
      );
    await fs.promises.mkdir(this.uploadsDir, { recursive: true, mode: 0o700 });
    const fields: Record<string, string> = {};
    let meta: UploadImageFields | null = null;
    let claim: UploadClaim | null = null;
    let image: ImageRow | null = null;
    try {
      for await (const part of req.parts() as AsyncIterableIterator<Multipart>) {
        if (part.type === 'field') {
          fields[part.fieldname] = String(part.value);
          continue;
        }
        if (meta) {
          part.file.resume();
          throw badRequest('One image per upload', FlashErrorKey.imageInvalid);
        }
        const parsed = uploadImageFields.safeParse(fields);
        if (!parsed.success) {
          part.file.resume();
          const issue = parsed.error.issues[0];
          throw new AppError(
            400,
            ResultCode.BadRequest,
            'request.invalid',
            `Invalid ${String(issue.path[0] ?? 'field')}: ${issue.message}`,
            [{ path: String(issue.path[0] ?? ''), message: issue.message }],
          );
        }
        meta = parsed.data;
        if (meta.visibility === 'public' && !hasPermission(FlashPerm.addImage, user.perms)) {
          part.file.resume();
          throw forbidden(
            'Publishing an image for everyone needs the device.add_image permission',
            FlashErrorKey.imageForbidden,
          );
        }
        try {
          claim = await this.claim(meta, user);
        } catch (err) {
          part.file.resume();
          throw err;
        }
        const hash = crypto.createHash('sha256');
        let size = 0;
        const out = await fs.promises.open(claim.tmp, 'wx', 0o600);
        try {
          for await (const chunk of part.file) {
            size += (chunk as Buffer).length;
            if (size > claim.reserved) {
              try {
                await this.reserve(claim, size);
              } catch (err) {
                part.file.resume();
                throw err;
              }
            }
            hash.update(chunk as Buffer);
            await out.write(chunk as Buffer);
          }
          await out.sync();
        } finally {
          await out.close();
        }
        const sha256 = hash.digest('hex');
        if (meta.sha256 && meta.sha256 !== sha256) {
          throw badRequest(
            `The upload's sha256 is ${sha256}, not ${meta.sha256}: the file is corrupt or truncated`,
            FlashErrorKey.uploadCorrupt,
          );
        }
        const format = size > 0 ? await formatOf(claim.tmp) : null;
        if (!format)
          throw new AppError(
            400,
            ResultCode.BadRequest,
            FlashErrorKey.imageInvalid,
            'The file is not a board image: upload a root file system archive (.tar, .tar.gz) or a raw disk image with a partition table (.img, .img.gz, .img.xz, .img.zst)',
            undefined,
            undefined,
            { formats: [...FLASH_IMAGE_FORMATS] },
          );
        image = await this.complete(claim, { format, size, sha256 });
        claim = null;
      }
      if (!image) throw badRequest('The form had no image file', FlashErrorKey.imageInvalid);
      return image;
    } finally {
      if (claim) await this.abandon(claim);
    }
  }

  /**
   * An image the service makes for the user (a board snapshot saved as an image): claimed and
   * reserved like an upload, `produce` writes the file (img.zst) to the claim's temporary path while
   * its growing size is reserved step by step (a reservation that fails aborts `produce`).
   */
  async produce(
    user: AuthUser,
    meta: { tag: string; name: string; description: string; osVersion?: string },
    produce: (tmp: string, signal: AbortSignal) => Promise<void>,
  ): Promise<ImageRow> {
    await fs.promises.mkdir(this.uploadsDir, { recursive: true, mode: 0o700 });
    const fields = uploadImageFields.parse({
      tag: meta.tag,
      name: meta.name,
      description: meta.description,
      osVersion: meta.osVersion ?? '',
      visibility: 'private',
    });
    let claim: UploadClaim | null = await this.claim(fields, user);
    const abort = new AbortController();
    let quotaErr: unknown = null;
    let reserving: Promise<void> = Promise.resolve();
    const c = claim;
    const watch = setInterval(() => {
      reserving = reserving.then(async () => {
        const size = (await fs.promises.stat(c.tmp).catch(() => null))?.size ?? 0;
        if (size > c.reserved && !quotaErr)
          await this.reserve(c, size).catch((err) => {
            quotaErr = err;
            abort.abort();
          });
      });
    }, 500);
    try {
      await this.reserve(claim, 1);
      try {
        await produce(claim.tmp, abort.signal);
      } finally {
        clearInterval(watch);
        await reserving;
      }
      if (quotaErr) throw quotaErr;
      const size = (await fs.promises.stat(claim.tmp)).size;
      if (size > claim.reserved) await this.reserve(claim, size);
      const format = await formatOf(claim.tmp);
      if (format !== 'img.zst' && format !== 'img')
        throw new AppError(
          500,
          ResultCode.ServerError,
          FlashErrorKey.imageInvalid,
          'The image made is not a disk image',
        );
      const { sha256 } = await hashFile(claim.tmp);
      const row = await this.complete(claim, { format, size, sha256 });
      claim = null;
      return row;
    } catch (err) {
      if (quotaErr) throw quotaErr;
      throw err;
    } finally {
      clearInterval(watch);
      if (claim) await this.abandon(claim);
    }
  }

  async retire(tag: string, user: AuthUser): Promise<ImageRow> {
    const r = await this.get(tag);
    if (!r || (r.owner_id !== null && r.owner_id !== user.id))
      throw notFound(`No image tagged ${tag}`, FlashErrorKey.imageUnknown);
    if (r.owner_id === null && !hasPermission(FlashPerm.addImage, user.perms)) {
      throw forbidden(
        'Retiring a public image needs the device.add_image permission',
        FlashErrorKey.imageForbidden,
      );
    }
    if (!r.retired_at)
      await this.db.query('update flash_images set retired_at = $2 where tag = $1', [tag, this.now()]);
    // An uploaded file is the service's to delete, once no job still reads it (a job that started
    // keeps its open file; one still waiting fails with flash.image_corrupt, file missing).
    if (r.source === 'user' || r.source === 'admin') {
      const [busy] = await this.db.query(
        `select 1 from flash_jobs where image_tag = $1 and state in ('PENDING', 'RUNNING') limit 1`,
        [tag],
      );
      if (!busy) await fs.promises.rm(r.path, { force: true });
    }
    return (await this.get(tag))!;
  }
}
