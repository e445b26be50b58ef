// Runs unpack-worker.ts for one flash: a child process (Node with the same TypeScript loader) writes
// the image into the new root and verifies it, reporting progress. Abort kills it.
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DriverError } from '../driver.ts';
import type { WorkerMessage } from './unpack-worker.ts';

const WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'unpack-worker.ts');

export interface UnpackHooks {
  onBytes: (phase: 'writing' | 'verifying', done: number, total: number) => void;
  onWritten?: (entries: number) => void;
  signal?: AbortSignal;
}

/** Unpacks `image` into `dest` and reads it back; answers the number of entries verified. */
export function unpackInWorker(image: string, dest: string, hooks: UnpackHooks): Promise<number> {
  if (hooks.signal?.aborted) return Promise.reject(new DriverError('flash.aborted', 'The flash was stopped'));
  return new Promise<number>((resolve, reject) => {
    const child = fork(WORKER, [JSON.stringify({ image, dest })], {
      execArgv: ['--import', 'tsx'],
      // Nothing of the service's environment is needed there.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-2000);
    });
    let settled = false;
    const settle = (err: Error | null, entries = 0) => {
      if (settled) return;
      settled = true;
      hooks.signal?.removeEventListener('abort', stop);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (err) reject(err);
      else resolve(entries);
    };
    const stop = () => settle(new DriverError('flash.aborted', 'The flash was stopped'));
    hooks.signal?.addEventListener('abort', stop, { once: true });
    child.on('message', (m: WorkerMessage) => {
      if (m.t === 'bytes') hooks.onBytes(m.phase, m.done, m.total);
      else if (m.t === 'written') hooks.onWritten?.(m.entries);
      else if (m.t === 'done') settle(null, m.entries);
      else if (m.t === 'error') settle(new DriverError(m.key, m.message));
    });
    child.on('error', (err) =>
      settle(new DriverError('driver.failed', `The image writer did not start: ${err.message}`)),
    );
    child.on('exit', (code, signal) =>
      settle(
        new DriverError(
          'driver.failed',
          `The image writer ended (${signal ?? code}) before finishing: ${stderr.trim()}`,
        ),
      ),
    );
  });
}
