// Shells of the riscv64 bench (riscv-boards.bench.ts): the product's (driver.openShell) and OpenSSH's
// into the same guest sshd, each driven as bytes in and out, with its throughput and echo latency.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { PtyHandle } from '#server/boards/driver.ts';
import type { QemuDriver } from '#server/boards/qemu/qemu-driver.ts';
import { cpuSeconds, type QemuInternals, TICK } from './riscv-boot-watch.ts';

const MIB = 1024 * 1024;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- shells -------------------------------------------------------------------------------------

/** One shell as the bench drives it: bytes in, bytes out. */
export interface ShellPath {
  send(s: string): void;
  onOutput(fn: (b: Buffer) => void): void;
  close(): Promise<void>;
}

/** Output until `marker`: its size, time, and (with `keep`) its text. */
function untilMarker(p: ShellPath, marker: string, run: () => void, timeoutMs = 600_000, keep = false) {
  let bytes = 0;
  let tail = '';
  let text = '';
  const t0 = performance.now();
  return new Promise<{ bytes: number; ms: number; text: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout waiting for ${marker}`)), timeoutMs);
    p.onOutput((b) => {
      bytes += b.length;
      const s = b.toString('latin1');
      if (keep) text += s;
      tail = (tail + s).slice(-200);
      if (tail.includes(marker)) {
        clearTimeout(timer);
        p.onOutput(() => {});
        resolve({ bytes, ms: performance.now() - t0, text });
      }
    });
    run();
  });
}

let markerNo = 0;
/** Runs a command line and waits for its end (a marker echoed after it, split so the echo never matches). */
export async function runLine(p: ShellPath, line: string, timeoutMs?: number, keep = false) {
  const m = `MK${++markerNo}X`;
  return untilMarker(p, `${m}Z`, () => p.send(`${line}; echo ${m}""Z\n`), timeoutMs, keep);
}

/**
 * The guest's CPU ticks (USER_HZ): its sshd's session process (the shell's parent, which reads the
 * PTY and encrypts: the SSH side of the path), and all its harts' busy time.
 */
async function guestTicks(p: ShellPath): Promise<{ sshd: number; busy: number }> {
  const r = await runLine(
    p,
    "echo GT $(awk '{print $14+$15}' /proc/$PPID/stat) $(awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat)",
    60_000,
    true,
  );
  const m = /GT (\d+) (\d+)/.exec(r.text);
  return { sshd: Number(m?.[1] ?? Number.NaN), busy: Number(m?.[2] ?? Number.NaN) };
}

/** ~32 MiB of terminal output: `cat` of the guest's base64 file, timed to its last byte. */
export async function throughput(p: ShellPath, qemu: number | null) {
  const g0 = await guestTicks(p);
  const cpu0 = cpuSeconds(qemu);
  const r = await runLine(p, 'cat /root/b64');
  const qemuCpu = cpuSeconds(qemu) - cpu0;
  const g1 = await guestTicks(p);
  return {
    mibs: r.bytes / MIB / (r.ms / 1000),
    mib: r.bytes / MIB,
    qemuCpu,
    guestSshd: (g1.sshd - g0.sshd) / TICK,
    guestBusy: (g1.busy - g0.busy) / TICK,
  };
}

/**
 * Single keystrokes to a program in a raw PTY that writes back each byte as it reads it: `dd bs=1`
 * (a read and a write per byte, as `cat` does; `head -c` would hold them in stdio's buffer), which
 * ends by itself after its count where `cat` in a raw PTY could not be stopped.
 */
export async function echo(p: ShellPath, keys: number): Promise<number[]> {
  const warm = 20;
  await untilMarker(p, 'ECHOGO', () =>
    p.send(`stty raw -echo; echo ECHO""GO; dd bs=1 count=${keys + warm} status=none; stty sane -echo\n`),
  );
  await sleep(300);
  const lat: number[] = [];
  for (let i = 0; i < keys + warm; i++) {
    const ch = String.fromCharCode(97 + (i % 26));
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('a keystroke was not echoed in 30 s')), 30_000);
      p.onOutput((b) => {
        if (b.includes(ch)) {
          clearTimeout(timer);
          resolve();
        }
      });
      p.send(ch);
    });
    if (i >= warm) lat.push(performance.now() - t0);
    await sleep(5);
  }
  await runLine(p, 'true', 60_000);
  return lat;
}

/** Shells that did not open, and why: a new connection to the board's sshd is not always answered. */
export const setupFailures: string[] = [];

/**
 * A shell through the product. driver.openShell answers at once and opens the shell behind the handle;
 * a shell that ends or stays silent for a minute is closed and tried again (`tries` in all), and its
 * setup time counts from the first try.
 */
export async function productShell(
  driver: QemuDriver,
  tries = 4,
): Promise<{ path: ShellPath; setupMs: number; tries: number }> {
  const t0 = performance.now();
  for (let i = 1; ; i++) {
    const h: PtyHandle = await driver.openShell({ cols: 120, rows: 40 });
    let sink: (b: Buffer) => void = () => {};
    let first = 0;
    h.onData((b) => {
      first ||= performance.now();
      sink(b);
    });
    const gone = new Promise<never>((_, reject) =>
      h.onExit((x) => reject(new Error(`the shell ended (${x.reason ?? x.exitCode})`))),
    );
    gone.catch(() => {});
    const path: ShellPath = {
      send: (s) => h.write(s),
      onOutput: (fn) => {
        sink = fn;
      },
      close: async () => {
        h.close();
        await sleep(200);
      },
    };
    try {
      await Promise.race([runLine(path, 'stty -echo', 60_000), gone]);
      return { path, setupMs: first - t0, tries: i };
    } catch (err) {
      h.close();
      setupFailures.push(`product, try ${i}: ${(err as Error).message}`);
      if (i >= tries) throw err;
      await sleep(1000);
    }
  }
}

/**
 * OpenSSH's client into the guest's sshd over the board's next virtio-serial stream (the service's
 * own connection to it dropped first: the port carries one connection at a time).
 */
export async function opensshShell(
  driver: QemuDriver,
  work: string,
  cipher: string | undefined,
  since: number,
): Promise<{ path: ShellPath; setupMs: number; cipher: string; child: ChildProcess }> {
  const inner = driver as unknown as QemuInternals;
  // Setup is timed from `since`, as the product's: the board's next stream, the handshake, the shell.
  const t0 = since;
  const agent = await inner.machine!.agent!.next(10_000);
  const sockFile = path.join(work, 'agent-bridge.sock');
  fs.rmSync(sockFile, { force: true });
  const bridge = net.createServer((c) => {
    bridge.close();
    c.pipe(agent);
    agent.pipe(c);
    c.on('close', () => agent.destroy());
    c.on('error', () => agent.destroy());
    agent.on('close', () => c.destroy());
  });
  await new Promise<void>((r) => bridge.listen(sockFile, r));
  const askpass = path.join(work, 'askpass.sh');
  fs.writeFileSync(askpass, '#!/bin/sh\necho\n', { mode: 0o700 });
  const child = spawn(
    'ssh',
    [
      '-F',
      '/dev/null',
      '-v',
      '-e',
      'none',
      '-tt',
      ...(cipher ? ['-c', cipher] : []),
      '-o',
      `ProxyCommand=socat - UNIX-CONNECT:${sockFile}`,
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'PreferredAuthentications=none,password',
      '-o',
      'NumberOfPasswordPrompts=1',
      'root@board',
    ],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0' },
    },
  );
  let stderr = '';
  child.stderr!.setEncoding('latin1').on('data', (s: string) => {
    if (stderr.length < 64 * 1024) stderr += s;
  });
  let sink: (b: Buffer) => void = () => {};
  let first = 0;
  child.stdout!.on('data', (b: Buffer) => {
    first ||= performance.now();
    sink(b);
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const shellPath: ShellPath = {
    send: (s) => child.stdin!.write(s),
    onOutput: (fn) => {
      sink = fn;
    },
    close: async () => {
      child.stdin!.write('exit\n');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
      agent.destroy();
      bridge.close();
      await sleep(200);
    },
  };
  try {
    await Promise.race([
      runLine(shellPath, 'stty -echo', 60_000),
      exited.then(() => {
        throw new Error(`ssh exited: ${stderr.split('\n').slice(-6).join(' | ')}`);
      }),
    ]);
  } catch (err) {
    await shellPath.close();
    throw err;
  }
  const negotiated = /kex: server->client cipher: (\S+)/.exec(stderr)?.[1] ?? '?';
  return { path: shellPath, setupMs: first - t0, cipher: negotiated, child };
}
