// The ready shell's PTY handle: what the shell printed before anyone listened reaches the first
// listener, first and in order, then live output follows; the kept part is bounded.
import pty from 'node-pty';
import { describe, expect, it } from 'vitest';
import { bufferedPtyHandle } from '#server/boards/local/local-driver.ts';

function collect(h: ReturnType<typeof bufferedPtyHandle>) {
  let text = '';
  h.onData((b) => {
    text += b.toString();
  });
  return () => text;
}

describe('a ready shell’s PTY', () => {
  it('hands what was printed before the first listener to it, in order, before what follows', async () => {
    const p = pty.spawn('/bin/sh', ['-c', 'printf before; read x; printf " after-$x"; sleep 0.2'], {
      cols: 80,
      rows: 24,
      encoding: null,
    } as pty.IPtyForkOptions);
    const h = bufferedPtyHandle(p);
    // Printed while nobody listens.
    await new Promise((r) => setTimeout(r, 300));
    const text = collect(h);
    h.write('go\r');
    await expect.poll(text, { timeout: 5_000 }).toContain('after-go');
    expect(text().indexOf('before')).toBeLessThan(text().indexOf('after-go'));
    expect(text().startsWith('before')).toBe(true);
    h.close();
  });

  it('keeps at most 64 KiB of what a board prints before the shell is handed out', async () => {
    const p = pty.spawn('/bin/sh', ['-c', 'head -c 200000 /dev/zero | tr "\\0" x; sleep 1'], {
      cols: 80,
      rows: 24,
      encoding: null,
    } as pty.IPtyForkOptions);
    const h = bufferedPtyHandle(p);
    await new Promise((r) => setTimeout(r, 600));
    const text = collect(h);
    await new Promise((r) => setTimeout(r, 50));
    expect(text().length).toBeGreaterThan(0);
    expect(text().length).toBeLessThanOrEqual(64 * 1024);
    h.close();
  });
});
