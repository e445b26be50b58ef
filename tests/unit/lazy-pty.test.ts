// A riscv64 board's shell handle answered before its PTY is open (qemu/lazy-pty.ts): nothing
// typed or sized meanwhile is lost, and a PTY that never opens ends the handle with the reason.
import { describe, expect, it } from 'vitest';
import type { PtyHandle } from '#server/boards/driver.ts';
import { lazyPty } from '#server/boards/qemu/lazy-pty.ts';

function fakePty() {
  const log: string[] = [];
  let data: (c: Buffer) => void = () => {};
  let exit: (i: { exitCode: number | null; reason?: string }) => void = () => {};
  const pty: PtyHandle = {
    write: (d) => log.push(`write ${d.toString()}`),
    resize: (s) => log.push(`resize ${s.cols}x${s.rows}`),
    onData: (fn) => {
      data = fn;
      return () => {};
    },
    onExit: (fn) => {
      exit = fn;
      return () => {};
    },
    pause: () => log.push('pause'),
    resume: () => log.push('resume'),
    close: () => log.push('close'),
  };
  return {
    pty,
    log,
    emit: (s: string) => data(Buffer.from(s)),
    exit: (code: number) => exit({ exitCode: code }),
  };
}

describe('lazyPty', () => {
  it('holds keystrokes, the last size and a pause until the PTY opens, in order', async () => {
    const f = fakePty();
    let open: (p: PtyHandle) => void = () => {};
    const h = lazyPty(new Promise((r) => (open = r)));
    h.write('uname -m\r');
    h.resize({ cols: 80, rows: 24 });
    h.resize({ cols: 120, rows: 40 });
    h.write('id\r');
    h.pause();
    expect(h.inputBacklog?.()).toBe(12);
    const out: string[] = [];
    h.onData((c) => out.push(c.toString()));
    let ended: number | null = -1;
    h.onExit((i) => {
      ended = i.exitCode;
    });
    open(f.pty);
    await new Promise((r) => setImmediate(r));
    expect(f.log).toEqual(['resize 120x40', 'write uname -m\r', 'write id\r', 'pause']);
    f.emit('riscv64\r\n');
    expect(out).toEqual(['riscv64\r\n']);
    f.exit(0);
    expect(ended).toBe(0);
  });

  it('ends with the reason when the PTY cannot open, and drops what is typed after', async () => {
    const h = lazyPty(Promise.reject(new Error('shell refused: administratively prohibited')));
    const exits: Array<{ exitCode: number | null; reason?: string }> = [];
    h.onExit((i) => exits.push(i));
    await new Promise((r) => setImmediate(r));
    expect(exits).toEqual([{ exitCode: null, reason: 'shell refused: administratively prohibited' }]);
    h.write('ls\r');
    expect(h.inputBacklog?.()).toBe(0);
  });

  it('closes a PTY that opens after the handle was closed', async () => {
    const f = fakePty();
    let open: (p: PtyHandle) => void = () => {};
    const h = lazyPty(new Promise((r) => (open = r)));
    h.close();
    open(f.pty);
    await new Promise((r) => setImmediate(r));
    expect(f.log).toEqual(['close']);
  });
});
