// A riscv64 board's shell handle, answered before its PTY is open (the agent's SSH session opens
// behind it, so a shell open stays within the spec's 5 s per call).
import type { PtyHandle, PtySize } from '../driver.ts';

/**
 * A PtyHandle for a PTY still opening: keystrokes, the last size and flow control wait for it, its
 * output and exit go to whoever listens. A PTY that fails to open ends the handle with the reason.
 */
export function lazyPty(opening: Promise<PtyHandle>): PtyHandle {
  let pty: PtyHandle | null = null;
  let ended = false;
  let closed = false;
  let paused = false;
  let size: PtySize | null = null;
  const input: Array<string | Buffer> = [];
  const dataFns = new Set<(c: Buffer) => void>();
  const exitFns = new Set<(i: { exitCode: number | null; reason?: string }) => void>();
  const end = (info: { exitCode: number | null; reason?: string }) => {
    if (ended) return;
    ended = true;
    for (const fn of exitFns) fn(info);
  };
  opening.then(
    (p) => {
      if (closed) {
        p.close();
        return;
      }
      pty = p;
      p.onData((c) => {
        for (const fn of dataFns) fn(c);
      });
      p.onExit(end);
      if (size) p.resize(size);
      for (const d of input.splice(0)) p.write(d);
      if (paused) p.pause();
    },
    (err: Error) => end({ exitCode: null, reason: err.message }),
  );
  return {
    write: (d) => {
      if (pty) pty.write(d);
      else if (!ended) input.push(d);
    },
    inputBacklog: () => (pty ? (pty.inputBacklog?.() ?? 0) : input.reduce((n, d) => n + d.length, 0)),
    resize: (s) => {
      size = s;
      pty?.resize(s);
    },
    onData: (fn) => {
      dataFns.add(fn);
      return () => dataFns.delete(fn);
    },
    onExit: (fn) => {
      exitFns.add(fn);
      return () => exitFns.delete(fn);
    },
    pause: () => {
      paused = true;
      pty?.pause();
    },
    resume: () => {
      paused = false;
      pty?.resume();
    },
    close: () => {
      closed = true;
      pty?.close();
    },
  };
}
