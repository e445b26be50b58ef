// A board's PTY host as an attacker would run it: the host lives inside the board, so its root can
// kill it or put any program in its place. Fake hosts (plain node scripts speaking the frame protocol
// badly) stand for a host the board took over: the service must bound what it reads and stop a host
// that breaks the protocol. Then the host program itself, run straight on this machine. A real board's
// PTY host, and its root killing it, are in pty-host.test.ts.
import { describe, expect, it } from 'vitest';
import type { PtyHandle } from '#server/boards/driver.ts';
import { BoardPtyHost } from '#server/boards/local/pty-host/pty-host.ts';
import { ended, sleep, until } from './helpers/pty.ts';

/**
 * A host that answers "ready", and on an open frame says it opened, then misbehaves as `mode` says.
 * `ptmx` is a file its ready frame offers as the board's ptmx (a descriptor it opens).
 */
const fakeHost = (mode: 'oversize' | 'unknown' | 'flood' | 'silent' | 'stranger' | 'liar', ptmx?: string) => `
const out = process.stdout;
const f = (type, id, payload = Buffer.alloc(0), length = payload.length) => {
  const h = Buffer.alloc(9); h.writeUInt8(type, 0); h.writeUInt32BE(id, 1); h.writeUInt32BE(length, 5);
  return Buffer.concat([h, payload]);
};
const offer = ${JSON.stringify(ptmx ?? null)};
if (offer) {
  const fd = Buffer.alloc(4); fd.writeUInt32BE(require('fs').openSync(offer, require('fs').constants.O_PATH), 0);
  out.write(f(0, 0, fd));
} else out.write(f(0, 0));
let buf = Buffer.alloc(0);
process.stdin.on('data', (c) => {
  buf = Buffer.concat([buf, c]);
  while (buf.length >= 9 && buf.length >= 9 + buf.readUInt32BE(5)) {
    const type = buf.readUInt8(0), id = buf.readUInt32BE(1);
    buf = buf.subarray(9 + buf.readUInt32BE(5));
    if ((type !== 1 && type !== 7) || ${JSON.stringify(mode)} === 'silent') continue;
    console.error('opened with frame type ' + type);
    const pid = Buffer.alloc(4); pid.writeUInt32BE(4242, 0);
    out.write(f(1, id, pid));
    if (${JSON.stringify(mode)} === 'oversize') out.write(f(2, id, Buffer.alloc(0), 0x7fffffff));
    if (${JSON.stringify(mode)} === 'unknown') out.write(f(99, id, Buffer.from('?')));
    if (${JSON.stringify(mode)} === 'liar') out.write(f(2, id, Buffer.from('typed by the board')));
    if (${JSON.stringify(mode)} === 'stranger') { out.write(f(2, id + 1000, Buffer.from('not yours'))); out.write(f(3, id + 1000, Buffer.from('{"code":0}'))); out.write(f(2, id, Buffer.from('mine'))); }
    if (${JSON.stringify(mode)} === 'flood') {
      const chunk = f(2, id, Buffer.alloc(64 * 1024, 0x61));
      const pump = () => { while (out.write(chunk)) {} out.once('drain', pump); };
      pump();
    }
  }
});
setInterval(() => {}, 1000);
// Run under a shell (with a ptmx offered), killing the shell leaves this one: it ends with its input.
process.stdin.on('end', () => process.exit(0));
`;

function hostOf(mode: Parameters<typeof fakeHost>[0], log: string[] = [], ptmx?: string): BoardPtyHost {
  return new BoardPtyHost({
    // What follows the fake script (the real host's path) is ignored by it. With a ptmx offered, it
    // runs as the child of a shell, as the real host is the child of the board's entry.
    launch: () =>
      ptmx
        ? { file: '/bin/sh', args: ['-c', '"$0" -e "$1"; exit $?', process.execPath, fakeHost(mode, ptmx)] }
        : { file: process.execPath, args: ['-e', fakeHost(mode), '--'] },
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs: 2000,
    log: (msg, data) => log.push(`${msg} ${JSON.stringify(data ?? {})}`),
  });
}

const spec = { argv: ['/bin/sh'], env: {}, cwd: '/', size: { cols: 80, rows: 24 } };

describe('a PTY host the board took over', () => {
  it('is stopped when it announces a frame over the limit, and its shells end', async () => {
    const log: string[] = [];
    const host = hostOf('oversize', log);
    const p = await host.open(spec);
    const end = await ended(p);
    expect(end.exitCode).toBeNull();
    expect(log.join('\n')).toMatch(/over the limit/);
    host.stop();
  });

  it('is stopped when it sends a frame type the protocol does not have', async () => {
    const log: string[] = [];
    const host = hostOf('unknown', log);
    const p = await host.open(spec);
    await ended(p);
    expect(log.join('\n')).toMatch(/unknown frame type 99/);
  });

  it("cannot speak for a shell the service did not open, or end another's", async () => {
    const host = hostOf('stranger');
    const p = await host.open(spec);
    let text = '';
    let gone = false;
    p.onData((b) => {
      text += b.toString();
    });
    p.onExit(() => {
      gone = true;
    });
    await until(() => text.length >= 'mine'.length, 10_000);
    expect(text).toBe('mine');
    expect(gone).toBe(false);
    host.stop();
  });

  it('that never opens the terminal makes the open fail in time', async () => {
    const host = hostOf('silent');
    const t0 = Date.now();
    await expect(host.open(spec)).rejects.toThrow(/did not open a terminal in time/);
    expect(Date.now() - t0).toBeLessThan(4000);
    host.stop();
  });

  it('cannot pass anything but a devpts ptmx for the service to make terminals through', async () => {
    // /dev/null, and the host's /dev/ptmx (a device node outside any devpts): refused by the terminal
    // helper, and the shell goes through the host as before.
    for (const offer of ['/dev/null', '/dev/ptmx']) {
      const log: string[] = [];
      const host = hostOf('stranger', log, offer);
      const p = await host.open(spec);
      let text = '';
      p.onData((b) => {
        text += b.toString();
      });
      await until(() => text.length >= 'mine'.length, 10_000);
      expect(text).toBe('mine');
      expect(host.direct).toBe(false);
      expect(log.join('\n')).toMatch(/relayed by the board's PTY host.*not a devpts ptmx/);
      host.stop();
    }
  });

  it('is stopped when it sends output for a terminal the service reads itself', async () => {
    // Offered a real devpts ptmx (this test's host's own: a board's host can only offer its board's),
    // the service makes the terminal itself; the host answering with output for it breaks the protocol.
    const log: string[] = [];
    const host = hostOf('liar', log, '/dev/pts/ptmx');
    const p = await host.open(spec);
    expect(host.direct).toBe(true);
    let text = '';
    p.onData((b) => {
      text += b.toString();
    });
    await ended(p);
    expect(text).not.toContain('typed by the board');
    expect(log.join('\n')).toMatch(/output for a terminal the service reads itself/);
  });

  it('that ignores a pause is held: the service stops reading it until the shell resumes', async () => {
    const host = hostOf('flood');
    const p = await host.open(spec);
    let got = 0;
    p.onData((b) => {
      got += b.length;
    });
    p.pause();
    await sleep(1500);
    const whilePaused = got;
    await sleep(500);
    // Bounded: the slack (1 MiB) plus what one read of the pipe held, however long the pause.
    expect(got - whilePaused).toBe(0);
    expect(got).toBeLessThan(1024 * 1024 + 512 * 1024);
    p.resume();
    await until(() => got > whilePaused, 10_000);
    expect(got).toBeGreaterThan(whilePaused);
    host.stop();
  });
});

describe('the PTY host program itself (run on the host, without a board)', () => {
  // The same program the boards run, started straight from its descriptor: what it does with
  // terminals, apart from any sandbox.
  const direct = () =>
    new BoardPtyHost({
      launch: () => ({ file: '/usr/bin/env', args: ['--'] }),
      env: { PATH: '/usr/bin:/bin' },
      timeoutMs: 5000,
    });
  const collect = (p: PtyHandle) => {
    const out: Buffer[] = [];
    p.onData((b) => out.push(Buffer.from(b)));
    return () => Buffer.concat(out);
  };

  it('says on the terminal when the program cannot run, and ends it with 127', async () => {
    const h = direct();
    const p = await h.open({ ...spec, argv: ['/no/such/program'] });
    const text = collect(p);
    expect((await ended(p)).exitCode).toBe(127);
    expect(text().toString()).toMatch(/cannot run \/no\/such\/program: No such file or directory/);
    h.stop();
  });

  it('passes every byte of a large output through, in order, and the exit status', async () => {
    const h = direct();
    const p = await h.open({
      ...spec,
      argv: ['/bin/sh', '-c', 'stty raw -echo; head -c 3000000 /dev/zero | tr "\\0" x; exit 7'],
    });
    const text = collect(p);
    const end = await ended(p);
    expect(end.exitCode).toBe(7);
    const got = text().toString('latin1');
    expect(got.replace(/[^x]/g, '').length).toBe(3_000_000);
    h.stop();
  });

  it('holds a paused terminal: its program blocks, nothing arrives, and resumes on resume', async () => {
    const h = direct();
    const p = await h.open({ ...spec, argv: ['/bin/sh', '-c', 'stty raw -echo; yes'] });
    let got = 0;
    p.onData((b) => {
      got += b.length;
    });
    await sleep(200);
    p.pause();
    await sleep(300);
    const paused = got;
    await sleep(500);
    expect(got).toBe(paused);
    p.resume();
    await until(() => got > paused, 10_000);
    expect(got).toBeGreaterThan(paused);
    p.close();
    await ended(p);
    h.stop();
  });
});
