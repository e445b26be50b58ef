// A web application that runs INSIDE a board on the code-server port, standing in for code-server in
// the /code/ proxy tests: plain node (the project's node_modules are not visible inside a board), with
// the WebSocket handshake and framing written here. Some routes behave as a hostile board would.
//   GET  /              an HTML page (id="code-fixture") with links that lead elsewhere
//   ANY  /echo          what the board received: method, url, headers, body length and sha256
//   GET  /cookie        Set-Cookie for /, for another Domain, our cookie's name, __Host-, plus host-wide headers
//   GET  /redirect?to=  302 to `to`
//   GET  /huge          an endless body, written as fast as the reader takes it
//   GET  /slow          never answers
//   GET  /stall         a head and a few bytes, then nothing
//   GET  /drip          a head, then one byte a second
//   GET  /stats         connections accepted, bytes /huge wrote
//   WS   /ws            echoes messages (first offered subprotocol chosen); "close-me" closes with 4000
const http = require('node:http');
const crypto = require('node:crypto');

const port = Number(process.argv[2] || 8080);
let connections = 0;
let hugeBytes = 0;

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://board');
  if (url.pathname === '/') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><title>code fixture</title><h1 id="code-fixture">code fixture ${process.getuid()}</h1>` +
        `<a id="up" href="../../">up</a> <a id="abs" href="/code/other/">abs</a>` +
        `<p id="host">${req.headers.host}</p><p id="prefix">${req.headers['x-forwarded-prefix'] ?? ''}</p>`,
    );
    return;
  }
  if (url.pathname === '/echo') {
    const h = crypto.createHash('sha256');
    let n = 0;
    req.on('data', (c) => {
      n += c.length;
      h.update(c);
    });
    req.on('end', () => {
      const body = JSON.stringify({
        method: req.method,
        url: req.url,
        headers: req.headers,
        bodyBytes: n,
        sha256: h.digest('hex'),
        uid: process.getuid(),
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    return;
  }
  if (url.pathname === '/cookie') {
    res.writeHead(200, {
      'set-cookie': [
        'a=1; Path=/; Domain=127.0.0.1; HttpOnly',
        'b=2; Path=/x; SameSite=Lax',
        'bianbu_code=forged; Path=/',
        '__Host-c=3; Path=/; Secure',
        'd=4; Path=/../../other',
      ],
      'strict-transport-security': 'max-age=31536000; includeSubDomains',
      'clear-site-data': '"cookies", "storage"',
      'service-worker-allowed': '/',
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'content-security-policy': "script-src 'none'",
      'content-type': 'text/plain',
    });
    res.end('cookies');
    return;
  }
  if (url.pathname === '/redirect') {
    res.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
    res.end();
    return;
  }
  if (url.pathname === '/huge') {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024, 7);
    const pump = () => {
      while (!res.destroyed) {
        hugeBytes += chunk.length;
        if (!res.write(chunk)) return res.once('drain', pump);
      }
    };
    pump();
    return;
  }
  if (url.pathname === '/slow') return;
  if (url.pathname === '/stall') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('begun');
    return;
  }
  if (url.pathname === '/drip') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const t = setInterval(() => res.write('.'), 1000);
    res.on('close', () => clearInterval(t));
    return;
  }
  if (url.pathname === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ connections, hugeBytes }));
    return;
  }
  res.writeHead(404, { 'content-type': 'text/plain' });
  res.end('no such page');
});
server.on('connection', () => connections++);

// ---- WebSocket (RFC 6455): handshake, masked client frames in, unmasked frames out
function frame(opcode, payload) {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, n]) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (n >= 126 && n < 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 126;
    head.writeUInt16BE(n, 2);
  } else if (n >= 65536) {
    head[0] = 0x80 | opcode;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  return Buffer.concat([head, payload]);
}

function closeFrame(code, reason) {
  const p = Buffer.alloc(2 + Buffer.byteLength(reason));
  p.writeUInt16BE(code, 0);
  p.write(reason, 2);
  return frame(8, p);
}

server.on('upgrade', (req, socket) => {
  if (new URL(req.url, 'http://board').pathname !== '/ws') {
    socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  const accept = crypto
    .createHash('sha1')
    .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
    .digest('base64');
  const offered = String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${accept}\r\n` +
      (offered.length ? `Sec-WebSocket-Protocol: ${offered[0]}\r\n` : '') +
      '\r\n',
  );
  socket.write(frame(1, Buffer.from(`hello ${req.headers.origin ?? ''} ${req.headers.cookie ?? ''}`)));
  let buf = Buffer.alloc(0);
  socket.on('error', () => {});
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      if (buf.length < 2) return;
      const opcode = buf[0] & 0x0f;
      let len = buf[1] & 0x7f;
      let off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        off = 10;
      }
      const masked = (buf[1] & 0x80) !== 0;
      const mask = masked ? buf.subarray(off, off + 4) : null;
      if (masked) off += 4;
      if (buf.length < off + len) return;
      const payload = Buffer.from(buf.subarray(off, off + len));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
      buf = buf.subarray(off + len);
      if (opcode === 8) {
        socket.end(closeFrame(payload.length >= 2 ? payload.readUInt16BE(0) : 1000, ''));
        return;
      }
      if (opcode === 9) socket.write(frame(10, payload));
      else if (opcode === 1 && payload.toString() === 'close-me')
        socket.end(closeFrame(4000, 'board says bye'));
      else if (opcode === 1 || opcode === 2) socket.write(frame(opcode, payload));
    }
  });
});

server.listen(port, '127.0.0.1', () => process.stdout.write(`code-app listening ${port}\n`));
