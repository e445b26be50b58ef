// A local board keeps the next root login shell started once the board is in use, so opening one
// does not wait for the sandbox entry and bash's start-up. What a user must not notice: the shell
// handed out has the size asked for, is a shell of its own, answers, and a power reset leaves no
// stale one behind (the next shell opened after it is a fresh process in the rebooted board).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyHandle } from '#server/boards/driver.ts';
import { LocalDriver } from '#server/boards/local/local-driver.ts';
import { localDriverOptions } from '#shared/boards.ts';

/** Types a command and answers what the shell printed up to a marker after it. */
async function run(h: PtyHandle, cmd: string): Promise<string> {
  const marker = `m${Math.random().toString(36).slice(2, 8)}`;
  let out = '';
  const off = h.onData((b) => {
    out += b.toString();
  });
  h.write(`${cmd}; echo ${marker.slice(0, 3)}""${marker.slice(3)}\r`);
  const deadline = Date.now() + 20_000;
  while (!out.includes(marker)) {
    if (Date.now() > deadline) throw new Error(`no marker: ${out.slice(-300)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  off();
  return out.slice(0, out.indexOf(marker));
}

describe('the ready shell of a local board', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-ready-'));
  let driver: LocalDriver;
  const umask = process.umask(0o077);

  beforeAll(async () => {
    driver = new LocalDriver({
      boardId: 'r1',
      name: 'board-r1',
      model: 'Test Board',
      options: localDriverOptions.parse({}),
      boardDir: path.join(dir, 'boards', 'r1'),
      pluginsDir: path.join(dir, 'plugins'),
      sandboxed: true,
    });
    await driver.start();
  }, 60_000);
  afterAll(async () => {
    process.umask(umask);
    await driver?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('hands out a shell of its own, at the size asked for, that answers', async () => {
    const first = await driver.openShell({ cols: 100, rows: 30 });
    const pid1 = (await run(first, 'echo pid=$$')).match(/pid=(\d+)/)?.[1];
    // By now the next shell has started behind the first.
    await new Promise((r) => setTimeout(r, 1500));
    const second = await driver.openShell({ cols: 132, rows: 43 });
    const out = await run(second, 'stty size; echo pid=$$; tty');
    expect(out).toContain('43 132');
    const pid2 = out.match(/pid=(\d+)/)?.[1];
    expect(pid2).toBeDefined();
    expect(pid2).not.toBe(pid1);
    expect(out).toMatch(/\/dev\/pts\/\d+/);
    // Its prompt, printed before it was handed out, reached the new owner.
    first.close();
    second.close();
  });

  it('after a power reset, the next shell is a fresh one in the rebooted board', async () => {
    const a = await driver.openShell({ cols: 80, rows: 24 });
    await run(a, 'touch /tmp/before-reset');
    await new Promise((r) => setTimeout(r, 1500));
    const bootBefore = (await run(a, 'cat /proc/1/stat | cut -d" " -f22')).trim().split('\n').pop();
    await driver.powerReset();
    const b = await driver.openShell({ cols: 80, rows: 24 });
    const bootAfter = (await run(b, 'cat /proc/1/stat | cut -d" " -f22')).trim().split('\n').pop();
    expect(bootAfter).not.toBe(bootBefore);
    b.close();
  }, 60_000);
});
