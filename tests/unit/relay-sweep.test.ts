// A killed service leaves its WebSocket relay's directory in the temporary directory (its 'exit'
// handler never ran); the next relay's start sweeps such directories, and only those.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sweepDeadRelays } from '#server/boards/local/pty-host/relay.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-test-sweep-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function relayDir(name: string): string {
  const dir = path.join(tmp, `bianbu-relay-${name}`);
  fs.mkdirSync(dir);
  return dir;
}

/** Dates the directory `ageMs` back (after its contents are made: they change its time). */
function age(dir: string, ageMs: number): void {
  const t = (Date.now() - ageMs) / 1000;
  fs.utimesSync(dir, t, t);
}

describe('sweeping dead relays', () => {
  it('removes an old directory whose socket nobody listens on, keeps a live or young one', async () => {
    const dead = relayDir('dead');
    fs.writeFileSync(path.join(dead, 'relay.sock'), '');
    const empty = relayDir('empty');
    const live = relayDir('live');
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => server.listen(path.join(live, 'relay.sock'), r));
    for (const d of [dead, empty, live]) age(d, 5 * 60_000);
    const young = relayDir('young');
    const other = path.join(tmp, 'bianbu-net-old');
    fs.mkdirSync(other);
    try {
      const swept = await sweepDeadRelays(tmp);
      expect(swept.sort()).toEqual([dead, empty].sort());
      expect(fs.existsSync(dead)).toBe(false);
      expect(fs.existsSync(empty)).toBe(false);
      expect(fs.existsSync(live)).toBe(true);
      expect(fs.existsSync(young)).toBe(true);
      expect(fs.existsSync(other)).toBe(true);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('follows no link: a link named like a relay directory is left, its target untouched', async () => {
    const target = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-test-target-'));
    fs.writeFileSync(path.join(target, 'keep'), 'x');
    const link = path.join(tmp, 'bianbu-relay-link');
    fs.symlinkSync(target, link);
    try {
      await sweepDeadRelays(tmp, 0);
      expect(fs.readFileSync(path.join(target, 'keep'), 'utf8')).toBe('x');
      expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    } finally {
      fs.rmSync(target, { recursive: true, force: true });
    }
  });
});
