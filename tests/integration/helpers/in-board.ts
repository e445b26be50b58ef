// Runs a command in a board through one of its shells (as the board's root) and answers what it
// printed: only what came between a start and an end marker, so the terminal's echo of the typed line
// (which holds the command's own words) never counts as its output. The markers are typed split by
// "" so the echo does not contain them.
import crypto from 'node:crypto';
import type { PtyHandle } from '#server/boards/driver.ts';

export async function runInBoard(sh: PtyHandle, cmd: string, timeoutMs = 20_000): Promise<string> {
  const id = crypto.randomBytes(6).toString('hex');
  const begin = `begin-${id}`;
  const end = `end-${id}`;
  const typed = (m: string) => `${m.slice(0, 5)}""${m.slice(5)}`;
  let out = '';
  const off = sh.onData((b) => {
    out += b.toString();
  });
  try {
    sh.write(`echo ${typed(begin)}; ${cmd}; echo ${typed(end)}\n`);
    const deadline = Date.now() + timeoutMs;
    while (!out.includes(end)) {
      if (Date.now() > deadline) throw new Error(`no end marker; output: ${out.slice(-500)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    off();
  }
  return out.slice(out.indexOf(begin) + begin.length, out.lastIndexOf(end));
}
