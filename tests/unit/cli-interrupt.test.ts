import { describe, expect, it } from 'vitest';
import { onInterrupt, startKeepingInterrupt } from '#cli/interrupt.ts';

describe('Ctrl+C while bianbu starts work it follows', () => {
  it('is kept while the start call runs, and nothing listens after it', async () => {
    const before = process.listenerCount('SIGINT');
    const r = await startKeepingInterrupt(true, async () => {
      expect(process.listenerCount('SIGINT')).toBe(before + 1);
      process.emit('SIGINT', 'SIGINT');
      return 7;
    });
    expect(r).toEqual({ value: 7, interrupted: true });
    // Still on in the turn the caller installs its own (no moment without a listener: Node would
    // restore SIGINT's default, which kills); gone by the next.
    expect(process.listenerCount('SIGINT')).toBe(before + 1);
    await new Promise((r) => setImmediate(r));
    expect(process.listenerCount('SIGINT')).toBe(before);
    expect(await startKeepingInterrupt(true, async () => 8)).toEqual({ value: 8, interrupted: false });
    await new Promise((r) => setImmediate(r));
    expect(process.listenerCount('SIGINT')).toBe(before);
  });

  it('is not listened for without --wait, and a failed start removes the listener', async () => {
    const before = process.listenerCount('SIGINT');
    await startKeepingInterrupt(false, async () => {
      expect(process.listenerCount('SIGINT')).toBe(before);
    });
    await expect(
      startKeepingInterrupt(true, async () => {
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    await new Promise((r) => setImmediate(r));
    expect(process.listenerCount('SIGINT')).toBe(before);
  });

  it('one kept is acted on as soon as the work is followed (no terminal: at once)', async () => {
    const isTTY = process.stdin.isTTY;
    Object.defineProperty(process.stdin, 'isTTY', { value: false, configurable: true });
    let acted = 0;
    const int = onInterrupt({ question: 'Cancel?', already: true, act: async () => void acted++ });
    await new Promise((r) => setImmediate(r));
    int.off();
    Object.defineProperty(process.stdin, 'isTTY', { value: isTTY, configurable: true });
    expect(acted).toBe(1);
    const none = onInterrupt({ question: 'Cancel?', act: async () => void acted++ });
    await new Promise((r) => setImmediate(r));
    none.off();
    expect(acted).toBe(1);
  });
});
