// The image catalogue. Images are files: built-in ones are built at first start under
// <data>/images/builtin, uploaded ones are streamed to <data>/images/uploads, the lab file may name
// others by host path. Each row holds the size and sha256 measured when the image was added; a job
// checks the file against them before writing a byte to a board.
// An upload claims its tag and reserves its owner's quota in the database (its row, marked in flight)
// before a byte of it lands, names its temporary file by its own upload id, and becomes an image only
// whole; a start removes what uploads of a killed service left (recoverUploads).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Multipart } from '@fastify/multipart';
import { type SQL, sql } from 'drizzle-orm';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthUser } from '#server/auth/user-context.ts';
import type { Db } from '#server/db/client.ts';
import { createDefaultRoot, mkdirExact, writeExact } from '#server/boards/local/rootfs.ts';
import { AppError, badRequest, conflict, forbidden, notFound } from '#server/errors.ts';
import { ResultCode } from '#shared/codes.ts';
import {
  FlashErrorKey,
  type FlashImageDto,
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
  format: 'tar' | 'tar.gz';
  size: string | number;
  sha256: string;
  path: string;
  source: FlashImageDto['source'];
  owner_id: string | null;
  created_at: Date | string;
  retired_at: Date | string | null;
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

const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

export function imageDto(r: ImageRow, boardModel?: string): FlashImageDto {
  return {
    tag: r.tag,
    name: r.name,
    osVersion: r.os_version,
    size: Number(r.size),
    sha256: r.sha256,
    description: r.description,
    models: r.models ?? [],
    format: r.format,
    source: r.source,
    ownerId: r.owner_id,
    createdAt: iso(r.created_at)!,
    retiredAt: iso(r.retired_at),
    ...(boardModel !== undefined ? { fits: fits(r, boardModel) } : {}),
  };
}

export function fits(r: Pick<ImageRow, 'models'>, model: string): boolean {
  return !r.models?.length || r.models.includes(model);
}

async function formatOf(file: string): Promise<'tar' | 'tar.gz' | null> {
  const fh = await fs.promises.open(file, 'r');
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await fh.read(head, 0, 512, 0);
    if (bytesRead >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tar.gz';
    if (bytesRead === 512 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
    return null;
  } finally {
    await fh.close();
  }
}

/** Temporary files of uploads in flight: `.upload-<upload id>` in the uploads directory. */
const TMP_PREFIX = '.upload-';
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
    for (const ext of ['tar', 'tar.gz'])
      await rmIfSame(path.join(path.dirname(c.path), `${c.tag}.${ext}`), st.ino);
    await fs.promises.rm(c.path, { force: true });
  }
}

export class ImageStore {
  readonly dir: string;

  constructor(private readonly app: FastifyInstance) {
    this.dir = path.join(app.config.dataDir, 'images');
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
      let format: 'tar' | 'tar.gz' | null = null;
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
          'lab image is not a tar or tar.gz archive: left out of the catalogue',
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

  /** The user's private images plus what their uploads in flight have reserved. */
  async usedBy(userId: string): Promise<number> {
    const [r] = await this.db.query<{ used: string | null }>(
      `select coalesce(sum(size), 0) as used from flash_images where owner_id = $1 and retired_at is null`,
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
        sql`select coalesce(sum(size), 0) as used from flash_images
             where owner_id = ${owner} and retired_at is null and tag <> ${claim.tag}`,
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
    measured: { format: 'tar' | 'tar.gz'; size: number; sha256: string },
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
   * named one), a tar or tar.gz, within the owner's quota. The tag is claimed before the file is
   * written and quota reserved before each step of it, so parallel uploads cannot beat either.
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
          throw badRequest(
            'The file is not a tar or tar.gz archive of a root file system',
            FlashErrorKey.imageInvalid,
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
