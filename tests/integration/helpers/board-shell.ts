// A command line typed into a board's shell, and its output (boards-driver*.test.ts).
import type { PtyHandle } from '#server/boards/driver.ts';
import { shQuote } from '#server/boards/ssh/quote.ts';

/** Runs a command line in a shell and answers its output (between markers the typed echo cannot contain). */
export async function runInShell(shell: PtyHandle, command: string, timeoutMs = 10_000): Promise<string> {
  const id = Math.random().toString(36).slice(2, 8);
  let out = '';
  const off = shell.onData((b) => {
    out += b.toString();
  });
  // One typed line (the PTY echoes it before any output); eval runs the command as its own line.
  shell.write(`echo "BEG""IN${id}"; eval ${shQuote(command)}; printf '\\nEN''D${id}\\n'\r`);
  const deadline = Date.now() + timeoutMs;
  while (!new RegExp(`\\nEND${id}`).test(out)) {
    if (Date.now() > deadline) throw new Error(`no answer to ${command}: ${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  off();
  const start = out.search(new RegExp(`BEGIN${id}\\r?\\n`));
  return out
    .slice(start)
    .replace(new RegExp(`^BEGIN${id}\\r?\\n`), '')
    .replace(new RegExp(`\\r?\\nEND${id}[\\s\\S]*$`), '')
    .replace(/\r/g, '')
    .replace(/\n+$/, '');
}
