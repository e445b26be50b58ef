// A process that restores a snapshot of a board disk (BoardDisk, qemu-img on real files) and stops
// at a step of the restore, printing `AT <step>`, until the test kills it with SIGKILL, as a crash of
// the service mid-restore would. Settings in BIANBU_CRASH_RESTORE: {dir, target, at, epoch?}.
import { BoardDisk } from '#server/boards/qemu/snapshot-disk.ts';

const o = JSON.parse(process.env.BIANBU_CRASH_RESTORE ?? '{}') as {
  dir: string;
  target: string;
  at: string;
  /** An older epoch's snapshot: restored with restoreFrom. */
  epoch?: number;
};
const disk = new BoardDisk(o.dir);
const hook = (step: string) => {
  if (step !== o.at) return;
  process.stdout.write(`AT ${step}\n`);
  // Stays here (a blocking wait: no event turn lets the restore go on) until killed.
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
};
if (o.epoch === undefined) await disk.restore(o.target, hook);
else await disk.restoreFrom(o.epoch, o.target, hook);
process.stdout.write('DONE\n');
