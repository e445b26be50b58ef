// The `bianbu` cli as a script would run it: a real process against the real service on a socket,
// with an API key as its credential.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_DURATIONS } from '#shared/constants.ts';
import { issueCredential } from '#server/auth/tokens.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser } from './helpers/users.ts';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('the bianbu cli', () => {
  let t: TestApp;
  let url: string;
  let key: string;
  let cfgDir: string;

  const bianbu = (args: string[], env: Record<string, string> = {}) =>
    new Promise<Run>((resolve) => {
      const child = spawn(process.execPath, ['bin/bianbu.mjs', ...args], {
        env: {
          ...process.env,
          BIANBU_URL: url,
          BIANBU_API_KEY: key,
          BIANBU_CLI_CONFIG: path.join(cfgDir, 'cli.json'),
          ...env,
        },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });

  beforeAll(async () => {
    t = await makeTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.server.address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const user = await makeUser(t.app, { username: 'scripter' });
    key = await issueCredential(t.app.storage.db, user.id, 'apikey');
    cfgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-cli-'));
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(cfgDir, { recursive: true, force: true });
  });

  it('lists every call of the contract', async () => {
    const r = await bianbu(['calls']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/requestDevice\s+POST\s+\/api\/device\/request-device/);
    expect(r.stdout).toMatch(/renewalDevice\s+POST\s+\/api\/device\/renewal-device/);
  });

  it('leases a board, sees it in the lease list, and releases it, with an API key', async () => {
    const end = new Date(Date.now() + LEASE_DURATIONS[0].ms).toISOString();
    const req = await bianbu(['call', 'requestDevice', '--json', JSON.stringify({ requestDate: end, filterReq: {}, serverName: 'ci-board' })]);
    expect(req.stderr).toBe('');
    expect(req.code).toBe(0);
    const lease = JSON.parse(req.stdout) as { deviceId: string; serverName: string };
    expect(lease.serverName).toBe('ci-board');

    const list = await bianbu(['call', 'fetchRequestDevice']);
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as { items: { serverName: string }[] }).items.map((i) => i.serverName)).toEqual(['ci-board']);

    const unlock = await bianbu(['call', 'unlockRequestDevice', `deviceId=${lease.deviceId}`, 'serverName=ci-board']);
    expect(unlock.code).toBe(0);
    const after = await bianbu(['call', 'fetchRequestDevice']);
    expect((JSON.parse(after.stdout) as { items: unknown[] }).items).toEqual([]);
  });

  it('refuses a bad payload before sending it, naming the field', async () => {
    const r = await bianbu(['call', 'renameRequestDevice', 'deviceId=x', 'oldServerName=a']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/bianbu: invalid newServerName/);
  });

  it('says why when the key is not valid', async () => {
    const r = await bianbu(['call', 'fetchRequestDevice'], { BIANBU_API_KEY: 'bbk_not-a-key' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Illegal token \(auth\.token_illegal\)/);
  });

  it('saves the service and key with login, readable only by its owner', async () => {
    const r = await bianbu(['login', '--url', url, '--key', key], { BIANBU_API_KEY: '', BIANBU_URL: '' });
    expect(r.stdout).toContain('as scripter');
    const file = path.join(cfgDir, 'cli.json');
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ url, key });
    expect(fs.statSync(file).mode & 0o077).toBe(0);
  });
});
