// Unpacks a board image (a tar or tar.gz of the board's writable tree) into a fresh directory.
// Every entry is placed through the same in-root resolution as file operations, so an archive with
// `../` names, absolute names, or a symlink followed by an entry "through" it cannot write outside.
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { DriverError } from '../driver.ts';
import { normaliseBoardPath, resolveInRoot } from '../paths.ts';

export async function unpackImage(image: string, dest: string, onPercent: (percent: number) => void): Promise<void> {
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
  let read = 0;
  let lastPercent = -1;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      read += chunk.length;
      const p = Math.floor((read / Math.max(1, st.size)) * 100);
      if (p !== lastPercent) {
        lastPercent = p;
        onPercent(p);
      }
      cb(null, chunk);
    },
  });
  const extract = tar.extract();
  let entries = 0;
  extract.on('entry', (header, stream, next) => {
    place(destReal, header, stream as unknown as Readable).then(
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
    if (gz) await pipeline(fs.createReadStream(image), counter, zlib.createGunzip(), extract);
    else await pipeline(fs.createReadStream(image), counter, extract);
  } catch (err) {
    if (err instanceof DriverError) throw err;
    throw new DriverError('flash.image_invalid', `Image is not a readable tar archive: ${(err as Error).message}`);
  }
  if (!entries) throw new DriverError('flash.image_invalid', 'Image archive is empty');
}

async function place(root: string, header: tar.Header, stream: Readable): Promise<void> {
  const comps = normaliseBoardPath(header.name);
  if (!comps.length) {
    stream.resume();
    return;
  }
  const parent = await resolveInRoot(root, `/${comps.slice(0, -1).join('/')}`, { allowMissing: false }).catch(async (err) => {
    if (err instanceof DriverError && err.key === 'path.not_found') {
      // Archives may omit directory entries: create the parents, then resolve again.
      await mkdirsInRoot(root, comps.slice(0, -1));
      return resolveInRoot(root, `/${comps.slice(0, -1).join('/')}`);
    }
    throw err;
  });
  const target = path.join(parent.hostPath, comps[comps.length - 1]);
  const mode = (header.mode ?? 0o644) & 0o7777;
  switch (header.type) {
    case 'directory': {
      const existing = await fs.promises.lstat(target).catch(() => null);
      if (existing && !existing.isDirectory()) await fs.promises.rm(target, { recursive: true, force: true });
      await fs.promises.mkdir(target, { recursive: true });
      await fs.promises.chmod(target, mode || 0o755);
      stream.resume();
      break;
    }
    case 'file':
    case 'contiguous-file': {
      await fs.promises.rm(target, { force: true, recursive: true });
      // `wx` refuses to follow anything that appeared at the target meanwhile.
      await pipeline(stream, fs.createWriteStream(target, { flags: 'wx', mode }));
      break;
    }
    case 'symlink': {
      await fs.promises.rm(target, { force: true, recursive: true });
      if (!header.linkname || header.linkname.includes('\0')) throw new DriverError('flash.image_invalid', 'Bad symlink entry');
      await fs.promises.symlink(header.linkname, target);
      stream.resume();
      break;
    }
    case 'link': {
      const from = await resolveInRoot(root, `/${normaliseBoardPath(header.linkname ?? '').join('/')}`, { followFinal: false });
      await fs.promises.rm(target, { force: true, recursive: true });
      await fs.promises.link(from.hostPath, target);
      stream.resume();
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
