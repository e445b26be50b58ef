import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ptyHostProgram } from '#server/boards/local/pty-host/pty-host.ts';

describe('the PTY host compiled by the service', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-cc-'));
  const before = process.env.CC;
  afterAll(() => {
    if (before === undefined) delete process.env.CC;
    else process.env.CC = before;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("fails with the compiler's own message when the compiler fails (the driver falls back and logs it)", async () => {
    const cc = path.join(dir, 'cc');
    fs.writeFileSync(cc, '#!/bin/sh\necho "host.c:1: error: no C here" >&2\nexit 1\n', { mode: 0o755 });
    process.env.CC = cc;
    await expect(ptyHostProgram()).rejects.toThrow('cannot compile the PTY host: host.c:1: error: no C here');
  });
});
