// `bianbu cp`: files and folders both ways between this machine and held boards. Remote paths are
// BOARD:PATH (relative paths start at /root). Uploads stream as multipart (uploadFile: each file lands
// whole or not at all); downloads stream (downloadFile: a folder arrives as tar and is unpacked).
// Every file's sha256 is computed as it passes and compared with `sha256sum` run on the board; a
// mismatch fails the copy (exit 6, `cp.checksum_mismatch`). A progress bar on a terminal.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import tar from 'tar-stream';
import { fileCalls, normalizeBoardPath } from '#shared/files.ts';
import type { LeaseDto } from '#shared/leases.ts';
import { authHeaders, envelopeError, readEnvelope } from '../client.ts';
import { applyFor, type Ctx, ctxOf, resolveHeld } from '../context.ts';
import { CliError, fromNetworkError, usage } from '../errors.ts';
import { formatBytes, note, printJson } from '../output.ts';
import { remoteExec } from '../remote-exec.ts';

const F = Object.fromEntries(fileCalls.map((c) => [c.name, c])) as {
  [K in (typeof fileCalls)[number]['name']]: Extract<(typeof fileCalls)[number], { name: K }>;
};
const HOME = '/root';

interface Remote {
  board: string;
  path: string;
}

export function parseRemote(spec: string): Remote | null {
  // C:\ style and ./a:b are local; BOARD:PATH needs a board name without a slash.
  const m = /^([^/:]+):(.*)$/.exec(spec);
  if (!m) return null;
  const p = normalizeBoardPath(m[2] || '.', HOME);
  if (p === null) throw usage(`${spec}: the path leaves the board’s root`, 'path.outside_root');
  return { board: m[1], path: p };
}

interface Copied {
  path: string;
  size: number;
  sha256: string;
}

class Progress {
  private bar: cliProgress.SingleBar | null = null;
  done = 0;
  constructor(
    ctx: Ctx,
    readonly total: number,
    label: string,
  ) {
    if (process.stderr.isTTY && !ctx.quiet && !ctx.json) {
      this.bar = new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format: `${label} {bar} {percentage}% | {doneH}/{totalH} | {speed}/s | eta {eta_formatted}`,
          hideCursor: true,
          etaBuffer: 50,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(total, 0, { doneH: formatBytes(0), totalH: formatBytes(total), speed: '-' });
    }
  }
  private started = Date.now();
  add(n: number) {
    this.done += n;
    const secs = Math.max(0.001, (Date.now() - this.started) / 1000);
    this.bar?.update(this.done, {
      doneH: formatBytes(this.done),
      totalH: formatBytes(this.total),
      speed: formatBytes(this.done / secs),
    });
  }
  stop() {
    this.bar?.stop();
  }
}

/** Counts and hashes bytes passing through. */
/** Hashes and counts what passes; `seed` carries the hash and size of bytes already there (a resume). */
function hashing(
  progress: Progress,
  onDone: (hex: string, size: number) => void,
  seed?: { hash: crypto.Hash; size: number },
): Transform {
  const h = seed?.hash ?? crypto.createHash('sha256');
  let size = seed?.size ?? 0;
  return new Transform({
    transform(chunk: Buffer, _e, cb) {
      h.update(chunk);
      size += chunk.length;
      progress.add(chunk.length);
      cb(null, chunk);
    },
    flush(cb) {
      onDone(h.digest('hex'), size);
      cb();
    },
  });
}

function walkLocal(root: string): { dirs: string[]; files: { rel: string; size: number }[] } {
  const dirs: string[] = [];
  const files: { rel: string; size: number }[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        dirs.push(r);
        walk(r);
      } else if (e.isFile()) files.push({ rel: r, size: fs.statSync(path.join(root, r)).size });
    }
  };
  walk('');
  return { dirs, files };
}

async function remoteType(ctx: Ctx, applyId: string, p: string): Promise<'file' | 'dir' | null> {
  if (p === '/') return 'dir';
  const parent = p.slice(0, p.lastIndexOf('/')) || '/';
  try {
    const list = await ctx.call(F.fileBrowser, { applyId, path: parent }, { applyId });
    const e = list.entries.find((x) => x.path === p || x.name === p.slice(p.lastIndexOf('/') + 1));
    if (!e) return null;
    return e.type === 'dir' ? 'dir' : 'file';
  } catch (e) {
    if (e instanceof CliError && e.cls === 'notfound') return null;
    throw e;
  }
}

async function mkdirRemote(ctx: Ctx, applyId: string, p: string): Promise<void> {
  await ctx.call(F.fileMkdir, { applyId, path: p }, { applyId }).catch((e: unknown) => {
    if (!(e instanceof CliError && e.key === 'path.exists')) throw e;
  });
}

/**
 * A request on node:http with the body streamed from `body` and the answer streamed back: fetch's web
 * streams cost several times the CPU per byte here (the cli ran at a fifth of curl's rate).
 */
function request(
  url: URL,
  headers: Record<string, string>,
  body: AsyncIterable<Buffer> | string,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const lib = url.protocol === 'https:' ? https : http;
    const req = lib.request(url, { method: 'POST', headers }, resolve);
    req.on('error', reject);
    if (typeof body === 'string') req.end(body);
    else pipeline(Readable.from(body), req).catch(reject);
  });
}

async function readAnswer(res: http.IncomingMessage, what: string) {
  const chunks: Buffer[] = [];
  for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  return readEnvelope(new Response(text, { status: res.statusCode }), what);
}

/** One multipart request: the fields, then each file streamed from disk. */
async function uploadBatch(
  ctx: Ctx,
  applyId: string,
  folder: string,
  files: { local: string; name: string }[],
  progress: Progress,
  hashes: Map<string, string>,
): Promise<void> {
  const boundary = `----bianbu${crypto.randomBytes(12).toString('hex')}`;
  const enc = (s: string) => Buffer.from(s);
  const field = (name: string, value: string) =>
    enc(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  const partHead = (name: string) =>
    enc(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${name.replace(/["\\\r\n]/g, (c) => encodeURIComponent(c))}"\r\ncontent-type: application/octet-stream\r\n\r\n`,
    );
  const tail = enc(`--${boundary}--\r\n`);
  // The length is known: the service refuses at once what the board has no room for.
  let length = field('applyId', applyId).length + field('path', folder).length + tail.length;
  for (const f of files) length += partHead(f.name).length + fs.statSync(f.local).size + 2;
  async function* body() {
    yield field('applyId', applyId);
    yield field('path', folder);
    for (const f of files) {
      yield partHead(f.name);
      const h = crypto.createHash('sha256');
      for await (const chunk of fs.createReadStream(f.local, {
        highWaterMark: 1 << 20,
      }) as AsyncIterable<Buffer>) {
        h.update(chunk);
        progress.add(chunk.length);
        yield chunk;
      }
      hashes.set(`${folder === '/' ? '' : folder}/${f.name}`, h.digest('hex'));
      yield enc('\r\n');
    }
    yield tail;
  }
  let res: http.IncomingMessage;
  try {
    res = await request(
      new URL(F.uploadFile.path, ctx.cfg.url),
      {
        ...authHeaders(ctx.cfg, applyId),
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(length),
      },
      body(),
    );
  } catch (e) {
    throw fromNetworkError(e, 'uploadFile');
  }
  const env = await readAnswer(res, 'uploadFile');
  if (env.code !== 20000) throw envelopeError(env, 'uploadFile');
}

/** sha256 of board files, by `sha256sum` on the board. */
async function remoteHashes(
  ctx: Ctx,
  lease: LeaseDto,
  target: string,
  isDir: boolean,
): Promise<Map<string, string>> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const argv = isDir
    ? ['find', target, '-type', 'f', '-exec', 'sha256sum', '--', '{}', '+']
    : ['sha256sum', '--', target];
  const r = await remoteExec(ctx, lease, argv, {
    stdout: (b, done) => (out.push(Buffer.from(b)), done()),
    stderr: (b, done) => (err.push(Buffer.from(b)), done()),
    onReady: (i) => i.end(),
  });
  if (r.exitCode !== 0)
    throw new CliError(
      `sha256sum on the board failed: ${Buffer.concat(err).toString().trim() || r.reason}`,
      'cp.verify_failed',
      'board',
    );
  const m = new Map<string, string>();
  for (const line of Buffer.concat(out).toString().split('\n')) {
    const x = /^([0-9a-f]{64}) [ *](.*)$/.exec(line);
    if (x) m.set(x[2], x[1]);
  }
  return m;
}

function compare(local: Map<string, string>, remote: Map<string, string>): void {
  for (const [p, h] of local) {
    const r = remote.get(p);
    if (r !== h)
      throw new CliError(
        `${p}: sha256 differs (local ${h.slice(0, 12)}, board ${r?.slice(0, 12) ?? 'missing'})`,
        'cp.checksum_mismatch',
        'board',
      );
  }
}

async function upload(ctx: Ctx, sources: string[], dest: Remote, verify: boolean): Promise<Copied[]> {
  const lease = await resolveHeld(ctx, dest.board);
  const applyId = await applyFor(ctx, lease);
  const destType = await remoteType(ctx, applyId, dest.path);
  const plans: { folder: string; files: { local: string; name: string }[] }[] = [];
  const dirsToMake: string[] = [];
  let total = 0;
  const intoDir = destType === 'dir' || sources.length > 1;
  if (sources.length > 1 && destType !== 'dir')
    throw usage(`${dest.board}:${dest.path} is not a folder`, 'path.not_a_directory');
  const verifyRoots: { path: string; dir: boolean }[] = [];
  for (const src of sources) {
    const st = fs.statSync(src, { throwIfNoEntry: false });
    if (!st) throw new CliError(`${src}: no such file or folder`, 'cp.local_not_found', 'notfound');
    const base = path.basename(path.resolve(src));
    if (st.isDirectory()) {
      const root = intoDir ? `${dest.path === '/' ? '' : dest.path}/${base}` : dest.path;
      dirsToMake.push(root);
      const w = walkLocal(src);
      for (const d of w.dirs) dirsToMake.push(`${root}/${d}`);
      const byDir = new Map<string, { local: string; name: string }[]>();
      for (const f of w.files) {
        const rel = path.posix.dirname(f.rel);
        const folder = rel === '.' ? root : `${root}/${rel}`;
        byDir.set(folder, [
          ...(byDir.get(folder) ?? []),
          { local: path.join(src, f.rel), name: path.posix.basename(f.rel) },
        ]);
        total += f.size;
      }
      for (const [folder, files] of byDir) plans.push({ folder, files });
      verifyRoots.push({ path: root, dir: true });
    } else {
      const folder = intoDir ? dest.path : dest.path.slice(0, dest.path.lastIndexOf('/')) || '/';
      const name = intoDir ? base : dest.path.slice(dest.path.lastIndexOf('/') + 1);
      plans.push({ folder, files: [{ local: src, name }] });
      total += st.size;
      verifyRoots.push({ path: `${folder === '/' ? '' : folder}/${name}`, dir: false });
    }
  }
  for (const d of dirsToMake) await mkdirRemote(ctx, applyId, d);
  const progress = new Progress(ctx, total, `→ ${dest.board}`);
  const hashes = new Map<string, string>();
  try {
    for (const p of plans) await uploadBatch(ctx, applyId, p.folder, p.files, progress, hashes);
  } finally {
    progress.stop();
  }
  if (verify) {
    for (const v of verifyRoots)
      compare(
        new Map([...hashes].filter(([p]) => (v.dir ? p.startsWith(`${v.path}/`) : p === v.path))),
        await remoteHashes(ctx, lease, v.path, v.dir),
      );
  }
  const sizes = new Map<string, number>();
  for (const p of plans)
    for (const f of p.files)
      sizes.set(`${p.folder === '/' ? '' : p.folder}/${f.name}`, fs.statSync(f.local).size);
  return [...hashes].map(([p, h]) => ({ path: `${dest.board}:${p}`, size: sizes.get(p) ?? 0, sha256: h }));
}

/** What a `.bianbu-part` file was downloaded from (kept beside it as `.bianbu-part.json`). */
interface PartInfo {
  deviceId: string;
  path: string;
  size: number;
  etag: string;
}

/**
 * Whether an interrupted download of this file can go on: a part file from the same board path with
 * its validator, shorter than the file. The service decides with If-Range whether the file is still
 * that version; if not, it sends the whole file and the part is overwritten.
 */
function resumable(
  tmp: string,
  deviceId: string,
  boardPath: string,
  size: number,
): { have: number; etag: string } | null {
  try {
    const info = JSON.parse(fs.readFileSync(`${tmp}.json`, 'utf8')) as Partial<PartInfo>;
    const have = fs.statSync(tmp).size;
    if (info.deviceId !== deviceId || info.path !== boardPath || typeof info.etag !== 'string') return null;
    if (info.size !== size || have <= 0 || have >= size) return null;
    return { have, etag: info.etag };
  } catch {
    return null;
  }
}

function contentRangeStart(res: http.IncomingMessage): number | null {
  const m = /^bytes (\d+)-\d+\/\d+$/.exec(String(res.headers['content-range'] ?? ''));
  return m ? Number(m[1]) : null;
}

async function download(ctx: Ctx, src: Remote, dest: string, verify: boolean): Promise<Copied[]> {
  const lease = await resolveHeld(ctx, src.board);
  const applyId = await applyFor(ctx, lease);
  const type = await remoteType(ctx, applyId, src.path);
  if (!type)
    throw new CliError(`${src.board}:${src.path}: no such file or folder`, 'path.not_found', 'notfound');
  let size = 0;
  if (type === 'file') {
    const parent = src.path.slice(0, src.path.lastIndexOf('/')) || '/';
    const list = await ctx.call(F.fileBrowser, { applyId, path: parent }, { applyId });
    size = list.entries.find((e) => e.path === src.path)?.size ?? 0;
  }
  const base = src.path.slice(src.path.lastIndexOf('/') + 1) || 'root';
  const destIsDir = fs.statSync(dest, { throwIfNoEntry: false })?.isDirectory() ?? false;
  const target = destIsDir ? path.join(dest, base) : dest;
  const tmp = `${target}.bianbu-part`;
  const resume = type === 'file' ? resumable(tmp, lease.deviceId, src.path, size) : null;
  let res: http.IncomingMessage;
  try {
    res = await request(
      new URL(F.downloadFile.path, ctx.cfg.url),
      {
        ...authHeaders(ctx.cfg, applyId),
        'content-type': 'application/json',
        ...(resume ? { range: `bytes=${resume.have}-`, 'if-range': resume.etag } : {}),
      },
      JSON.stringify({ deviceId: lease.deviceId, filePath: src.path }),
    );
  } catch (e) {
    throw fromNetworkError(e, 'downloadFile');
  }
  if (
    (res.statusCode ?? 500) >= 300 ||
    String(res.headers['content-type'] ?? '').includes('application/json')
  ) {
    const env = await readAnswer(res, 'downloadFile');
    throw envelopeError(env, 'downloadFile');
  }
  const progress = new Progress(ctx, size || Number(res.headers['content-length']) || 0, `← ${src.board}`);
  const local = new Map<string, string>();
  const copied: Copied[] = [];
  const body = res;
  try {
    if (type === 'file') {
      // 206: the service sends the rest of the same version of the file (its ETag matched If-Range);
      // the bytes already here are hashed first, then the rest is appended. 200: from the start.
      const from =
        res.statusCode === 206 && resume && contentRangeStart(res) === resume.have ? resume.have : 0;
      const etag = typeof res.headers.etag === 'string' ? res.headers.etag : null;
      if (etag)
        fs.writeFileSync(
          `${tmp}.json`,
          JSON.stringify({ deviceId: lease.deviceId, path: src.path, size, etag } satisfies PartInfo),
          { mode: 0o600 },
        );
      let seed: { hash: crypto.Hash; size: number } | undefined;
      if (from > 0) {
        seed = { hash: crypto.createHash('sha256'), size: from };
        for await (const c of fs.createReadStream(tmp, { end: from - 1 }) as AsyncIterable<Buffer>)
          seed.hash.update(c);
        progress.add(from);
      }
      const hash = hashing(
        progress,
        (h, n) => {
          local.set(src.path, h);
          copied.push({ path: target, size: n, sha256: h });
        },
        seed,
      );
      await pipeline(body, hash, fs.createWriteStream(tmp, from > 0 ? { flags: 'r+', start: from } : {}));
      fs.renameSync(tmp, target);
      fs.rmSync(`${tmp}.json`, { force: true });
    } else {
      // The tar's top entry is the folder's own name; it lands as `target`.
      const extract = tar.extract();
      const rootOut = path.resolve(target);
      fs.mkdirSync(rootOut, { recursive: true });
      extract.on('entry', (header, stream, next) => {
        const rel = header.name.split('/').slice(1).join('/').replace(/\/$/, '');
        const out = path.resolve(rootOut, rel);
        if (out !== rootOut && !out.startsWith(`${rootOut}${path.sep}`)) {
          stream.resume();
          return next(new CliError(`${header.name}: leaves the target folder`, 'path.outside_root', 'board'));
        }
        if (header.type === 'directory') {
          fs.mkdirSync(out, { recursive: true });
          stream.resume();
          stream.on('end', next);
        } else if (header.type === 'file') {
          fs.mkdirSync(path.dirname(out), { recursive: true });
          const remotePath = rel ? `${src.path}/${rel}` : src.path;
          pipeline(
            stream,
            hashing(progress, (h, n) => {
              local.set(remotePath, h);
              copied.push({ path: out, size: n, sha256: h });
            }),
            fs.createWriteStream(out, { mode: header.mode ? header.mode & 0o777 : 0o644 }),
          ).then(() => next(), next);
        } else if (header.type === 'symlink' && header.linkname) {
          fs.rmSync(out, { force: true });
          fs.symlinkSync(header.linkname, out);
          stream.resume();
          stream.on('end', next);
        } else {
          stream.resume();
          stream.on('end', next);
        }
      });
      await pipeline(body, extract);
    }
  } catch (e) {
    if (e instanceof CliError) throw e;
    const err = fromNetworkError(e, 'downloadFile');
    // What arrived stays in the part file: the same command continues from there.
    if (type === 'file' && fs.existsSync(`${tmp}.json`))
      err.message += ` (${progress.done} bytes kept in ${tmp}; run the same command again to resume)`;
    throw err;
  } finally {
    progress.stop();
  }
  if (verify) compare(local, await remoteHashes(ctx, lease, src.path, type === 'dir'));
  return copied;
}

export function registerCp(program: Command): void {
  program
    .command('cp <paths...>')
    .description('copy files and folders to or from held boards (BOARD:PATH), sha256-checked')
    .usage('[options] SOURCE... DEST')
    .option('--no-verify', 'skip the sha256 comparison with the board')
    .addHelpText(
      'after',
      `
Examples:
  bianbu cp ./app.bin ci-1:/root/            # into a folder
  bianbu cp ./app.bin ci-1:bin/app           # relative paths start at /root
  bianbu cp -q ./build ci-1:/root/           # a folder, no progress bar
  bianbu cp ci-1:/var/log/syslog ./          # down
  bianbu cp ci-1:/etc ./etc-copy             # a folder down (streamed as tar, unpacked)

Each file lands whole or not at all on the board (a temporary file renamed into place) and locally
(a .bianbu-part file renamed). A checksum mismatch exits 6 with cp.checksum_mismatch.
JSON: {"direction": "up"|"down", "files": [{"path", "size", "sha256"}], "verified": boolean}`,
    )
    .action(async (paths: string[], o: { verify: boolean }, cmd: Command) => {
      const ctx = ctxOf(cmd);
      if (paths.length < 2) throw usage('give a source and a destination');
      const dest = paths[paths.length - 1];
      const sources = paths.slice(0, -1);
      const destRemote = parseRemote(dest);
      const srcRemotes = sources.map(parseRemote);
      let files: Copied[];
      let direction: 'up' | 'down';
      const t0 = Date.now();
      if (destRemote && srcRemotes.every((s) => s === null)) {
        direction = 'up';
        files = await upload(ctx, sources, destRemote, o.verify);
      } else if (!destRemote && srcRemotes.every((s) => s !== null)) {
        direction = 'down';
        files = [];
        for (const s of srcRemotes) files.push(...(await download(ctx, s as Remote, dest, o.verify)));
      } else
        throw usage(
          'copy from this machine to a board, or from boards to this machine (BOARD:PATH on one side)',
        );
      if (ctx.json) return printJson({ direction, files, verified: o.verify });
      const bytes = files.reduce((n, f) => n + f.size, 0);
      const secs = (Date.now() - t0) / 1000;
      note(
        ctx,
        `${files.length} file${files.length === 1 ? '' : 's'}, ${formatBytes(bytes)} in ${secs.toFixed(1)} s (${formatBytes(bytes / Math.max(secs, 0.001))}/s)${o.verify ? ', sha256 verified' : ''}`,
      );
    });
}
