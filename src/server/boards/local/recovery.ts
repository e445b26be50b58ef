// What a service killed without a clean stop (SIGKILL, a crash, a power cut of the service alone)
// leaves on the host, found and cleaned by the next instance — whichever data directory it runs on:
//
//   <runDir>/<slot>/root      the board's disk image still mounted (the image may be deleted with
//                             its data directory; its loop device stays attached while mounted)
//   <runDir>/<slot>/plugins   a read-only bind of the old plugins directory (possibly deleted too)
//   <cgroup>/bianbu-boards/<board>-<slot>   the board's cgroups, maybe with processes in them
//
// A slot is the dead instance's only when the uid-slot registry says its holder (a board directory)
// no longer exists, or names no holder at all: a slot whose holder directory still exists belongs
// to an instance that may be running (or will restart on it), and is left alone. Everything here runs
// under the registry's lock (uid-slots.ts), so a slot another instance is claiming at that moment is
// never swept beneath it. Nothing here follows a link or resolves a path a board controls: slot
// directories are the service's own (root-owned parents), mounts are found in mountinfo and
// unmounted by their mount point, and a directory is removed only once nothing is mounted under it.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { unOctal } from './disk.ts';
import type { HostSupport } from './host-support.ts';
import { slotHolder, withRegistryLock } from './uid-slots.ts';

const run = promisify(execFile);
const TOOL_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };


/** Mount points at or below `dir` in this process's mount table, deepest (and latest) first. */
export function mountsUnder(dir: string): string[] {
  let text = '';
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  try {
    dir = fs.realpathSync(dir);
  } catch {
    return [];
  }
  const prefix = `${dir.replace(/\/+$/, '')}/`;
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 5) continue;
    const at = unOctal(f[4]);
    if (at === dir || at.startsWith(prefix)) out.push(at);
  }
  return out.reverse().sort((a, b) => b.split('/').length - a.split('/').length);
}

/**
 * Unmounts everything mounted at or below `dir` (stacked mounts one by one). A mount that stays
 * busy is detached lazily: nothing new can reach it, and the kernel frees it with its last user.
 */
export async function unmountAll(dir: string): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const mounts = mountsUnder(dir);
    if (!mounts.length) return;
    for (const m of mounts) {
      await run('umount', [m], { env: TOOL_ENV, timeout: 60_000 }).catch(() =>
        round >= 3 ? run('umount', ['-l', m], { env: TOOL_ENV, timeout: 60_000 }).catch(() => {}) : undefined,
      );
    }
  }
}

/** Kills every process of a board's cgroup and removes it (v1: per controller; v2: one directory). */
export async function removeCgroup(dir: string): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    // cgroup v2 kills the whole group at once; on v1 the members are killed until none is left
    // (a fork bomb's children appear while their parents are killed, so this repeats).
    try {
      fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
    } catch {}
    let pids: string[] = [];
    try {
      pids = fs.readFileSync(path.join(dir, 'cgroup.procs'), 'latin1').split('\n').filter(Boolean);
    } catch {
      return !fs.existsSync(dir);
    }
    for (const p of pids) {
      try {
        process.kill(Number(p), 'SIGKILL');
      } catch {}
    }
    try {
      fs.rmdirSync(dir);
      return true;
    } catch {}
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

export interface SweepInit {
  runDir: string;
  registry: string;
  cgroups: HostSupport['cgroups'];
  log?: (msg: string, extra?: Record<string, unknown>) => void;
}

/** Whether a slot is nobody's live holding: no registry entry, or a holder directory that is gone. */
function abandoned(registry: string, slot: number): boolean {
  const holder = slotHolder(registry, slot);
  return holder === null || !fs.existsSync(holder);
}

/**
 * Cleans what killed instances left on this host (see the top of this file). Answers what it removed,
 * for the start log.
 */
export async function sweepHost(init: SweepInit): Promise<{ slots: number[]; cgroups: string[] }> {
  const swept = { slots: [] as number[], cgroups: [] as string[] };
  if (!fs.existsSync(init.registry)) fs.mkdirSync(init.registry, { recursive: true, mode: 0o700 });
  return withRegistryLock(init.registry, async () => {
    let names: string[] = [];
    try {
      names = fs.readdirSync(init.runDir);
    } catch {}
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      const slot = Number(name);
      if (!abandoned(init.registry, slot)) continue;
      const dir = path.join(init.runDir, name);
      const st = fs.lstatSync(dir, { throwIfNoEntry: false });
      if (!st?.isDirectory()) continue;
      await unmountAll(dir);
      if (mountsUnder(dir).length) {
        init.log?.('a killed instance left a mount that would not go', { slot, dir });
        continue;
      }
      // Only now, with nothing mounted below it, is the directory plain leftovers (empty mount points).
      fs.rmSync(dir, { recursive: true, force: true });
      const file = path.join(init.registry, name);
      if (slotHolder(init.registry, slot) !== null) fs.rmSync(file, { force: true });
      swept.slots.push(slot);
    }
    const seen = new Set<string>();
    for (const c of Object.values(init.cgroups)) {
      if (!c || seen.has(c.base)) continue;
      seen.add(c.base);
      let groups: string[] = [];
      try {
        groups = fs
          .readdirSync(c.base, { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .map((e) => e.name);
      } catch {}
      for (const g of groups) {
        const m = /-(\d+)$/.exec(g);
        if (!m || !abandoned(init.registry, Number(m[1]))) continue;
        if (await removeCgroup(path.join(c.base, g)))
          swept.cgroups.push(`${path.basename(path.dirname(c.base))}/${g}`);
      }
    }
    return swept;
  });
}
