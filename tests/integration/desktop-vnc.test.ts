// The /vnc bridge on the real service to a real local board's desktop (Xvnc inside the board's
// sandbox): an RFB handshake and a framebuffer update through it, the authorisation matrix, the socket
// cut with a worded reason when the apply ends, and attacks from inside the board (the socket
// directory replaced by a link to a host path, a fake socket that floods a client that never reads).
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { BoardDriver, PtyHandle } from '#server/boards/driver.ts';
import { hostDesktop } from '#server/boards/local/desktop.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { VNC_LIMITS, VncClose } from '#shared/desktop.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { runInBoard } from './helpers/in-board.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

/** A WebSocket to the bridge with a byte reader over its binary messages (an RFB client's view). */
class VncClient {
  private buf = Buffer.alloc(0);
  private wake: (() => void) | null = null;
  closed: { code: number; reason: string } | null = null;
  readonly opened: Promise<void>;
  readonly ended: Promise<{ code: number; reason: string }>;
  constructor(readonly ws: WebSocket) {
    ws.binaryType = 'nodebuffer';
    ws.on('message', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake?.();
    });
    this.opened = new Promise((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once('error', reject);
    });
    this.ended = new Promise((resolve) =>
      ws.once('close', (code, reason) => {
        this.closed = { code, reason: reason.toString() };
        this.wake?.();
        resolve(this.closed);
      }),
    );
  }
  async read(n: number, timeoutMs = 20_000): Promise<Buffer> {
    const deadline = Date.now() + timeoutMs;
    while (this.buf.length < n) {
      if (this.closed) throw new Error(`closed ${this.closed.code} ${this.closed.reason}`);
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${n} bytes (have ${this.buf.length})`);
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, 200);
      });
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }
  send(b: Buffer | number[]): void {
    this.ws.send(Buffer.from(b));
  }
}

// No skipping: a host without TigerVNC, openbox and xterm (or not root) fails here with the reason;
// `.ci/run` installs them.
describe('the VNC bridge to a local board’s desktop', () => {
  let t: TestApp;
  let port: number;
  let u: TestUser;
  let other: TestUser;
  let applyId: string;
  let deviceId: string;
  let driver: BoardDriver;
  let shell: PtyHandle;
  const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-vnc-host-'));

  const call = async (who: TestUser, url: string, body: object, apply?: string) =>
    (
      await t.app.inject({
        method: 'POST',
        url,
        headers: { ...who.headers, ...(apply ? { applyaccess: apply } : {}) },
        payload: body,
      })
    ).json();

  const lease = async (who: TestUser) => {
    const requestDate = new Date(Date.now() + 48 * HOUR_MS).toISOString();
    const l = await call(who, '/api/device/request-device', {
      requestDate,
      filterReq: {},
      serverName: 'vnc',
    });
    expect(l.code).toBe(20000);
    const a = await call(who, '/api/device/apply-device', { deviceId: l.data.deviceId });
    expect(a.code).toBe(20000);
    return { deviceId: l.data.deviceId as string, applyId: a.data.applyId as string };
  };

  const open = (apply: string, opts: { token?: string | null; origin?: string } = {}) => {
    const token = opts.token === undefined ? u.token : opts.token;
    const protocols = ['binary', ...(token ? [`bianbu.token.${token}`] : [])];
    return new VncClient(
      new WebSocket(
        `ws://127.0.0.1:${port}/vnc/${apply}`,
        protocols,
        opts.origin ? { origin: opts.origin } : {},
      ),
    );
  };

  /** Runs a command in the board as its root; answers its output. */
  const inBoard = (cmd: string, timeoutMs?: number) => runInBoard(shell, cmd, timeoutMs);

  /** RFB 3.8 with security None up to ServerInit; answers the framebuffer size. */
  const handshake = async (c: VncClient) => {
    expect((await c.read(12)).toString()).toBe('RFB 003.008\n');
    c.send(Buffer.from('RFB 003.008\n'));
    const n = (await c.read(1))[0];
    const types = [...(await c.read(n))];
    expect(types).toContain(1);
    c.send([1]);
    expect((await c.read(4)).readUInt32BE(0)).toBe(0);
    c.send([1]);
    const init = await c.read(24);
    const width = init.readUInt16BE(0);
    const height = init.readUInt16BE(2);
    const name = (await c.read(init.readUInt32BE(20))).toString();
    return { width, height, bpp: init[4], name };
  };

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('local boards need the tests to run as root');
    if (!hostDesktop())
      throw new Error('no desktop on this host: apt-get install tigervnc-standalone-server openbox xterm');
    // Boards that start no code-server (code-server.test.ts covers those that do).
    t = await makeTestApp({ env: { BIANBU_CODE_SERVER_DIR: '' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    u = await makeUser(t.app);
    other = await makeUser(t.app);
    ({ deviceId, applyId } = await lease(u));
    driver = await (t.app as unknown as { boards: { driver(id: string): BoardDriver } }).boards.driver(
      deviceId,
    );
    shell = await driver.openShell({ cols: 200, rows: 50 });
  }, 120_000);
  afterAll(async () => {
    shell?.close();
    await t?.close();
    fs.rmSync(hostDir, { recursive: true, force: true });
  });

  it('says the board has a desktop and no code-server', async () => {
    const r = await call(u, '/api/device/desktop-status', { applyId }, applyId);
    expect(r.data).toEqual({ vnc: { available: true }, code: { available: false, reason: 'code.none' } });
  });

  it('completes the RFB handshake with the board’s Xvnc and receives a framebuffer update that is not blank', async () => {
    const c = open(applyId);
    await c.opened;
    expect(c.ws.protocol).toBe('binary');
    const fb = await handshake(c);
    expect(fb).toMatchObject({ width: 1280, height: 800, bpp: 32 });
    // The xterm takes a moment to map; ask for the whole screen until it shows (more than a cursor lit).
    let lit = 0;
    for (let attempt = 0; attempt < 40 && lit < 1000; attempt++) {
      lit = 0;
      c.send([3, 0, 0, 0, 0, 0, fb.width >> 8, fb.width & 255, fb.height >> 8, fb.height & 255]);
      const head = await c.read(4);
      expect(head[0]).toBe(0);
      const rects = head.readUInt16BE(2);
      for (let i = 0; i < rects; i++) {
        const r = await c.read(12);
        const w = r.readUInt16BE(4);
        const h = r.readUInt16BE(6);
        expect(r.readInt32BE(8)).toBe(0); // Raw: no encodings were offered
        const px = await c.read(w * h * 4, 30_000);
        for (let o = 0; o < px.length; o += 4) if (px[o] | px[o + 1] | px[o + 2]) lit++;
      }
      if (lit < 1000) await new Promise((r) => setTimeout(r, 250));
    }
    expect(lit).toBeGreaterThan(1000);
    c.ws.close();
    await c.ended;
  }, 90_000);

  it('refuses no token, another user’s apply and a foreign Origin', async () => {
    const none = open(applyId, { token: null });
    expect(await none.ended).toEqual({ code: VncClose.auth, reason: 'auth.required' });
    const bogus = open(applyId, { token: 'bbt_not-a-token' });
    expect((await bogus.ended).code).toBe(VncClose.auth);
    const theirs = open(applyId, { token: other.token });
    expect((await theirs.ended).code).toBe(VncClose.notFound);
    const foreign = open(applyId, { origin: 'https://evil.example' });
    await expect(foreign.opened).rejects.toThrow('HTTP 403');
  });

  it('closes the socket with the reason when the apply ends, and refuses the ended apply', async () => {
    const second = await call(u, '/api/device/apply-device', { deviceId });
    expect(second.code).toBe(20000);
    const apply2 = second.data.applyId as string;
    const c = open(apply2);
    await handshake(c);
    const un = await call(u, '/api/device/unapply-device', { applyId: apply2 }, apply2);
    expect(un.code).toBe(20000);
    expect(await c.ended).toEqual({ code: VncClose.ended, reason: 'apply.ended' });
    const again = open(apply2);
    expect((await again.ended).code).toBe(VncClose.notFound);
    expect(t.app.vnc.stats().sessions).toBe(0);
    // A board holds one open apply per user: the next tests use a fresh one.
    const third = await call(u, '/api/device/apply-device', { deviceId });
    expect(third.code).toBe(20000);
    applyId = third.data.applyId;
  }, 60_000);

  it('a power reset closes the desktop with the reason, and the next connection finds it started again', async () => {
    const c = open(applyId);
    await handshake(c);
    const r = await call(u, '/api/device/power-reset', { applyId }, applyId);
    expect(r.code).toBe(20000);
    expect(await c.ended).toEqual({ code: VncClose.ended, reason: 'board.reset' });
    const d = open(applyId);
    expect((await handshake(d)).width).toBe(1280);
    d.ws.close();
    // The reset killed the shell the attack tests use: open another.
    shell = await driver.openShell({ cols: 200, rows: 50 });
  }, 90_000);

  it('a link from the board’s socket directory to a host path reaches nothing on the host', async () => {
    // A host socket at the very path the board's link names.
    let hostHits = 0;
    const hostSock = path.join(hostDir, 'rfb.sock');
    const server = net.createServer((s) => {
      hostHits++;
      s.end('RFB 003.008\n');
    });
    await new Promise<void>((r) => server.listen(hostSock, r));
    await inBoard(
      `pkill -x Xtigervnc; sleep 0.3; rm -rf /run/vnc; ln -s ${hostDir} /run/vnc; ls -ld /run/vnc`,
    );
    const c = open(applyId);
    // The service connects inside the board, where the link leads nowhere; it starts the desktop again.
    expect((await c.read(12)).toString()).toBe('RFB 003.008\n');
    expect(hostHits).toBe(0);
    expect(await inBoard('[ -d /run/vnc ] && [ ! -L /run/vnc ] && echo real-dir')).toContain('real-dir');
    c.ws.close();
    server.close();
  }, 60_000);

  it('a fake socket that floods a client that never reads is bounded and does not stall the service', async () => {
    await inBoard(
      `pkill -x Xtigervnc; sleep 0.3; rm -f /run/vnc/rfb.sock; setpriv --reuid=1000 --regid=1000 --init-groups node -e "const b=Buffer.alloc(65536,7);require('net').createServer(c=>{const w=()=>{while(c.write(b));};c.on('drain',w);w();c.on('error',()=>{})}).listen('/run/vnc/rfb.sock')" >/dev/null 2>&1 & sleep 0.8; ls -l /run/vnc`,
    );
    const c = open(applyId);
    await c.opened;
    // Stop reading at the TCP level: the browser that never reads.
    (c.ws as unknown as { _socket: net.Socket })._socket.pause();
    await new Promise((r) => setTimeout(r, 3000));
    const s = t.app.vnc.stats();
    expect(s.sessions).toBe(1);
    expect(s.bufferedBytes).toBeLessThan(VNC_LIMITS.highWaterBytes + 256 * 1024);
    const started = Date.now();
    const r = await call(u, '/api/device/desktop-status', { applyId }, applyId);
    expect(r.code).toBe(20000);
    expect(Date.now() - started).toBeLessThan(2000);
    c.ws.terminate();
    // The service sees the close when it sees it: wait for the session to go, not a fixed 300 ms.
    for (let i = 0; i < 200 && t.app.vnc.stats().sessions > 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(t.app.vnc.stats().sessions).toBe(0);
    await inBoard('pkill -f rfb.sock; rm -f /run/vnc/rfb.sock');
    // The real desktop comes back on the next connection.
    const d = open(applyId);
    expect((await d.read(12)).toString()).toBe('RFB 003.008\n');
    d.ws.close();
  }, 60_000);
});
