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
import path from 'node:path';
import type { Multipart } from '@fastify/multipart';
import { sql } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import type { AuthUser } from '#server/auth/user-context.ts';
import type { ImageFormat } from '#server/boards/driver.ts';
import { AppError, badRequest, conflict, forbidden, notFound } from '#server/errors.ts';
import { ResultCode } from '#shared/codes.ts';
import {
  FLASH_IMAGE_FORMATS,
  FlashErrorKey,
  FlashPerm,
  type UploadImageFields,
  uploadImageFields,
} from '#shared/flash.ts';
import { hasPermission } from '#shared/permissions.ts';
import { ImageCatalogue } from './image-catalogue.ts';
import { BOARD_IMAGE_TAGS, BUILTIN_IMAGES, formatOf, type ImageRow, rowsOf } from './image-records.ts';
import { hashFile } from './pack.ts';

export {
  BUILTIN_IMAGES,
  fits,
  type ImageRow,
  imageDto,
  kindFits,
  kindTaken,
  type LabImage,
} from './image-records.ts';

const TMP_PREFIX = '.upload-';
/** What the snapshots of the boards user $1 holds on live leases cost (board_snapshot_charges). */
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

export class ImageStore extends ImageCatalogue {
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
