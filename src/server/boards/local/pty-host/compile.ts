// The C programs of pty-host/ (host.c, ctl.c), compiled once per service with the machine's C compiler
// and held open read-only: each runs from its descriptor (/proc/self/fd/N), so no path of the service's
// is needed on either side, and none exists inside a board.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Compiles `source` (files next to this file, or absolute paths: another driver's program; several are
 * one program); rejects with the compiler's message when it cannot build.
 */
export async function compileProgram(source: string | string[], name: string, what: string): Promise<number> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const srcs = (Array.isArray(source) ? source : [source]).map((f) =>
    path.isAbsolute(f) ? f : path.join(here, f),
  );
  // A directory of the service's own (0700), removed once the program is open.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  try {
    const bin = path.join(dir, name);
    await run(process.env.CC || 'cc', ['-O2', '-o', bin, ...srcs], {
      timeout: 120_000,
      encoding: 'utf8',
    }).catch((err: Error & { stderr?: string }) => {
      throw new Error(`cannot compile ${what}: ${(err.stderr || err.message).trim().slice(-500)}`);
    });
    // A board's root is an unprivileged uid on the host: it runs the program as "other".
    fs.chmodSync(bin, 0o755);
    return fs.openSync(bin, 'r');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
