// node-pty's terminal as a board driver's PtyHandle (shells of boards without the PTY host).
import type * as pty from 'node-pty';
import type { PtyHandle } from '../driver.ts';

/** node-pty's terminal as the driver's PtyHandle. */
export function ptyHandle(p: pty.IPty): PtyHandle {
  let exited = false;
  return {
    hostPid: p.pid,
    write: (d) => {
      if (!exited) p.write(d);
    },
    resize: (s) => {
      if (!exited) p.resize(Math.max(1, s.cols), Math.max(1, s.rows));
    },
    onData: (fn) => {
      const d = p.onData((chunk: string | Buffer) =>
        fn(typeof chunk === 'string' ? Buffer.from(chunk) : chunk),
      );
      return () => d.dispose();
    },
    onExit: (fn) => {
      const d = p.onExit(({ exitCode, signal }) => {
        exited = true;
        fn({ exitCode, reason: signal ? `signal ${signal}` : undefined });
      });
      return () => d.dispose();
    },
    pause: () => p.pause(),
    resume: () => p.resume(),
    close: () => {
      if (exited) return;
      try {
        p.kill('SIGHUP');
      } catch {}
    },
  };
}
