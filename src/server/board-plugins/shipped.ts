// Plugins the service ships (./shipped/), installed into the lab's plugins directory on every start, so
// a fresh install has them and an upgrade brings their new version. A shipped file carries a marker
// line (`# bianbu-shipped-plugin <name> <version>`) on its second line: a file of that name without the
// marker is the administrator's own and is left alone; one with it is replaced when it differs. Each
// write goes to a temporary file in the same directory, then is renamed over the name (atomic).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const SHIPPED_DIR = path.join(import.meta.dirname, 'shipped');
const MARKER = /^# bianbu-shipped-plugin [A-Za-z0-9._-]+ \S+$/m;

/** The plugins the service ships, by name. */
export function shippedPlugins(): string[] {
  try {
    return fs
      .readdirSync(SHIPPED_DIR)
      .filter((n) => /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(n))
      .sort();
  } catch {
    return [];
  }
}

function isShipped(text: string): boolean {
  // Only the head of the file: a marker further down (quoted in a comment, say) does not count.
  return MARKER.test(text.split('\n').slice(0, 3).join('\n'));
}

/**
 * Installs or updates the shipped plugins in `dir` (created if missing). Answers what it did per name:
 * `installed`, `updated`, `current`, or `kept` (the administrator's own file of that name).
 */
export function installShippedPlugins(
  dir: string,
): Record<string, 'installed' | 'updated' | 'current' | 'kept'> {
  fs.mkdirSync(dir, { recursive: true });
  const done: Record<string, 'installed' | 'updated' | 'current' | 'kept'> = {};
  for (const name of shippedPlugins()) {
    const body = fs.readFileSync(path.join(SHIPPED_DIR, name));
    const target = path.join(dir, name);
    let existing: Buffer | null = null;
    try {
      // lstat: a link or a directory of that name is the administrator's, never followed.
      const st = fs.lstatSync(target);
      existing = st.isFile() ? fs.readFileSync(target) : Buffer.from('');
    } catch {}
    if (existing !== null) {
      if (!isShipped(existing.toString('utf8'))) {
        done[name] = 'kept';
        continue;
      }
      if (existing.equals(body) && (fs.statSync(target).mode & 0o777) === 0o755) {
        done[name] = 'current';
        continue;
      }
    }
    const tmp = path.join(dir, `.${name}.${crypto.randomBytes(6).toString('hex')}.tmp`);
    try {
      fs.writeFileSync(tmp, body, { mode: 0o755, flag: 'wx' });
      fs.chmodSync(tmp, 0o755); // the process umask (077) would leave it unreadable inside boards
      fs.renameSync(tmp, target);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw err;
    }
    done[name] = existing === null ? 'installed' : 'updated';
  }
  return done;
}
