// The WebSocket relay (relay.c) reads what clients send, and clients are not to be trusted: its frame
// reader and its look at STOMP frames run here under AddressSanitizer and UndefinedBehaviorSanitizer
// on random and mutated frames delivered in random pieces (the harness is relay.c's RELAY_FUZZ main).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-fuzz-'));
const sources = ['relay.c', 'relay-view.c'].map((f) => path.resolve('src/server/boards/local/pty-host', f));

describe('the WebSocket relay reading hostile clients', () => {
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads 10,000 rounds of random and mutated frames without a fault, taking the valid keystrokes', async () => {
    const bin = path.join(dir, 'relay-fuzz');
    await run(
      process.env.CC || 'cc',
      [
        '-O1',
        '-g',
        '-fsanitize=address,undefined',
        '-fno-sanitize-recover=all',
        '-DRELAY_FUZZ',
        '-o',
        bin,
        ...sources,
      ],
      { timeout: 120_000 },
    );
    const { stdout } = await run(bin, ['10000'], {
      timeout: 120_000,
      env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=0' },
    });
    const m = /^ok 10000 rounds, (\d+) keystroke frames taken/.exec(stdout);
    expect(m, stdout).not.toBeNull();
    // The seeds include valid SENDs to the served view: some survive the mutations and are typed.
    expect(Number(m?.[1])).toBeGreaterThan(100);
  }, 180_000);
});
