// Packs a directory into a gzip'd tar archive (a board image), reproducibly: entries in name order,
// fixed times. Links are stored as links, never followed; devices and sockets are left out.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import tar from 'tar-stream';

const MTIME = new Date('2026-01-01T00:00:00Z');

/** Writes `dir` as a tar.gz to `out` (created new); answers its size and sha256. */
export async function packTree(dir: string, out: string): Promise<{ size: number; sha256: string }> {
  const pack = tar.pack();
  const hash = crypto.createHash('sha256');
  let size = 0;
  const sink = fs.createWriteStream(out, { flags: 'wx', mode: 0o600 });
  const gzip = zlib.createGzip({ level: 6 });
  gzip.on('data', (b: Buffer) => {
    hash.update(b);
    size += b.length;
  });
  const done = pipeline(pack, gzip, sink);
  const add = (header: Partial<tar.Header> & { name: string }, body?: Buffer | fs.ReadStream) =>
    new Promise<void>((resolve, reject) => {
      if (body && !Buffer.isBuffer(body)) {
        const entry = pack.entry(header, (err) => (err ? reject(err) : resolve()));
        body.on('error', reject);
        body.pipe(entry);
      } else if (body) pack.entry(header, body, (err) => (err ? reject(err) : resolve()));
      else pack.entry(header, (err) => (err ? reject(err) : resolve()));
    });
  const walk = async (rel: string): Promise<void> => {
    const names = (await fs.promises.readdir(path.join(dir, rel))).sort();
    for (const name of names) {
      const r = rel ? `${rel}/${name}` : name;
      const p = path.join(dir, r);
      const st = await fs.promises.lstat(p);
      const base = { name: r, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, mtime: MTIME };
      if (st.isDirectory()) {
        await add({ ...base, type: 'directory' });
        await walk(r);
      } else if (st.isSymbolicLink()) {
        await add({ ...base, type: 'symlink', linkname: await fs.promises.readlink(p) });
      } else if (st.isFile()) {
        await add({ ...base, type: 'file', size: st.size }, fs.createReadStream(p));
      }
    }
  };
  try {
    await walk('');
    pack.finalize();
    await done;
  } catch (err) {
    pack.destroy(err as Error);
    await done.catch(() => {});
    await fs.promises.rm(out, { force: true });
    throw err;
  }
  return { size, sha256: hash.digest('hex') };
}

/** sha256 and size of a file, streamed; `onBytes` follows the bytes read. */
export async function hashFile(
  file: string,
  onBytes?: (done: number) => void,
  signal?: AbortSignal,
): Promise<{ size: number; sha256: string }> {
  const hash = crypto.createHash('sha256');
  let size = 0;
  const fd = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    for await (const chunk of fd.createReadStream({ highWaterMark: 1024 * 1024, autoClose: false })) {
      if (signal?.aborted) throw signal.reason;
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
      onBytes?.(size);
    }
  } finally {
    await fd.close();
  }
  return { size, sha256: hash.digest('hex') };
}
