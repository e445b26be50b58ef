// Host identities of local boards. Each board owns a range of 65,536 host uids and gids (a "slot"),
// mapped to 0..65535 inside its user namespace: root inside is the first uid of the range, `user`
// (1000) is base+1000, and package managers that switch to their own users (apt's `_apt`) work. No
// two boards on this host share a range, even boards of different data directories (test runs, a
// second instance): slots are claimed in a host-wide registry, one file per slot naming the board
// directory that holds it. A slot whose board directory no longer exists is taken over.
//
// Why a range and not one uid per board: a single mapped uid makes every other uid inside the board
// unmapped, so `chown user`, `su user` and apt's privilege drop fail; a range costs nothing (the uids
// are above anything /etc/subuid hands out by convention) and keeps boards ordinary Linux systems.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { at, openEntry, walkTree } from './tree.ts';

export const UID_BASE = 1_000_000_000;
export const SLOT_SIZE = 65_536;
const MAX_SLOTS = Math.floor((4_294_967_294 - UID_BASE) / SLOT_SIZE);
export const DEFAULT_SLOT_REGISTRY = '/var/lib/bianbu/uid-slots';

export interface BoardIdentity {
  slot: number;
  /** Host uid (and gid) of root inside the board. */
  base: number;
  /** The base of the slot the board had before, when it had to get a new one (its files need shifting). */
  previousBase: number | null;
}

function readText(p: string): string | null {
  try {
    return fs.readFileSync(p, 'utf8').trim();
  } catch {
    return null;
  }
}

/**
 * Runs `fn` holding the registry's lock: an abstract Unix socket named after the registry, bound by
 * one process at a time (the kernel refuses a second bind with EADDRINUSE) and released by the
 * kernel when its holder closes it or dies, so a killed service never leaves the lock held. Every
 * read-decide-write on the registry happens under it: two instances that start at the same moment
 * never both take over the same stale slot.
 */
export async function withRegistryLock<T>(registry: string, fn: () => T | Promise<T>): Promise<T> {
  const key = crypto.createHash('sha256').update(fs.realpathSync(registry)).digest('hex').slice(0, 24);
  const name = `\0bianbu-uid-slots-${key}`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  let server: net.Server;
  for (;;) {
    server = net.createServer();
    const s = server;
    const bound = await new Promise<boolean>((resolve, reject) => {
      s.once('error', (err: NodeJS.ErrnoException) =>
        err.code === 'EADDRINUSE' ? resolve(false) : reject(err),
      );
      s.listen({ path: name }, () => resolve(true));
    });
    if (bound) break;
    if (Date.now() > deadline) throw new Error('The uid slot registry stayed locked by another service');
    await new Promise((r) => setTimeout(r, 2 + Math.random() * 8));
  }
  try {
    return await fn();
  } finally {
    await new Promise((r) => server.close(r));
  }
}

const LOCK_WAIT_MS = 30_000;

/** The board directory a slot's file names, or null when the slot is free (no file). */
export function slotHolder(registry: string, slot: number): string | null {
  return readText(path.join(registry, String(slot)));
}

/** Whether the slot's holder is gone (its board directory no longer exists). Call under the lock. */
export function slotStale(registry: string, slot: number): boolean {
  const holder = slotHolder(registry, slot);
  return holder !== null && !fs.existsSync(holder);
}

/** Claims `slot` for `owner` (a board directory). Call under the registry lock. */
function claim(registry: string, slot: number, owner: string): boolean {
  const file = path.join(registry, String(slot));
  const holder = readText(file);
  if (holder === owner) return true;
  if (holder && fs.existsSync(holder)) return false;
  // Free, or stale (its board directory is gone): written whole under a temporary name, then renamed.
  const tmp = `${file}.claim-${process.pid}`;
  fs.writeFileSync(tmp, `${owner}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
  return true;
}

/** The board's slot: the one it had (recorded in `<boardDir>/uid-slot`) when still its own, else a free one. */
export async function claimIdentity(
  boardDir: string,
  registry = DEFAULT_SLOT_REGISTRY,
): Promise<BoardIdentity> {
  fs.mkdirSync(registry, { recursive: true, mode: 0o700 });
  const owner = fs.realpathSync(boardDir);
  const recorded = readText(path.join(boardDir, 'uid-slot'));
  const previous = recorded !== null && /^\d+$/.test(recorded) ? Number(recorded) : null;
  return withRegistryLock(registry, () => {
    if (previous !== null && previous < MAX_SLOTS && claim(registry, previous, owner)) {
      return { slot: previous, base: UID_BASE + previous * SLOT_SIZE, previousBase: null };
    }
    for (let slot = 0; slot < MAX_SLOTS; slot++) {
      if (!claim(registry, slot, owner)) continue;
      fs.writeFileSync(path.join(boardDir, 'uid-slot'), `${slot}\n`, { mode: 0o600 });
      return {
        slot,
        base: UID_BASE + slot * SLOT_SIZE,
        previousBase: previous === null ? null : UID_BASE + previous * SLOT_SIZE,
      };
    }
    throw new Error('No free uid range for another local board');
  });
}

/** Gives the slot back (the board was deleted). */
export function releaseIdentity(boardDir: string, slot: number, registry = DEFAULT_SLOT_REGISTRY): void {
  const file = path.join(registry, String(slot));
  try {
    if (readText(file) === fs.realpathSync(boardDir)) fs.unlinkSync(file);
  } catch {}
}

/**
 * Moves the owners of a tree no board process runs on (a fresh root, an unpacked image, a board's
 * root while it is down) into the board's range: uid u becomes base+u; ids outside 0..65535 become
 * the range's `nobody`. A descriptor walk (tree.ts): links are changed as links, never followed, and
 * the walk never leaves the tree's file system.
 */
export function shiftOwnership(dir: string, base: number, from = 0): void {
  const map = (id: number) => {
    const inner = id - from;
    return base + (inner >= 0 && inner < SLOT_SIZE ? inner : 65534);
  };
  walkTree(dir, ({ st, fd, parentFd, name }) => {
    if (fd !== null) {
      fs.fchownSync(fd, map(st.uid), map(st.gid));
      // chown clears set-id bits; put them back (the board may own set-id directories of its own).
      if (st.mode & 0o6000) fs.fchmodSync(fd, st.mode & 0o7777);
      return;
    }
    if (parentFd === null) return;
    fs.lchownSync(at(parentFd, name), map(st.uid), map(st.gid));
    if (st.isFile() && st.mode & 0o6000) {
      const f = openEntry(parentFd, name, st.ino);
      if (f === null) return;
      try {
        fs.fchmodSync(f, st.mode & 0o7777);
      } finally {
        fs.closeSync(f);
      }
    }
  });
}
