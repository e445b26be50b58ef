// A riscv64 board's snapshots (snapshot-disk.ts; docs/riscv-snapshots.md): QEMU's internal snapshots
// of the disk's overlay while the machine runs, the overlay file's while it is off, older epochs
// (disks a flash replaced) from their own files.
import { type BoardSnapshots, DriverError } from '../driver.ts';
import { DISK_NODE, type Machine } from './machine.ts';
import type { BoardDisk } from './snapshot-disk.ts';

export interface SnapshotHost {
  disk: BoardDisk;
  machine: () => Machine | null;
  stopped: () => boolean;
  /** Best effort: the guest writes its page cache out before a snapshot. */
  guestSync: () => Promise<void>;
  /** Which image the disk holds after a restore, for the catalogue. */
  readImageTag: () => void;
}

export function qemuSnapshots(h: SnapshotHost): BoardSnapshots {
  const disk = h.disk;
  /** The current epoch's user snapshots: from QEMU while it runs (it writes the table), else the file. */
  const currentSnapshots = async (): Promise<{ name: string; createdAt: Date }[]> => {
    const machine = h.machine();
    if (!machine?.running) return disk.snapshots();
    const nodes = await machine.query<
      { 'node-name'?: string; image?: { snapshots?: { name: string; 'date-sec': number }[] } }[]
    >('query-named-block-nodes', { flat: true });
    const node = nodes.find((n) => n['node-name'] === DISK_NODE);
    return (node?.image?.snapshots ?? [])
      .filter((x) => !x.name.startsWith('_bianbu_'))
      .map((x) => ({ name: x.name, createdAt: new Date(x['date-sec'] * 1000) }));
  };
  return {
    list: async () => disk.everySnapshot(await currentSnapshots()),
    save: (name) =>
      disk.exclusive(async () => {
        if ((await disk.allSnapshots()).some((x) => x.name === name) || (await disk.epochOf(name)) !== null)
          throw new DriverError('snapshot.name_taken', `The board has a snapshot named ${name}`);
        const machine = h.machine();
        if (!machine?.running) return disk.create(name);
        await h.guestSync();
        await machine.query('blockdev-snapshot-internal-sync', { device: DISK_NODE, name }, 60_000);
      }),
    restore: (name) =>
      disk.exclusive(async () => {
        const epoch = await disk.epochOf(name);
        if (epoch === null) throw new DriverError('snapshot.not_found', `No snapshot named ${name}`);
        await h.machine()?.powerOff();
        try {
          if (epoch === disk.currentEpoch()) await disk.restore(name);
          else await disk.restoreFrom(epoch, name);
        } finally {
          // The board boots again either way: into the snapshot, or (a failure) as it was.
          h.readImageTag();
          if (!h.stopped()) await h.machine()?.powerOn();
        }
      }),
    remove: (name) =>
      disk.exclusive(async () => {
        const epoch = await disk.epochOf(name);
        if (epoch === null) throw new DriverError('snapshot.not_found', `No snapshot named ${name}`);
        if (epoch !== disk.currentEpoch()) return disk.removeIn(epoch, name);
        const machine = h.machine();
        if (machine?.running)
          await machine.query('blockdev-snapshot-delete-internal-sync', { device: DISK_NODE, name }, 60_000);
        else await disk.remove(name);
      }),
    exportRaw: (name, out) =>
      disk.exclusive(async () => {
        const epoch = await disk.epochOf(name);
        if (epoch === null) throw new DriverError('snapshot.not_found', `No snapshot named ${name}`);
        await disk.exportRaw(name, out, epoch === disk.currentEpoch() ? disk.dir : disk.epochDir(epoch));
      }),
    chargedBytes: async () => disk.chargedBytes(await currentSnapshots()),
    diskBytes: async () => disk.allocatedBytes(),
  };
}
