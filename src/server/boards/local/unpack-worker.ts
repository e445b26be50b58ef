// A flash's heavy part in a process of its own: unpack the image into the new root, then read it
// back and compare (image.ts). Hashing and writing hundreds of MiB per board would otherwise hold the
// service's event loop (every shell and call of every user) and leave the host's other cores idle.
// Run with fork(); the job comes as JSON in argv[2] ({image, dest}); progress, the result or the
// failure go back over IPC. Killing the process stops the flash; the caller discards the new root.
import { DriverError } from '../driver.ts';
import { unpackImage, verifyTree } from './image.ts';

export type WorkerMessage =
  | { t: 'bytes'; phase: 'writing' | 'verifying'; done: number; total: number }
  | { t: 'written'; entries: number }
  | { t: 'done'; entries: number }
  | { t: 'error'; key: string; message: string };

const send = (m: WorkerMessage) => new Promise<void>((r) => process.send!(m, () => r()));

async function main() {
  // Modes come from the archive's headers, exactly (the service's own umask is 077).
  process.umask(0);
  const { image, dest } = JSON.parse(process.argv[2] ?? '{}') as { image: string; dest: string };
  let last = '';
  const report = (phase: 'writing' | 'verifying') => (done: number, total: number) => {
    // At most one message per percent: IPC is not free either.
    const key = `${phase}:${total > 0 ? Math.floor((done / total) * 100) : 0}`;
    if (key === last && done < total) return;
    last = key;
    process.send!({ t: 'bytes', phase, done, total } satisfies WorkerMessage);
  };
  try {
    const manifest = await unpackImage(image, dest, report('writing'));
    await send({ t: 'written', entries: manifest.size });
    await verifyTree(dest, manifest, report('verifying'));
    await send({ t: 'done', entries: manifest.size });
  } catch (err) {
    const e =
      err instanceof DriverError
        ? err
        : new DriverError('driver.failed', (err as Error)?.message ?? String(err));
    await send({ t: 'error', key: e.key, message: e.message });
  }
  process.disconnect?.();
}

if (process.send) void main();
