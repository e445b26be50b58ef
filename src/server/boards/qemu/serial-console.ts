// A riscv64 board's serial console (the machine's ttyS0): every byte from power-on kept in a ring
// across resets and flashes, handed to each viewer from the start; the service writes nothing into it.
import { EventEmitter } from 'node:events';
import type { PtyHandle } from '../driver.ts';
import { ByteRing } from '../util.ts';

/** Serial output a paused viewer may hold back before the oldest is dropped (a UART drops too). */
const SERIAL_HELD_MAX = 1024 * 1024;

export class SerialConsole {
  private readonly ring = new ByteRing(512 * 1024);
  private readonly out = new EventEmitter();

  constructor() {
    this.out.setMaxListeners(0);
  }

  /** What the machine printed: kept, and passed to every viewer. */
  push(d: Buffer): void {
    this.ring.push(d);
    this.out.emit('data', d);
  }

  /** A viewer: what came before it (the ring), then what comes; keystrokes go to `write`. */
  open(write: (d: string | Buffer) => void): PtyHandle {
    const dataFns = new Set<(c: Buffer) => void>();
    const exitFns = new Set<(i: { exitCode: number | null; reason?: string }) => void>();
    let paused = false;
    // What came before this viewer (the ring) and what comes until it has a listener wait here, in
    // order: a listener added late misses nothing and sees nothing twice.
    const replay = this.ring.snapshot();
    let held: Buffer[] = replay.length ? [replay] : [];
    let heldBytes = replay.length;
    let listening = false;
    const flush = () => {
      if (paused || !listening) return;
      const out = held;
      held = [];
      heldBytes = 0;
      for (const c of out) for (const fn of dataFns) fn(c);
    };
    const deliver = (c: Buffer) => {
      if (!paused && listening && !held.length) {
        for (const fn of dataFns) fn(c);
        return;
      }
      held.push(c);
      heldBytes += c.length;
      // A viewer that does not read (paused: its client is slow or gone) costs at most this much.
      while (heldBytes > SERIAL_HELD_MAX && held.length > 1) heldBytes -= held.shift()!.length;
    };
    const onData = (c: Buffer) => deliver(c);
    this.out.on('data', onData);
    let closed = false;
    return {
      write,
      resize: () => {},
      onData: (fn) => {
        dataFns.add(fn);
        if (!listening) {
          listening = true;
          setImmediate(flush);
        }
        return () => dataFns.delete(fn);
      },
      onExit: (fn) => {
        exitFns.add(fn);
        return () => exitFns.delete(fn);
      },
      pause: () => {
        paused = true;
      },
      resume: () => {
        paused = false;
        flush();
      },
      close: () => {
        if (closed) return;
        closed = true;
        this.out.off('data', onData);
        for (const fn of exitFns) fn({ exitCode: 0, reason: 'closed' });
      },
    };
  }
}
