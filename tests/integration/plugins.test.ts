// Board plugins: the shipped `board-info` plugin installed on a fresh start and answering facts read on
// the board itself (compared with what a shell of the same board says), an administrator's own file of
// that name left alone, and a plugin that reads stdin getting end of file at once on a sandbox board and
// on an ssh board (before, it waited on an open pipe until the call's timeout killed it).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installShippedPlugins, shippedPlugins } from '#server/board-plugins/shipped.ts';
import type { PtyHandle } from '#server/boards/driver.ts';
import { SshDriver } from '#server/boards/ssh/ssh-driver.ts';
import { driverLookup } from '#server/shells/shells.routes.ts';
import { sshDriverOptions } from '#shared/boards.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { runInBoard } from './helpers/in-board.ts';
import { startSshd, type TestSshd } from './helpers/sshd.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

/** Reads stdin to its end, then answers: it hangs for as long as stdin stays open. */
const READS_STDIN = '#!/bin/sh\nn=$(cat | wc -c)\necho "stdin-closed:$n"\n';

describe('plugins on a sandbox board, through the service', () => {
  let t: TestApp;
  let u: TestUser;
  let applyId: string;
  let shell: PtyHandle;
  let pluginsDir: string;

  const call = async (body: object) => {
    const r = await t.app.inject({
      method: 'POST',
      url: '/api/device/call-plugin',
      headers: { ...u.headers, 'content-type': 'application/json', applyaccess: applyId },
      payload: { applyId, ...body },
    });
    return r.json() as { code: number; data: { topic: string; result: string }; message: string };
  };

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('local boards need the tests to run as root');
    t = await makeTestApp();
    pluginsDir = path.join(t.dataDir, 'plugins');
    u = await makeUser(t.app);
    const post = async (url: string, payload: object) =>
      (
        await t.app.inject({
          method: 'POST',
          url,
          headers: { ...u.headers, 'content-type': 'application/json' },
          payload,
        })
      ).json() as { code: number; data: Record<string, string> };
    const l = await post('/api/device/request-device', {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: {},
      serverName: 'plugins',
    });
    expect(l.code).toBe(20000);
    const a = await post('/api/device/apply-device', { deviceId: l.data.deviceId });
    expect(a.code).toBe(20000);
    applyId = a.data.applyId;
    shell = await (await driverLookup(t.app)(l.data.deviceId)).openShell({ cols: 200, rows: 50 });
  }, 120_000);

  afterAll(async () => {
    shell?.close();
    await t?.close();
  });

  it('installs the shipped plugins into the plugins directory on a fresh start', () => {
    expect(shippedPlugins()).toContain('board-info');
    const st = fs.statSync(path.join(pluginsDir, 'board-info'));
    expect(st.isFile()).toBe(true);
    expect(st.mode & 0o777).toBe(0o755);
  });

  it('answers board-info with what the board itself says', async () => {
    const r = await call({ topic: 'board-info' });
    expect(r.code, r.message).toBe(20000);
    const info = JSON.parse(r.data.result) as Record<string, string | number>;
    // The same facts, asked of a shell of that board.
    const said = (cmd: string) => runInBoard(shell, cmd).then((s) => s.trim());
    expect(info.hostname).toBe(await said('uname -n'));
    expect(info.kernel).toBe(await said('uname -r'));
    expect(info.arch).toBe(await said('uname -m'));
    expect(info.cpus).toBe(Number(await said("grep -c '^processor' /proc/cpuinfo")));
    expect(info.memoryTotalBytes).toBe(
      Number(await said('awk \'$1 == "MemTotal:" { print $2 }\' /proc/meminfo')) * 1024,
    );
    const pretty = await said('. /etc/os-release 2>/dev/null || . /usr/lib/os-release; echo "$PRETTY_NAME"');
    expect(info.os).toBe(pretty);
    expect(typeof info.cpuModel).toBe('string');
    expect(Number(info.uptimeSeconds)).toBeGreaterThanOrEqual(0);
    expect(Number(info.diskTotalBytes)).toBeGreaterThan(0);
  }, 30_000);

  it('gives a plugin that reads stdin end of file at once', async () => {
    fs.writeFileSync(path.join(pluginsDir, 'reads-stdin'), READS_STDIN, { mode: 0o755 });
    fs.chmodSync(path.join(pluginsDir, 'reads-stdin'), 0o755);
    const begun = Date.now();
    const r = await call({ topic: 'reads-stdin', data: 'x' });
    expect(r.code, r.message).toBe(20000);
    expect(r.data.result.trim()).toBe('stdin-closed:0');
    expect(Date.now() - begun).toBeLessThan(5_000);
  }, 60_000);

  it("keeps an administrator's own file of a shipped plugin's name, and updates a shipped one", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-plugins-'));
    try {
      const own = '#!/bin/sh\necho my own board-info\n';
      fs.writeFileSync(path.join(dir, 'board-info'), own, { mode: 0o755 });
      expect(installShippedPlugins(dir)['board-info']).toBe('kept');
      expect(fs.readFileSync(path.join(dir, 'board-info'), 'utf8')).toBe(own);
      fs.writeFileSync(
        path.join(dir, 'board-info'),
        '#!/bin/sh\n# bianbu-shipped-plugin board-info 0\necho old\n',
      );
      expect(installShippedPlugins(dir)['board-info']).toBe('updated');
      expect(installShippedPlugins(dir)['board-info']).toBe('current');
      expect(fs.readFileSync(path.join(dir, 'board-info'), 'utf8')).toContain('Board info');
      expect(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('plugins on an ssh board', () => {
  let s: TestSshd;
  beforeAll(async () => {
    s = await startSshd();
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('gives a plugin command that reads stdin end of file at once', async () => {
    const script = path.join(s.dir, 'reads-stdin');
    fs.writeFileSync(script, READS_STDIN, { mode: 0o755 });
    fs.chmodSync(script, 0o755);
    const d = new SshDriver({
      boardId: 'p',
      name: 'p',
      options: sshDriverOptions.parse({
        host: '127.0.0.1',
        port: s.port,
        user: 'root',
        privateKey: s.clientKey,
        hostKeyFingerprint: s.hostKeyFingerprint,
        rootDir: s.dir,
        timeoutMs: 10_000,
        commands: { plugin: [script] },
      }),
    });
    await d.start();
    try {
      const begun = Date.now();
      expect((await d.callPlugin('topic', 'data', 'n')).trim()).toBe('stdin-closed:0');
      expect(Date.now() - begun).toBeLessThan(5_000);
    } finally {
      await d.stop();
    }
  }, 60_000);
});
