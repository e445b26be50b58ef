// The `bianbu` cli as a script would run it: the real binary as a subprocess against the real service
// on a socket (PGlite, four local sandboxed boards), with an API key as its credential.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '#cli/program.ts';
import { issueCredential } from '#server/auth/tokens.ts';
import { parseMessage, type StompFrame } from '#shared/stomp-codec.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { type CliEnv, runCli } from './helpers/cli-run.ts';
import { makeUser } from './helpers/users.ts';

/** One chunk through the proxy, as `cuttingProxy`'s callbacks see it. */
interface ProxyChunk<S> {
  from: 'client' | 'service';
  /** The bytes this side of the connection has sent so far, this chunk included. */
  seen: number;
  /** The STOMP frames this chunk completed, on a WebSocket connection (none on plain HTTP). */
  frames: StompFrame[];
  /** The test's own record of this connection (a cut is a connection's event, not the proxy's). */
  conn: S;
}

/**
 * Reads one direction of a WebSocket connection as it passes: skips the HTTP head, unmasks the
 * client's frames, joins fragments and parses each whole message as STOMP (heart-beats yield none).
 */
function stompReader(): (d: Buffer) => StompFrame[] {
  let buf: Buffer = Buffer.alloc(0);
  let inHead = true;
  let fragments: Buffer[] = [];
  return (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    const frames: StompFrame[] = [];
    if (inHead) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return frames;
      inHead = false;
      buf = buf.subarray(end + 4);
    }
    for (;;) {
      if (buf.length < 2) return frames;
      const fin = (buf[0] & 0x80) !== 0;
      const opcode = buf[0] & 0x0f;
      const masked = (buf[1] & 0x80) !== 0;
      let len = buf[1] & 0x7f;
      let at = 2;
      if (len === 126) {
        if (buf.length < 4) return frames;
        len = buf.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (buf.length < 10) return frames;
        len = Number(buf.readBigUInt64BE(2));
        at = 10;
      }
      const mask = masked ? buf.subarray(at, at + 4) : null;
      if (mask) at += 4;
      if (buf.length < at + len) return frames;
      const payload = Buffer.from(buf.subarray(at, at + len));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
      buf = buf.subarray(at + len);
      if (opcode >= 0x8) continue; // close, ping, pong
      fragments.push(payload);
      if (!fin) continue;
      const message = fragments.length === 1 ? fragments[0] : Buffer.concat(fragments);
      fragments = [];
      try {
        frames.push(...parseMessage(message));
      } catch {}
    }
  };
}

/**
 * A TCP proxy to the service at `url`. `cut` is asked for every chunk before it is passed on: true
 * drops the chunk and cuts both sockets, as a network that goes away. `passed` hears of every chunk
 * once it has been handed to the other side's socket. On a WebSocket connection (`GET /ws`) both see
 * the STOMP frames going through, so a test can cut on an event (a receipt seen) instead of a clock.
 * With backpressure both ways, so what it counts is what the other side was given, not what waits
 * in this proxy's own queue.
 */
async function cuttingProxy<S>(
  url: string,
  opts: {
    conn: () => S;
    cut: (c: ProxyChunk<S>) => boolean;
    passed?: (c: ProxyChunk<S>) => void;
  },
) {
  const target = new URL(url);
  const proxy = net.createServer((client) => {
    const up = net.connect(Number(target.port), target.hostname);
    const conn = opts.conn();
    let isWs: boolean | null = null;
    const pipe = (from: 'client' | 'service', src: net.Socket, dst: net.Socket) => {
      let seen = 0;
      const read = stompReader();
      src.on('data', (d: Buffer) => {
        seen += d.length;
        if (isWs === null && from === 'client') isWs = d.toString('latin1', 0, 8).startsWith('GET /ws');
        const chunk: ProxyChunk<S> = { from, seen, frames: isWs ? read(d) : [], conn };
        if (opts.cut(chunk)) {
          client.destroy();
          up.destroy();
          return;
        }
        const more = dst.write(d, (err) => {
          if (!err) opts.passed?.(chunk);
        });
        if (!more) {
          src.pause();
          dst.once('drain', () => src.resume());
        }
      });
      src.on('error', () => dst.destroy());
      src.on('close', () => dst.destroy());
    };
    pipe('client', client, up);
    pipe('service', up, client);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return proxy;
}

describe('the bianbu cli', () => {
  let t: TestApp;
  let env: CliEnv;
  let cfgDir: string;
  const bianbu = (args: string[], opts?: Parameters<typeof runCli>[2]) => runCli(env, args, opts);

  beforeAll(async () => {
    t = await makeTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const user = await makeUser(t.app, {
      username: 'scripter',
      perms: ['device.add_flash', 'device.view_flash'],
    });
    const key = await issueCredential(t.app.storage.db, user.id, 'apikey');
    cfgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-cli-'));
    env = { url, key, configFile: path.join(cfgDir, 'cli.json') };
  });
  afterAll(async () => {
    await t?.close();
    // Unset when the set-up timed out: its error is the one to read, not a second one from here.
    if (cfgDir) fs.rmSync(cfgDir, { recursive: true, force: true });
  });

  describe('structure', () => {
    it('has --help with examples for every command', () => {
      const program = buildProgram();
      const missing: string[] = [];
      const visit = (cmd: Command, name: string) => {
        let text = '';
        cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
        cmd.outputHelp();
        if (!/Examples:\n\s+(bianbu|source|tar|echo)/.test(text)) missing.push(name);
      };
      for (const c of program.commands)
        if ((!c.parent?.parent && c.commands.length === 0) || c.name() === 'profiles') visit(c, c.name());
      expect(missing).toEqual([]);
      expect(program.commands.length).toBeGreaterThan(20);
    });

    it('lists every call of the contract', async () => {
      const r = await bianbu(['calls']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/requestDevice\s+POST\s+\/api\/device\/request-device/);
    });

    it('prints completion scripts for bash, zsh and fish, naming the commands', async () => {
      for (const shell of ['bash', 'zsh', 'fish']) {
        const r = await bianbu(['completion', shell]);
        expect(r.code).toBe(0);
        expect(r.stdout).toContain('exec');
        expect(r.stdout).toContain('flash-jobs');
      }
      const bad = await bianbu(['completion', 'tcsh']);
      expect(bad.code).toBe(2);
    });

    it('exits 2 on a usage error, without calling the service', async () => {
      const r = await bianbu(['request']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/missing required argument/);
      const bad = await bianbu(['call', 'renameRequestDevice', 'deviceId=x', 'oldServerName=a']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/bianbu: invalid newServerName: .*\(request\.invalid\)/);
    });

    it('exits 3 with the stable key when the key is not valid, as JSON with --json', async () => {
      const r = await bianbu(['leases'], { extraEnv: { BIANBU_API_KEY: 'bbk_not-a-key' } });
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(/\(auth\.token_illegal\)/);
      const j = await bianbu(['leases', '--json'], { extraEnv: { BIANBU_API_KEY: 'bbk_not-a-key' } });
      expect(j.code).toBe(3);
      expect(JSON.parse(j.stderr)).toMatchObject({
        error: { key: 'auth.token_illegal', exitCode: 3, class: 'auth' },
      });
      expect(j.stdout).toBe('');
    });

    it('exits 7 when the service cannot be reached', async () => {
      const r = await bianbu(['leases'], { extraEnv: { BIANBU_URL: 'http://127.0.0.1:9' } });
      expect(r.code).toBe(7);
      expect(r.stderr).toMatch(/\(cli\.network\)/);
    });

    it('logs in with a key from stdin into a profile readable only by its owner', async () => {
      const r = await bianbu(['login', '--url', env.url, '--with-key', '--profile', 'lab'], {
        stdin: `${env.key}\n`,
        extraEnv: { BIANBU_API_KEY: '', BIANBU_URL: '' },
      });
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain('as scripter (profile lab)');
      const st = fs.statSync(env.configFile);
      expect(st.mode & 0o077).toBe(0);
      const saved = JSON.parse(fs.readFileSync(env.configFile, 'utf8'));
      expect(saved).toMatchObject({
        current: 'lab',
        profiles: { lab: { url: env.url, key: env.key, username: 'scripter' } },
      });
      const who = await bianbu(['whoami'], { extraEnv: { BIANBU_API_KEY: '', BIANBU_URL: '' } });
      expect(who.stdout.trim()).toBe('scripter');
      const out = await bianbu(['logout', '--json'], { extraEnv: { BIANBU_API_KEY: '', BIANBU_URL: '' } });
      expect(JSON.parse(out.stdout)).toEqual({ profile: 'lab', removed: true });
      const anon = await bianbu(['leases'], { extraEnv: { BIANBU_API_KEY: '', BIANBU_URL: '' } });
      expect(anon.code).toBe(3);
      expect(anon.stderr).toMatch(/cli\.not_signed_in/);
    });
  });

  describe('on real boards', () => {
    const names = ['b1', 'b2', 'b3', 'b4'];

    it('requests four boards, lists them, and refuses a taken name with exit 5', async () => {
      // Four first boots one after another: 40 s on a quiet machine, past a minute beside a load.
      for (const n of names) {
        const r = await bianbu(['request', n, '--duration', '48h', '--json']);
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ serverName: n, durationKey: '48h', state: 'live' });
      }
      const list = await bianbu(['leases', '--json']);
      expect(
        (JSON.parse(list.stdout) as { items: { serverName: string }[] }).items
          .map((i) => i.serverName)
          .sort(),
      ).toEqual(names);
      const q = await bianbu(['leases', '-q']);
      expect(q.stdout.trim().split('\n').sort()).toEqual(names);
      const taken = await bianbu(['request', 'b1', '--duration', '48h']);
      expect(taken.code).toBe(5);
      expect(taken.stderr).toMatch(/\((lease\.name_taken|lease\.none_free)\)/);
      const unknown = await bianbu(['renew', 'nope']);
      expect(unknown.code).toBe(4);
      expect(unknown.stderr).toMatch(/\(lease\.not_found\)/);
    }, 240_000);

    it('renews by glob and renames a board', async () => {
      const r = await bianbu(['renew', 'b*', '--duration', '7d', '--json']);
      expect(r.code).toBe(0);
      const res = JSON.parse(r.stdout) as { results: { ok: boolean; data: { endsAt: string } }[] };
      expect(res.results).toHaveLength(4);
      for (const x of res.results) {
        expect(x.ok).toBe(true);
        expect(Date.parse(x.data.endsAt) - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
      }
      const mv = await bianbu(['rename', 'b4', 'b4x', '--json']);
      expect(JSON.parse(mv.stdout)).toMatchObject({ serverName: 'b4x' });
      expect((await bianbu(['rename', 'b4x', 'b4'])).code).toBe(0);
    });

    it('exec: exact stdout and stderr, and the remote exit status (0, 3, 127, a signal)', async () => {
      // Five execs of two shells each: past the default minute beside a load.
      const ok = await bianbu(['exec', 'b1', '--', 'sh', '-c', 'printf "out\\n"; printf "err\\n" >&2']);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toBe('out\n');
      expect(ok.stderr).toBe('err\n');
      const three = await bianbu(['exec', 'b1', '--', 'sh', '-c', 'exit 3']);
      expect(three.code).toBe(3);
      const missing = await bianbu(['exec', 'b1', '--', 'no-such-command-here']);
      expect(missing.code).toBe(127);
      expect(missing.stderr).toMatch(/not found/);
      const killed = await bianbu(['exec', 'b1', '--', 'sh', '-c', 'kill -TERM $$']);
      expect(killed.code).toBe(128 + 15);
      const args = await bianbu(['exec', 'b1', '--', 'printf', '%s|', 'a b', "it's", '$HOME']);
      expect(args.stdout).toBe("a b|it's|$HOME|");
    }, 120_000);

    it('exec forwards stdin byte for byte and its end', async () => {
      const data = crypto.randomBytes(300_000);
      const r = await bianbu(['exec', 'b1', '--', 'sha256sum'], { stdin: data });
      expect(r.code).toBe(0);
      expect(r.stdout.split(' ')[0]).toBe(crypto.createHash('sha256').update(data).digest('hex'));
      const bin = await bianbu(['exec', 'b1', '--', 'cat'], { stdin: data.subarray(0, 70_000) });
      expect(bin.stdoutBytes.equals(data.subarray(0, 70_000))).toBe(true);
    });

    it('exec forwards stdin larger than any buffer on the way to a command that reads it late', async () => {
      const data = crypto.randomBytes(24 * 1024 * 1024);
      const r = await bianbu(['exec', 'b1', '--', 'sh', '-c', 'sleep 2; sha256sum'], { stdin: data });
      expect(r.code).toBe(0);
      expect(r.stdout.split(' ')[0]).toBe(crypto.createHash('sha256').update(data).digest('hex'));
    }, 120_000);

    it('exec rides out a network drop once its standard input has arrived', async () => {
      // A small stdin, taken at once; the connection that carried it is cut while the command still
      // runs, at the first thing the service sends after the receipts for all of it (its end, ^D,
      // included) have been handed to the cli: nothing of the input is on its way, so nothing is lost.
      // An event, not a clock: a cut at a fixed second came before that receipt on a slow run.
      let cut = false;
      const proxy = await cuttingProxy(env.url, {
        conn: () => ({ unconfirmed: new Set<string>(), stdinEnded: false }),
        cut: ({ from, frames, conn }) => {
          if (cut) return false;
          if (from === 'client') {
            for (const f of frames) {
              if (f.command !== 'SEND' || !f.headers.receipt) continue;
              conn.unconfirmed.add(f.headers.receipt);
              if (f.body.includes(0x04)) conn.stdinEnded = true;
            }
            return false;
          }
          if (!conn.stdinEnded || conn.unconfirmed.size > 0) return false;
          cut = true;
          return true;
        },
        passed: ({ from, frames, conn }) => {
          if (from !== 'service') return;
          for (const f of frames)
            if (f.command === 'RECEIPT') conn.unconfirmed.delete(f.headers['receipt-id']);
        },
      });
      try {
        const port = (proxy.address() as net.AddressInfo).port;
        const r = await bianbu(
          [
            'exec',
            'b1',
            '--',
            'sh',
            '-c',
            'cat > /tmp/ride; for i in 1 2 3 4 5 6; do sleep 0.5; echo tick; done; echo "got $(wc -c < /tmp/ride)"',
          ],
          { stdin: 'twelve bytes', extraEnv: { BIANBU_URL: `http://127.0.0.1:${port}` }, timeoutMs: 60_000 },
        );
        expect(cut).toBe(true);
        expect(r.stderr).toContain('reconnecting');
        expect(r.stderr).not.toContain('part of it may not have reached the command');
        expect(r.stdout).toContain('got 12');
        expect(r.code).toBe(0);
      } finally {
        proxy.close();
      }
    }, 90_000);

    it('exec stops, and says so, when the network drops standard input on its way', async () => {
      // The first connection that has sent more than 1.5 MiB is cut: what it sent last never arrives.
      let cutAfter = 1.5 * 1024 * 1024;
      const proxy = await cuttingProxy(env.url, {
        conn: () => ({}),
        cut: ({ from, seen }) => {
          if (from !== 'client' || seen <= cutAfter) return false;
          cutAfter = Number.POSITIVE_INFINITY;
          return true;
        },
      });
      try {
        const port = (proxy.address() as net.AddressInfo).port;
        const data = crypto.randomBytes(6 * 1024 * 1024);
        const r = await bianbu(['exec', 'b1', '--', 'sh', '-c', 'sleep 2; sha256sum'], {
          stdin: data,
          extraEnv: { BIANBU_URL: `http://127.0.0.1:${port}` },
          timeoutMs: 90_000,
        });
        expect(cutAfter).toBe(Number.POSITIVE_INFINITY);
        expect(r.stderr).toContain('standard input may be incomplete');
        expect(r.stderr).toContain('part of it may not have reached the command');
        expect(r.code).toBe(255); // bianbu failed, not the command (as ssh)
      } finally {
        proxy.close();
      }
    }, 120_000);

    it('exec on four boards at once: a result per board, exit 1 when one fails', async () => {
      const all = await bianbu(['exec', 'b*', '--json', '--', 'sh', '-c', 'echo "$(hostname)"']);
      expect(all.code).toBe(0);
      const res = JSON.parse(all.stdout) as {
        results: { board: string; exitCode: number; stdout: string }[];
      };
      expect(res.results.map((r) => r.board).sort()).toEqual(names);
      expect(res.results.every((r) => r.exitCode === 0 && r.stdout.trim().length > 0)).toBe(true);
      expect((await bianbu(['exec', 'b3', '--', 'touch', '/root/fail-here'])).code).toBe(0);
      const some = await bianbu([
        'exec',
        '--all',
        '--parallel',
        '2',
        '--',
        'test',
        '!',
        '-e',
        '/root/fail-here',
      ]);
      expect(some.code).toBe(1);
      expect(some.stderr).toContain('[b3] exit 1');
    });

    it('tries a garbled realtime handshake once more, and says so when it fails again', async () => {
      // A relay on loopback in front of the service: the first `garble` WebSocket handshakes get a
      // non-HTTP answer (as from a port that is not the service), everything else is relayed.
      const target = new URL(env.url);
      let garble = 1;
      let handshakes = 0;
      const relay = net.createServer((client) => {
        client.once('data', (first) => {
          const isWs = first.toString('latin1').startsWith('GET /ws');
          if (isWs) handshakes++;
          if (isWs && garble > 0) {
            garble--;
            client.end('SSH-2.0-not-http\r\n');
            return;
          }
          const up = net.connect(Number(target.port), target.hostname, () => {
            up.write(first);
            client.pipe(up).pipe(client);
          });
          up.on('error', () => client.destroy());
          client.on('error', () => up.destroy());
        });
      });
      await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
      const port = (relay.address() as net.AddressInfo).port;
      try {
        const viaRelay = { ...env, url: `http://127.0.0.1:${port}` };
        const once = await runCli(viaRelay, ['exec', 'b1', '--', 'echo', 'through']);
        expect(once.stderr).toBe('');
        expect(once.stdout).toBe('through\n');
        // exec opens two connections at once (remote-exec.ts); one was garbled and tried again.
        expect(handshakes).toBe(3);
        // Both garbled, then one of them again: that one gives up.
        garble = 3;
        handshakes = 0;
        const twice = await runCli(viaRelay, ['exec', 'b1', '--', 'echo', 'through']);
        expect(twice.code).not.toBe(0);
        expect(twice.stderr).toContain('(cli.network)');
        expect(handshakes).toBe(4);
      } finally {
        relay.close();
      }
    });

    it('cp: 100 MiB up and down with matching sha256', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-cp-'));
      try {
        const src = path.join(dir, 'big.bin');
        const fd = fs.openSync(src, 'w');
        const chunk = crypto.randomBytes(1 << 20);
        for (let i = 0; i < 100; i++) {
          chunk[0] = i;
          fs.writeSync(fd, chunk);
        }
        fs.closeSync(fd);
        const want = crypto.createHash('sha256').update(fs.readFileSync(src)).digest('hex');
        const up = await bianbu(['cp', '--json', src, 'b2:/root/'], { timeoutMs: 120_000 });
        expect(up.stderr).toBe('');
        expect(up.code).toBe(0);
        expect(JSON.parse(up.stdout)).toMatchObject({
          direction: 'up',
          verified: true,
          files: [{ path: 'b2:/root/big.bin', size: 100 << 20, sha256: want }],
        });
        const down = path.join(dir, 'back.bin');
        const dn = await bianbu(['cp', '--json', 'b2:/root/big.bin', down], { timeoutMs: 120_000 });
        expect(dn.code).toBe(0);
        expect(JSON.parse(dn.stdout).files[0].sha256).toBe(want);
        expect(crypto.createHash('sha256').update(fs.readFileSync(down)).digest('hex')).toBe(want);
        // A folder both ways.
        fs.mkdirSync(path.join(dir, 'tree/a/b'), { recursive: true });
        fs.writeFileSync(path.join(dir, 'tree/a/b/x.txt'), 'x');
        fs.writeFileSync(path.join(dir, 'tree/y.txt'), 'y');
        expect((await bianbu(['cp', '-q', path.join(dir, 'tree'), 'b2:/root/'])).code).toBe(0);
        const back = await bianbu(['cp', '-q', 'b2:/root/tree', path.join(dir, 'tree2')]);
        expect(back.code).toBe(0);
        expect(fs.readFileSync(path.join(dir, 'tree2/a/b/x.txt'), 'utf8')).toBe('x');
        expect(fs.readFileSync(path.join(dir, 'tree2/y.txt'), 'utf8')).toBe('y');
        const none = await bianbu(['cp', 'b2:/root/nope', dir]);
        expect(none.code).toBe(4);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }, 240_000);

    it('cp: a download cut by the network resumes where it stopped when run again', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-resume-'));
      // A proxy between the cli and the service that counts what each connection brings back, and
      // cuts the first connection that has brought more than `cutAfter` bytes (the download).
      let cutAfter = Number.POSITIVE_INFINITY;
      let largest = 0;
      const proxy = await cuttingProxy(env.url, {
        conn: () => ({}),
        cut: ({ from, seen }) => {
          if (from === 'client') return false;
          largest = Math.max(largest, seen);
          if (seen <= cutAfter) return false;
          cutAfter = Number.POSITIVE_INFINITY;
          return true;
        },
      });
      const port = (proxy.address() as net.AddressInfo).port;
      const viaProxy = { extraEnv: { BIANBU_URL: `http://127.0.0.1:${port}` }, timeoutMs: 120_000 };
      try {
        const size = 24 << 20;
        const made = await bianbu([
          'exec',
          'b3',
          '--',
          'sh',
          '-c',
          `head -c ${size} /dev/urandom > /root/resume.bin`,
        ]);
        expect(made.code).toBe(0);
        const local = path.join(dir, 'resume.bin');
        cutAfter = 9 << 20;
        const cut = await bianbu(['cp', 'b3:/root/resume.bin', local], viaProxy);
        expect(cut.code).toBe(7);
        expect(cut.stderr).toContain('run the same command again to resume');
        const kept = fs.statSync(`${local}.bianbu-part`).size;
        expect(kept).toBeGreaterThan(4 << 20);
        expect(kept).toBeLessThan(size);
        expect(fs.existsSync(local)).toBe(false);

        // Run again: only the rest crosses the network, and the whole file matches the board's sha256.
        largest = 0;
        const again = await bianbu(['cp', '--json', 'b3:/root/resume.bin', local], viaProxy);
        expect(again.stderr).toBe('');
        expect(again.code).toBe(0);
        expect(JSON.parse(again.stdout)).toMatchObject({ verified: true, files: [{ size }] });
        expect(largest).toBeLessThan(size - kept + (1 << 20));
        expect(largest).toBeGreaterThan(size - kept);
        expect(fs.existsSync(`${local}.bianbu-part`)).toBe(false);
        expect(fs.existsSync(`${local}.bianbu-part.json`)).toBe(false);
        const sum = await bianbu(['exec', 'b3', '--', 'sha256sum', '/root/resume.bin']);
        expect(sum.stdout.split(' ')[0]).toBe(
          crypto.createHash('sha256').update(fs.readFileSync(local)).digest('hex'),
        );

        // A part of a file that has changed since is not spliced: the whole new file comes.
        fs.rmSync(local);
        cutAfter = 9 << 20;
        expect((await bianbu(['cp', 'b3:/root/resume.bin', local], viaProxy)).code).toBe(7);
        expect(
          (
            await bianbu([
              'exec',
              'b3',
              '--',
              'sh',
              '-c',
              'sleep 1; head -c 1000 /dev/urandom >> /root/resume.bin',
            ])
          ).code,
        ).toBe(0);
        largest = 0;
        const changed = await bianbu(['cp', '--json', 'b3:/root/resume.bin', local], viaProxy);
        expect(changed.code).toBe(0);
        expect(JSON.parse(changed.stdout)).toMatchObject({ verified: true, files: [{ size: size + 1000 }] });
        expect(largest).toBeGreaterThan(size);
      } finally {
        proxy.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }, 240_000);

    it('shell: an interactive shell through a pseudo-terminal, resized', async () => {
      const pty = await import('node-pty');
      const term = pty.spawn(process.execPath, ['bin/bianbu.mjs', 'shell', 'b1'], {
        cols: 80,
        rows: 24,
        cwd: process.cwd(),
        env: {
          ...process.env,
          BIANBU_URL: env.url,
          BIANBU_API_KEY: env.key,
          BIANBU_CLI_CONFIG: env.configFile,
        } as Record<string, string>,
      });
      let screen = '';
      term.onData((d) => (screen += d));
      const exited = new Promise<number>((resolve) => term.onExit((e) => resolve(e.exitCode)));
      const until = async (re: RegExp, ms = 30_000) => {
        const end = Date.now() + ms;
        while (!re.test(screen)) {
          if (Date.now() > end)
            throw new Error(`timed out waiting for ${re}; screen: ${JSON.stringify(screen.slice(-400))}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      term.write('echo "size=$(stty size)"\r');
      await until(/size=24 80/);
      term.resize(120, 40);
      await new Promise((r) => setTimeout(r, 300));
      term.write('echo "size2=$(stty size)"\r');
      await until(/size2=40 120/);
      term.write('exit\r');
      expect(await exited).toBe(0);
    });

    it('flash --wait on two boards: a verified success each, exit 0', async () => {
      const r = await bianbu(['flash', 'bianbu-developer', 'b3', 'b4', '--wait', '--json'], {
        timeoutMs: 180_000,
      });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const res = JSON.parse(r.stdout) as {
        results: { board: string; ok: boolean; job: { state: string } }[];
      };
      expect(res.results.map((x) => [x.board, x.ok, x.job.state]).sort()).toEqual([
        ['b3', true, 'SUCCESS'],
        ['b4', true, 'SUCCESS'],
      ]);
      const jobs = await bianbu(['flash-jobs', 'b3', '--json']);
      expect(JSON.parse(jobs.stdout).jobs[0]).toMatchObject({
        imageTag: 'bianbu-developer',
        state: 'SUCCESS',
      });
      const bad = await bianbu(['flash', 'no-such-image', 'b3']);
      expect(bad.code).toBe(4);
      expect(bad.stderr).toMatch(/flash\.image_unknown/);
    }, 200_000);

    it('unlocks every board (asking --yes off a terminal)', async () => {
      const ask = await bianbu(['unlock', '--all']);
      expect(ask.code).toBe(2);
      expect(ask.stderr).toMatch(/cli\.confirm_required/);
      const r = await bianbu(['unlock', '--all', '--yes', '--json']);
      expect(r.code).toBe(0);
      expect((JSON.parse(r.stdout) as { results: { ok: boolean }[] }).results.every((x) => x.ok)).toBe(true);
      const after = await bianbu(['leases', '--json']);
      expect(JSON.parse(after.stdout).items).toEqual([]);
    });
  });
});
