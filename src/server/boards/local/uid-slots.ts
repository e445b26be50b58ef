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
import fs from 'node:fs';
import path from 'node:path';

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

function claim(registry: string, slot: number, owner: string): boolean {
  const file = path.join(registry, String(slot));
  try {
    fs.writeFileSync(file, `${owner}\n`, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const holder = readText(file);
  if (holder === owner) return true;
  if (holder && fs.existsSync(holder)) return false;
  // Stale: its board directory is gone. Remove and claim with O_EXCL, so of two takers one wins.
  try {
    fs.unlinkSync(file);
  } catch {}
  try {
    fs.writeFileSync(file, `${owner}\n`, { flag: 'wx', mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

/** The board's slot: the one it had (recorded in `<boardDir>/uid-slot`) when still its own, else a free one. */
export function claimIdentity(boardDir: string, registry = DEFAULT_SLOT_REGISTRY): BoardIdentity {
  fs.mkdirSync(registry, { recursive: true, mode: 0o700 });
  const owner = fs.realpathSync(boardDir);
  const recorded = readText(path.join(boardDir, 'uid-slot'));
  const previous = recorded !== null && /^\d+$/.test(recorded) ? Number(recorded) : null;
  if (previous !== null && previous < MAX_SLOTS && claim(registry, previous, owner)) {
    return { slot: previous, base: UID_BASE + previous * SLOT_SIZE, previousBase: null };
  }
  for (let slot = 0; slot < MAX_SLOTS; slot++) {
    if (!claim(registry, slot, owner)) continue;
    fs.writeFileSync(path.join(boardDir, 'uid-slot'), `${slot}\n`, { mode: 0o600 });
    return { slot, base: UID_BASE + slot * SLOT_SIZE, previousBase: previous === null ? null : UID_BASE + previous * SLOT_SIZE };
  }
  throw new Error('No free uid range for another local board');
}

/** Gives the slot back (the board was deleted). */
export function releaseIdentity(boardDir: string, slot: number, registry = DEFAULT_SLOT_REGISTRY): void {
  const file = path.join(registry, String(slot));
  try {
    if (readText(file) === fs.realpathSync(boardDir)) fs.unlinkSync(file);
  } catch {}
}

/**
 * Moves the owners of a tree no board can see yet (a fresh root, an unpacked image) into the board's
 * range: uid u becomes base+u; ids outside 0..65535 become the range's `nobody`. Links are not
 * followed (lchown), and the walk never leaves the tree's filesystem.
 */
export function shiftOwnership(dir: string, base: number, from = 0): void {
  const map = (id: number) => {
    const inner = id - from;
    return base + (inner >= 0 && inner < SLOT_SIZE ? inner : 65534);
  };
  const walk = (p: string, dev: number) => {
    const st = fs.lstatSync(p);
    if (st.dev !== dev) return;
    fs.lchownSync(p, map(st.uid), map(st.gid));
    // chown clears set-id bits; put them back (the board may own set-id programs of its own).
    if (!st.isSymbolicLink() && st.mode & 0o6000) fs.chmodSync(p, st.mode & 0o7777);
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name), dev);
  };
  walk(dir, fs.lstatSync(dir).dev);
}
