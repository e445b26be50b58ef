// Runs one command on a board for a sequence's exec step, through the board driver's login shell (the
// same way into a board as a console shell: inside its sandbox, as its root). The PTY gets
//   stty -echo -opost; exec sh -c '<script>'
// where the script prints a start marker, runs the command with stderr joined to stdout and stdin
// from /dev/null, and prints an end marker with $?. Markers are \x1e S|E <nonce> [status] \x1e; the
// typed line holds them only as printf escapes, so what the shell printed before the start marker
// (motd, prompt, the echo) is dropped. The board's root may print a fake end marker: it only lies
// about its own step. The host never reads the board's files for this.
import crypto from 'node:crypto';
import type { BoardDriver, PtyHandle } from '#server/boards/driver.ts';

export interface ExecResult {
  /** The command's status (0–255; 128+N when killed by signal N); null when it did not end. */
  status: number | null;
  /** The end of what it printed, at most `keep` characters. */
  output: string;
  timedOut: boolean;
  /** The shell ended before the end marker (board reset, flashed, stopped). */
  lost: boolean;
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export async function execOnBoard(
  driver: BoardDriver,
  command: string,
  opts: { timeoutMs: number; keep: number; signal?: AbortSignal },
): Promise<ExecResult> {
  const nonce = crypto.randomBytes(6).toString('hex');
  const start = `\x1eS${nonce}\x1e`;
  const endRe = new RegExp(`\\x1eE${nonce} (\\d+)\\x1e`);
  // The shell stays after the end marker (closed by us once it is read): a PTY whose program exits
  // right after writing can lose those last bytes (README, "Local boards"), as bianbu exec does.
  const script = `printf '\\036S%s\\036' ${nonce}; ( ${command}\n) 2>&1 </dev/null; printf '\\036E%s %d\\036' ${nonce} $?; exec sleep 60 2>/dev/null`;
  const pty: PtyHandle = await driver.openShell({ cols: 200, rows: 50 });
  return await new Promise<ExecResult>((resolve) => {
    let seen = '';
    let started = false;
    let out = '';
    let done = false;
    const finish = (r: Omit<ExecResult, 'output'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      offData();
      offExit();
      opts.signal?.removeEventListener('abort', onAbort);
      try {
        pty.close();
      } catch {
        // already gone
      }
      resolve({ ...r, output: out.length > opts.keep ? out.slice(-opts.keep) : out });
    };
    const onAbort = () => finish({ status: null, timedOut: false, lost: true });
    const timer = setTimeout(() => finish({ status: null, timedOut: true, lost: false }), opts.timeoutMs);
    const offData = pty.onData((chunk) => {
      const text = chunk.toString('utf8');
      if (!started) {
        seen += text;
        const i = seen.indexOf(start);
        if (i < 0) {
          // Only a possible marker's beginning needs keeping.
          if (seen.length > 4096) seen = seen.slice(-64);
          return;
        }
        started = true;
        out = seen.slice(i + start.length);
        seen = '';
      } else out += text;
      const m = endRe.exec(out);
      if (m) {
        out = out.slice(0, m.index);
        finish({ status: Number(m[1]), timedOut: false, lost: false });
        return;
      }
      // Bound what is held while it runs; an end marker is short, so the tail keeps it whole.
      if (out.length > opts.keep * 2) out = out.slice(-opts.keep - 64);
    });
    const offExit = pty.onExit(() => finish({ status: null, timedOut: false, lost: true }));
    // Stopped while the shell opened: no listener heard it, so look now.
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort);
    pty.write(`stty -echo -opost 2>/dev/null; exec sh -c ${sq(script)}\n`);
  });
}
