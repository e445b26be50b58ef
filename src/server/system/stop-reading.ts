// Stopping a stream's reads at the handle, so that another reader (a helper process) can read the
// descriptor: the service's terminals (pty-host.ts) and the WebSocket clients it hands to its relay.
import type { Readable } from 'node:stream';

/**
 * Stops reading a stream's handle now (not only its events), so another may read the terminal. Node
 * has no public call for it: a paused stream's handle goes on reading into the stream's buffer. This
 * uses the handle's `readStop` and `reading` (Node's own net and tty streams use them so); where a
 * Node lacks `readStop` it stops nothing and answers false, and the caller keeps reading itself — two
 * readers of one terminal would split its bytes between them. tests/unit/pty-reader.test.ts holds this
 * Node to it.
 */
export function stopReading(stream: Readable): boolean {
  const h = (stream as unknown as { _handle?: { reading?: boolean; readStop?: unknown } })._handle;
  if (!h || typeof h.readStop !== 'function') return false;
  stream.pause();
  // `reading` is the stream's note of it: cleared, resume() starts the handle again.
  h.reading = false;
  (h.readStop as () => number).call(h);
  return true;
}

/**
 * Starts a stream's handle reading again after stopReading. resume() alone does not when the stream
 * still counts a read as under way (a socket handed over by Node's HTTP parser at an upgrade): the
 * handle is started here, then the stream flows.
 */
export function resumeReading(stream: Readable): void {
  const h = (stream as unknown as { _handle?: { reading?: boolean; readStart?: unknown } })._handle;
  if (h && typeof h.readStart === 'function' && !h.reading) {
    h.reading = true;
    (h.readStart as () => number).call(h);
  }
  stream.resume();
}
