// "The outside" of a board's network in tests: a tiny HTTP server of our own, run inside a network
// namespace the test made (outside-netns.ts). It serves the files of one directory (a little Debian
// repository), `/blob/<bytes>` (that many bytes, for throughput), `POST /sink` (reads a body and
// answers its length, for the other direction), and prints one line per request on
// its standard output (`req <method> <path> <status> <bytes>`) so a test sees what reached it.
//
//   node --import tsx outside-server.ts DIR ADDRESS PORT
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const [dir, address, port] = process.argv.slice(2);
const root = path.resolve(dir);
const CHUNK = Buffer.alloc(256 * 1024, 0x5a);
const MAX_BLOB = 4 * 1024 ** 3;

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://outside');
  const say = (status: number, bytes: number) =>
    process.stdout.write(`req ${req.method} ${url.pathname} ${status} ${bytes}\n`);
  if (req.method === 'POST' && url.pathname === '/sink') {
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
    });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`${n}\n`);
      say(200, n);
    });
    return;
  }
  const blob = /^\/blob\/(\d{1,12})$/.exec(url.pathname);
  if (blob) {
    const total = Math.min(Number(blob[1]), MAX_BLOB);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        const n = Math.min(CHUNK.length, total - sent);
        sent += n;
        if (!res.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) {
          res.once('drain', pump);
          return;
        }
      }
      res.end();
      say(200, total);
    };
    pump();
    return;
  }
  const file = path.resolve(root, `.${decodeURIComponent(url.pathname)}`);
  if (!file.startsWith(`${root}${path.sep}`) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404).end();
    say(404, 0);
    return;
  }
  const body = fs.readFileSync(file);
  res.writeHead(200, { 'content-length': String(body.length), 'last-modified': new Date().toUTCString() });
  res.end(req.method === 'HEAD' ? undefined : body);
  say(200, body.length);
});
server.listen(Number(port), address, () => process.stdout.write(`listening ${address}:${port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
