// `bianbu seq` as a script uses it: the real CLI binary as a subprocess against a real service with
// real local boards. A bad file is named FILE:LINE:COLUMN and nothing is saved; a run on several
// boards exits 0 only when all succeeded; log and runs read it back; SIGINT while waiting cancels.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCredential } from '#server/auth/tokens.ts';
import type { SequenceRunDto } from '#shared/sequences.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { BIN, type CliEnv, runCli } from './helpers/cli-run.ts';
import { makeUser } from './helpers/users.ts';
import { call, endIn, H48 } from './leases.fixtures.ts';

describe('bianbu seq', () => {
  let t: TestApp;
  let env: CliEnv;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-cli-seq-'));
  const umask = process.umask(0o077);
  const bianbu = (args: string[], opts?: Parameters<typeof runCli>[2]) => runCli(env, args, opts);
  const file = (name: string, text: string) => {
    const p = path.join(work, name);
    fs.writeFileSync(p, text);
    return p;
  };

  beforeAll(async () => {
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(
      labFile,
      JSON.stringify({
        boards: ['a', 'b'].map((n) => ({
          id: `cs-${n}`,
          name: `cs-${n}`,
          model: 'K1',
          attributes: { slot: n },
          driver: 'local',
          options: { memoryMb: 256, diskQuotaMb: 64, maxProcesses: 256 },
        })),
      }),
    );
    t = await makeTestApp({
      env: {
        BIANBU_LAB_FILE: labFile,
        BIANBU_LEASE_TICK_MS: '0',
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const user = await makeUser(t.app, { username: 'sequencer' });
    for (const slot of ['a', 'b']) {
      const lease = await call(t.app, user, 'POST', '/api/device/request-device', {
        requestDate: endIn(new Date(), H48),
        filterReq: { slot },
        serverName: `cs-${slot}`,
      });
      expect(lease.code, JSON.stringify(lease)).toBe(20000);
    }
    const key = await issueCredential(t.app.storage.db, user.id, 'apikey');
    env = { url, key, configFile: path.join(work, 'cli.json') };
  }, 120_000);
  afterAll(async () => {
    process.umask(umask);
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('names a bad file’s problem as FILE:LINE:COLUMN, exits 2 and saves nothing', async () => {
    const bad = file('bad.yaml', 'steps:\n  - exec: ls\n  - renew: 3d\n');
    const r = await bianbu(['seq', 'import', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`${bad}:3:\\d+: .*\\(sequence\\.invalid\\)`));
    const list = await bianbu(['seq', 'list', '--json']);
    expect(JSON.parse(list.stdout).items).toEqual([]);
  });

  it('imports, lists and exports a file as written', async () => {
    const text = 'description: smoke\nsteps:\n  - exec: echo seq-$((2*21)); hostname\n';
    const r = await bianbu(['seq', 'import', file('smoke.yaml', text)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('saved smoke: 1 steps');
    const list = JSON.parse((await bianbu(['seq', 'list', '--json'])).stdout);
    expect(list.items).toEqual([
      expect.objectContaining({ name: 'smoke', description: 'smoke', mine: true }),
    ]);
    const out = await bianbu(['seq', 'export', 'smoke']);
    expect(out.stdout).toBe(text);
    // From standard input, named on the command line.
    const piped = await bianbu(['seq', 'import', '-', '--name', 'fails'], {
      stdin: '{"on-failure": "continue", "steps": [{"exec": "exit 4"}, {"exec": "echo after"}]}',
    });
    expect(piped.code, piped.stderr).toBe(0);
  });

  it('runs on two boards and waits: exit 0 only when all succeeded, the board’s status otherwise', async () => {
    const ok = await bianbu(['seq', 'run', 'smoke', 'cs-*', '--wait', '--json'], { timeoutMs: 90_000 });
    expect(ok.code, ok.stderr).toBe(0);
    const run = JSON.parse(ok.stdout) as SequenceRunDto;
    expect(run.state).toBe('success');
    expect(run.boards.map((b) => b.serverName).sort()).toEqual(['cs-a', 'cs-b']);
    for (const b of run.boards) expect(b.steps[0].output).toContain('seq-42');

    const one = await bianbu(['seq', 'run', 'fails', 'cs-a', '--wait'], { timeoutMs: 90_000 });
    expect(one.code).toBe(6);
    expect(one.stderr).toMatch(/cs-a: failure at "exec exit 4": exit 4 \(sequence\.exec_status\)/);
    const two = await bianbu(['seq', 'run', 'fails', 'cs-a', 'cs-b', '--wait', '--quiet'], {
      timeoutMs: 90_000,
    });
    expect(two.code).toBe(1);

    const runs = JSON.parse((await bianbu(['seq', 'runs', '--json'])).stdout).items as SequenceRunDto[];
    expect(runs.map((r) => r.sequenceName).slice(0, 3)).toEqual(['fails', 'fails', 'smoke']);
    const log = await bianbu(['seq', 'log', runs[2].runId.slice(0, 8)]);
    expect(log.code).toBe(0);
    expect(log.stdout).toMatch(/cs-a \(success\)\n {2}✓ exec echo seq-\$\(\(2\*21\)\); hostname/);
    expect(log.stdout).toContain('    | seq-42');

    const unknown = await bianbu(['seq', 'run', 'smoke', 'nope', '--wait']);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toContain('sequence.target_unknown');
    const noSeq = await bianbu(['seq', 'run', 'nope', 'cs-a']);
    expect(noSeq.code).toBe(4);
  }, 200_000);

  it('cancels the run on SIGINT while waiting (no terminal: at once) and exits 130', async () => {
    expect(
      (await bianbu(['seq', 'import', file('long.yaml', 'steps:\n  - wait: 600\n  - exec: echo never\n')]))
        .code,
    ).toBe(0);
    const child = spawn(process.execPath, [BIN, 'seq', 'run', 'long', 'cs-a', '--wait', '--json'], {
      env: {
        ...process.env,
        BIANBU_URL: env.url,
        BIANBU_API_KEY: env.key,
        BIANBU_CLI_CONFIG: env.configFile,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    // Started once the service holds a running run of it.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [running] = await t.app.storage.query<{ n: number }>(
        `select count(*)::int as n from sequence_runs where sequence_name = 'long' and state = 'running'`,
      );
      if (running.n > 0) break;
      if (Date.now() > deadline) throw new Error(`no run started: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(code, stderr).toBe(130);
    const run = JSON.parse(stdout) as SequenceRunDto;
    expect(run.state).toBe('cancelled');
    expect(run.boards[0].steps.map((s) => s.state)).toEqual(['cancelled', 'cancelled']);
  }, 60_000);
});
