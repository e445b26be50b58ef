// The service stops reading a terminal before the terminal helper reads a flood from it (pty-host.ts,
// handOff). Node has no public call for that, so `stopReading` uses the stream handle's own
// `readStop`; these tests hold this Node to it with a real terminal: a fresh /dev/ptmx, whose line
// discipline echoes what is written to the master back to it (the slave need not be open).
import fs from 'node:fs';
import tty from 'node:tty';
import { afterEach, describe, expect, it } from 'vitest';
import { stopReading } from '#server/system/stop-reading.ts';

const open: tty.ReadStream[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.destroy();
});

function master(): { fd: number; stream: tty.ReadStream; got: string[] } {
  const { O_RDWR, O_NOCTTY, O_NONBLOCK } = fs.constants;
  const fd = fs.openSync('/dev/ptmx', O_RDWR | O_NOCTTY | O_NONBLOCK);
  const stream = new tty.ReadStream(fd);
  open.push(stream);
  const got: string[] = [];
  stream.on('data', (b: Buffer) => got.push(b.toString('latin1')));
  return { fd, stream, got };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await settle(5);
  }
}

describe('stopping the service’s read of a terminal', () => {
  it('leaves what the terminal prints next to another reader of the master', async () => {
    const { fd, stream, got } = master();
    fs.writeSync(fd, 'one\n');
    await until(() => got.join('') === 'one\r\n');

    expect(stopReading(stream)).toBe(true);
    fs.writeSync(fd, 'two\n');
    await settle(200);
    // The stream's handle took nothing: neither an event nor its buffer holds the bytes…
    expect(got.join('')).toBe('one\r\n');
    expect(stream.readableLength).toBe(0);
    // …and the terminal still has them for whoever reads next (the helper, in the service).
    const buf = Buffer.alloc(64);
    const n = fs.readSync(fd, buf, 0, buf.length, null);
    expect(buf.subarray(0, n).toString('latin1')).toBe('two\r\n');
  });

  it('reads again, in order, once the stream is resumed', async () => {
    const { fd, stream, got } = master();
    expect(stopReading(stream)).toBe(true);
    fs.writeSync(fd, 'three\n');
    await settle(100);
    expect(got).toEqual([]);
    stream.resume();
    await until(() => got.join('') === 'three\r\n');
  });

  it('says so, and stops nothing, where the stream has no such handle', () => {
    let paused = false;
    const pause = () => {
      paused = true;
    };
    const noHandle = { pause } as unknown as tty.ReadStream;
    expect(stopReading(noHandle)).toBe(false);
    const otherHandle = {
      pause,
      _handle: { reading: true, readStopped: () => 0 },
    } as unknown as tty.ReadStream;
    expect(stopReading(otherHandle)).toBe(false);
    expect(paused).toBe(false);
  });
});
