// The image catalogue (images.ts is its uploads): the built-in images built at first start under
// <data>/images/builtin (root file system archives for the sandbox boards) or found where
// scripts/board-images/build.sh left them (the Debian riscv64 disk images of the QEMU boards, used in
// place; registerBoardImages), the lab file's images (host paths, or URLs fetched once), and reading
// the catalogue: one image, those a user may use, the bytes a user's images and snapshots take.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { ImageFormat } from '#server/boards/driver.ts';
import { createDefaultRoot, writeExact } from '#server/boards/local/rootfs.ts';
import { BOARD_IMAGE_VARIANTS, boardImageTag } from '#server/boards/qemu/board-images.ts';
import { conflict, notFound } from '#server/errors.ts';
import { FlashErrorKey, type FlashImageFacts } from '#shared/flash.ts';
import {
  type BoardImageJson,
  BUILTIN_IMAGES,
  type BuiltinSpec,
  boardImageJson,
  boardImageText,
  FORMAT_LIST,
  formatOf,
  type ImageRow,
  type LabImage,
  PLUGINS_MOUNT,
  SNAPSHOT_CHARGES_SQL,
  VARIANT_EXTRAS,
} from './image-records.ts';
import { hashFile, packTree } from './pack.ts';

export class ImageCatalogue {
  readonly dir: string;
  /** Where build.sh leaves the riscv64 disk images (BIANBU_BOARD_IMAGES, or <data>/images/board). */
  readonly boardImagesDir: string;
  /** registerBoardImages runs one at a time: the start's and the lab's after a build. */
  protected boardImagesTurn: Promise<unknown> = Promise.resolve();

  constructor(protected readonly app: FastifyInstance) {
    this.dir = path.join(app.config.dataDir, 'images');
    this.boardImagesDir = app.config.BIANBU_BOARD_IMAGES
      ? path.resolve(app.config.BIANBU_BOARD_IMAGES)
      : path.join(this.dir, 'board');
  }

  protected get db() {
    return this.app.storage;
  }

  protected now(): Date {
    return this.app.clock.now();
  }

  get quotaBytes(): number {
    return this.app.config.BIANBU_FLASH_USER_QUOTA_MB * 1024 * 1024;
  }

  /** Builds the built-in images that are missing (first start, or a data dir that lost them). */
  async ensureBuiltins(): Promise<void> {
    const dir = path.join(this.dir, 'builtin');
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    // What a start killed mid-build left: its tree in the host's temporary directory, a half image here.
    await sweepLeftovers(os.tmpdir(), (n) => n.startsWith(BUILD_PREFIX));
    await sweepLeftovers(dir, (n) => /\.tmp-[0-9a-f]{8}$/.test(n));
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

  protected async registerBoardImagesNow(): Promise<string[]> {
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

  protected async buildBuiltin(spec: BuiltinSpec, file: string): Promise<{ size: number; sha256: string }> {
    // Not in the data directory, whose every entry stays private to the service: the tree has a
    // system's modes. A start killed mid-build leaves it; the next one sweeps it (ensureBuiltins).
    const work = await fs.promises.mkdtemp(path.join(os.tmpdir(), BUILD_PREFIX));
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
}

const BUILD_PREFIX = 'bianbu-image-';
/** Older than this, a build's leftovers are a killed start's, never a build under way. */
const LEFTOVER_AGE_MS = 10 * 60_000;

/**
 * Removes the entries of `dir` that `isLeftover` names, ours (this uid) and old enough to be nobody's
 * build now: what a start killed mid-build left. Links are removed as links.
 */
export async function sweepLeftovers(
  dir: string,
  isLeftover: (name: string) => boolean,
  now = Date.now(),
): Promise<string[]> {
  const swept: string[] = [];
  const uid = process.getuid?.();
  for (const name of await fs.promises.readdir(dir).catch(() => [] as string[])) {
    if (!isLeftover(name)) continue;
    const p = path.join(dir, name);
    const st = await fs.promises.lstat(p).catch(() => null);
    if (!st || st.uid !== uid || now - st.mtimeMs < LEFTOVER_AGE_MS) continue;
    await fs.promises.rm(p, { recursive: true, force: true });
    swept.push(name);
  }
  return swept;
}
