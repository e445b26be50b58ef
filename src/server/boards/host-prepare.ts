// What a process that runs boards does first on its machine (the service with its own boards, or a
// board host): say how local boards are isolated here, and clean up what killed processes left —
// board mounts, cgroups, abandoned uid slots (local/recovery.ts) and riscv64 boards' network rules
// (qemu/firewall.ts) — before any board of this process claims a slot.
import fs from 'node:fs';
import path from 'node:path';
import { hostSupport } from './local/host-support.ts';
import { DEFAULT_RUN_DIR } from './local/local-driver.ts';
import { sweepHost } from './local/recovery.ts';
import {
  DEFAULT_SLOT_REGISTRY,
  SLOT_SIZE,
  slotHolder,
  UID_BASE,
  withRegistryLock,
} from './local/uid-slots.ts';
import { hostFirewall } from './qemu/firewall.ts';

export interface PrepareLog {
  info(extra: Record<string, unknown>, msg: string): void;
  warn(extra: Record<string, unknown>, msg: string): void;
}

export async function prepareBoardsHost(o: {
  /** Where this process keeps its boards (`<data>/boards`): their rules are applied again as they start. */
  boardsDir: string;
  allowUnsandboxed: boolean;
  log: PrepareLog;
}): Promise<void> {
  const host = hostSupport();
  if (!host.userns) {
    o.log.warn(
      { missing: host.missing },
      o.allowUnsandboxed
        ? 'local boards cannot be isolated on this host: they run UNSANDBOXED as BIANBU_ALLOW_UNSANDBOXED asks'
        : 'local boards cannot be isolated on this host and are not run (install bubblewrap and run the service as root, or set BIANBU_ALLOW_UNSANDBOXED=1)',
    );
    return;
  }
  if (host.missing.length) {
    for (const m of host.missing) o.log.warn({}, `local boards: limit not enforced here — ${m}`);
  } else {
    o.log.info(
      {},
      'local boards: own user namespace and host uid range each; memory, process and CPU limits by cgroups; disk limit by ext4 images',
    );
  }
  const swept = await sweepHost({
    runDir: DEFAULT_RUN_DIR,
    registry: DEFAULT_SLOT_REGISTRY,
    cgroups: host.cgroups,
    log: (msg, extra) => o.log.warn(extra ?? {}, msg),
  }).catch((err: Error) => {
    o.log.warn({ err: err.message }, 'could not sweep what killed instances left');
    return null;
  });
  if (swept && (swept.slots.length || swept.cgroups.length))
    o.log.info(
      swept as unknown as Record<string, unknown>,
      'cleaned what killed instances left: board mounts and cgroups',
    );
  await sweepNetworkRules(o.boardsDir, o.log);
}

/**
 * The rules of boards no process holds any more (a killed one's): the uid's slot is free, its holder
 * directory gone, or it is one of this process's own boards, which apply theirs again as they start.
 * Under the slot registry's lock, so a slot another process claims now is never swept.
 */
async function sweepNetworkRules(boardsDir: string, log: PrepareLog): Promise<void> {
  const fw = hostFirewall;
  if (await fw.unavailable()) return;
  const registry = DEFAULT_SLOT_REGISTRY;
  const own = `${path.resolve(boardsDir)}${path.sep}`;
  try {
    if (!fs.existsSync(registry)) fs.mkdirSync(registry, { recursive: true, mode: 0o700 });
    const gone = await withRegistryLock(registry, () =>
      fw.sweep((uid) => {
        const off = uid - UID_BASE;
        if (off < 0 || off % SLOT_SIZE !== 0) return true;
        const holder = slotHolder(registry, off / SLOT_SIZE);
        return holder === null || !fs.existsSync(holder) || path.resolve(holder).startsWith(own);
      }),
    );
    if (gone.length) log.info({ uids: gone }, "removed boards' network rules a killed service left");
  } catch (err) {
    log.warn({ err: (err as Error).message }, "could not sweep boards' network rules");
  }
}
