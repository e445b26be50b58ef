// Unpacks a board image (a tar or tar.gz of the board's writable tree) into a fresh directory.
// Every entry is placed through the same in-root resolution as file operations, so an archive with
// `../` names, absolute names, or a symlink followed by an entry "through" it cannot write outside.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { DriverError } from '../driver.ts';
import { normaliseBoardPath, resolveInRoot } from '../paths.ts';
import { lstatIn, openFileIn, readlinkIn, UnsafeEntry } from './tree.ts';

/** What an archive put where, measured while it was written: what verification reads back. */
export type ManifestEntry =
  | { type: 'file'; size: number; sha256: string }
  | { type: 'dir' }
  | { type: 'symlink'; target: string }
  | { type: 'link'; of: string };
export type ImageManifest = Map<string, ManifestEntry>;

export interface UnpackOptions {
  signal?: AbortSignal;
}

function aborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new DriverError('flash.aborted', 'The flash was stopped');
}

/**
 * Unpacks `image` into `dest`; `onBytes` follows the bytes of the image file read. Answers the
 * manifest of what was written (each regular file's size and sha256 as it went to disk).
 */
export async function unpackImage(
  image: string,
  dest: string,
  onBytes: (done: number, total: number) => void,
  opts: UnpackOptions = {},
): Promise<ImageManifest> {
  let st: fs.Stats;
  try {
    st = await fs.promises.stat(image);
  } catch {
    throw new DriverError('flash.image_invalid', 'Image file not found');
  }
  if (!st.isFile()) throw new DriverError('flash.image_invalid', 'Image is not a file');
  const head = Buffer.alloc(2);
  const fh = await fs.promises.open(image, 'r');
  await fh.read(head, 0, 2, 0);
  await fh.close();
  const gz = head[0] === 0x1f && head[1] === 0x8b;

  await fs.promises.mkdir(dest, { recursive: true, mode: 0o755 });
  const destReal = await fs.promises.realpath(dest);
  const manifest: ImageManifest = new Map();
  let read = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      read += chunk.length;
      onBytes(read, st.size);
      cb(null, chunk);
    },
  });
  const extract = tar.extract();
  let entries = 0;
  extract.on('entry', (header, stream, next) => {
    const placing = opts.signal?.aborted
      ? Promise.reject(new DriverError('flash.aborted', 'The flash was stopped'))
      : place(destReal, header, stream as unknown as Readable, manifest);
    placing.then(
      () => {
        entries++;
        next();
      },
      (err) => {
        stream.resume();
        next(err);
      },
    );
  });
  try {
    const source = fs.createReadStream(image, { highWaterMark: 1024 * 1024 });
    const stop = () => source.destroy(new DriverError('flash.aborted', 'The flash was stopped'));
    opts.signal?.addEventListener('abort', stop, { once: true });
    try {
      if (gz) await pipeline(source, counter, zlib.createGunzip({ chunkSize: 256 * 1024 }), extract);
      else await pipeline(source, counter, extract);
    } finally {
      opts.signal?.removeEventListener('abort', stop);
    }
  } catch (err) {
    aborted(opts.signal);
    throw imageError(err);
  }
  if (!entries) throw new DriverError('flash.image_invalid', 'Image archive is empty');
  return manifest;
}

/** A failure while unpacking, as a stable key: the disk filled up, or the archive is bad. */
function imageError(err: unknown): DriverError {
  // An entry that cannot be placed inside the root (`../`, through a link pointing out): a bad image.
  if (err instanceof DriverError && err.key.startsWith('path.')) {
    return new DriverError(
      'flash.image_invalid',
      `An entry of the image cannot be placed inside the board's root: ${err.message}`,
    );
  }
  if (err instanceof DriverError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return new DriverError('flash.no_space', 'The board’s disk is full: the image does not fit');
  return new DriverError(
    'flash.image_invalid',
    `Image is not a readable tar archive: ${(err as Error).message}`,
  );
}

/**
 * Reads back every entry of `manifest` from `root` (a tree no board process can reach) and compares
 * it with what was written: file contents by sha256, link targets, hard links by inode.
 */
export async function verifyTree(
  root: string,
  manifest: ImageManifest,
  onBytes: (done: number, total: number) => void,
  opts: UnpackOptions = {},
): Promise<void> {
  let total = 0;
  for (const e of manifest.values()) if (e.type === 'file') total += e.size;
  let done = 0;
  onBytes(0, total);
  const fail = (rel: string, why: string) => new DriverError('flash.verify_failed', `${rel}: ${why}`);
  for (const [rel, e] of manifest) {
    aborted(opts.signal);
    // Descriptor walks (tree.ts): a link on the way to an entry is a difference, never followed.
    let st: fs.Stats | null;
    try {
      st = lstatIn(root, rel);
    } catch (err) {
      if (err instanceof UnsafeEntry) throw fail(rel, 'a link on the way to it');
      throw err;
    }
    if (!st) throw fail(rel, 'missing after writing');
    if (e.type === 'dir') {
      if (!st.isDirectory()) throw fail(rel, 'not a directory');
    } else if (e.type === 'symlink') {
      if (!st.isSymbolicLink() || readlinkIn(root, rel) !== e.target) throw fail(rel, 'link target differs');
    } else if (e.type === 'link') {
      let of: fs.Stats | null = null;
      try {
        of = lstatIn(root, e.of);
      } catch {}
      if (!of || of.ino !== st.ino) throw fail(rel, 'hard link differs');
    } else {
      if (!st.isFile() || st.size !== e.size) throw fail(rel, `size ${st.size}, expected ${e.size}`);
      const hash = crypto.createHash('sha256');
      let fd: number;
      try {
        fd = openFileIn(root, rel);
      } catch {
        throw fail(rel, 'cannot be read back');
      }
      for await (const chunk of fs.createReadStream('', {
        fd,
        highWaterMark: 1024 * 1024,
        autoClose: true,
      })) {
        hash.update(chunk as Buffer);
        done += (chunk as Buffer).length;
        onBytes(done, total);
      }
      if (hash.digest('hex') !== e.sha256) throw fail(rel, 'contents differ from the image');
    }
  }
}

async function place(
  root: string,
  header: tar.Header,
  stream: Readable,
  manifest: ImageManifest,
): Promise<void> {
  const comps = normaliseBoardPath(header.name);
  if (!comps.length) {
    stream.resume();
    return;
  }
  const parent = await resolveInRoot(root, `/${comps.slice(0, -1).join('/')}`, { allowMissing: false }).catch(
    async (err) => {
      if (err instanceof DriverError && err.key === 'path.not_found') {
        // Archives may omit directory entries: create the parents, then resolve again.
        await mkdirsInRoot(root, comps.slice(0, -1));
        return resolveInRoot(root, `/${comps.slice(0, -1).join('/')}`);
      }
      throw err;
    },
  );
  const target = path.join(parent.hostPath, comps[comps.length - 1]);
  // The manifest names where the entry really is (its parents resolved inside the root), so reading
  // it back never goes through a link of the image.
  const rel = path.relative(root, target);
  // An entry replacing a directory replaces what the manifest said was under it.
  if (manifest.get(rel)?.type === 'dir' && header.type !== 'directory') {
    for (const k of manifest.keys()) if (k.startsWith(`${rel}/`)) manifest.delete(k);
  }
  const mode = (header.mode ?? 0o644) & 0o7777;
  switch (header.type) {
    case 'directory': {
      const existing = await fs.promises.lstat(target).catch(() => null);
      if (existing && !existing.isDirectory()) await fs.promises.rm(target, { recursive: true, force: true });
      await fs.promises.mkdir(target, { recursive: true });
      await fs.promises.chmod(target, mode || 0o755);
      stream.resume();
      manifest.set(rel, { type: 'dir' });
      break;
    }
    case 'file':
    case 'contiguous-file': {
      await fs.promises.rm(target, { force: true, recursive: true });
      // `wx` refuses to follow anything that appeared at the target meanwhile.
      const hash = crypto.createHash('sha256');
      let size = 0;
      const measure = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          hash.update(chunk);
          size += chunk.length;
          cb(null, chunk);
        },
      });
      await pipeline(
        stream,
        measure,
        fs.createWriteStream(target, { flags: 'wx', mode, highWaterMark: 1024 * 1024 }),
      );
      manifest.set(rel, { type: 'file', size, sha256: hash.digest('hex') });
      break;
    }
    case 'symlink': {
      await fs.promises.rm(target, { force: true, recursive: true });
      if (!header.linkname || header.linkname.includes('\0'))
        throw new DriverError('flash.image_invalid', 'Bad symlink entry');
      await fs.promises.symlink(header.linkname, target);
      stream.resume();
      manifest.set(rel, { type: 'symlink', target: header.linkname });
      break;
    }
    case 'link': {
      const from = await resolveInRoot(root, `/${normaliseBoardPath(header.linkname ?? '').join('/')}`, {
        followFinal: false,
      });
      await fs.promises.rm(target, { force: true, recursive: true });
      await fs.promises.link(from.hostPath, target);
      stream.resume();
      manifest.set(rel, { type: 'link', of: path.relative(root, from.hostPath) });
      break;
    }
    default:
      // Devices, fifos and the like have no place in a board's writable tree.
      stream.resume();
      return;
  }
  if (header.type !== 'symlink' && header.uid !== undefined && header.gid !== undefined) {
    await fs.promises.lchown(target, header.uid, header.gid).catch(() => {});
  }
}

async function mkdirsInRoot(root: string, comps: string[]): Promise<void> {
  for (let i = 1; i <= comps.length; i++) {
    const r = await resolveInRoot(root, `/${comps.slice(0, i).join('/')}`, { allowMissing: true });
    if (!r.exists) await fs.promises.mkdir(r.hostPath, { mode: 0o755 });
  }
}
