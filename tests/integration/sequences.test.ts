// Sequences on the real service with real local boards (bubblewrap sandboxes, ext4 loop disks): saved
// files refused with the line of the problem, shared with a group, run on two boards side by side
// (exec statuses and output, on-failure stop and continue, wait, renew, reset, flash), cancelled, and a
// run a stopped service left behind. From inside a board, as its root: a forged end marker, a command
// that never ends, and another user's board as a target.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SequenceRunDto } from '#shared/sequences.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser as makeIdentityUser, type TestUser } from './helpers/users.ts';
import { call, endIn, H48 } from './leases.fixtures.ts';

async function makeUser(app: TestApp['app']): Promise<TestUser> {
  const user = await makeIdentityUser(app, { perms: ['device.add_flash', 'device.view_flash'] });
  await app.storage.query('update credentials set expires_at = null where user_id = $1', [user.id]);
  return user;
}

async function tinyImage(file: string) {
  const pack = tar.pack();
  const out = fs.createWriteStream(file);
  const done = new Promise<void>((r, j) => out.on('finish', () => r()).on('error', j));
  pack.pipe(zlib.createGzip({ level: 1 })).pipe(out);
  const entries: [string, string | null][] = [
    ['etc/', null],
    ['etc/passwd', 'root:x:0:0:root:/root:/bin/bash\n'],
    ['etc/bianbu-image', 'seq-lab\n'],
  ];
  for (const [name, body] of entries) {
    await new Promise<void>((r, j) => {
      const h = {
        name,
        type: body === null ? 'directory' : 'file',
        mode: body === null ? 0o755 : 0o644,
      } as const;
      if (body === null) pack.entry(h, (err) => (err ? j(err) : r()));
      else pack.entry({ ...h, size: Buffer.byteLength(body) }, body, (err) => (err ? j(err) : r()));
    });
  }
  pack.finalize();
  await done;
}

describe('sequences on real local boards', () => {
  let t: TestApp;
  let u: TestUser;
  let other: TestUser;
  let member: TestUser;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-seq-'));
  const held: Record<string, string> = {};
  const umask = process.umask(0o077);

  beforeAll(async () => {
    await tinyImage(path.join(work, 'seq.tar.gz'));
    const lab = {
      images: [
        { tag: 'seq-lab', name: 'Sequence lab image', osVersion: '1.0', path: path.join(work, 'seq.tar.gz') },
      ],
      boards: ['a', 'b', 'c'].map((n) => ({
        id: `sq-${n}`,
        name: `sq-${n}`,
        model: 'K1',
        attributes: { slot: n },
        driver: 'local',
        options: { memoryMb: 256, diskQuotaMb: 64, maxProcesses: 256 },
      })),
    };
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(labFile, JSON.stringify(lab));
    t = await makeTestApp({
      env: {
        BIANBU_LAB_FILE: labFile,
        BIANBU_LEASE_TICK_MS: '0',
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      },
    });
    u = await makeUser(t.app);
    other = await makeUser(t.app);
    member = await makeUser(t.app);
    for (const [slot, who] of [
      ['a', u],
      ['b', u],
      ['c', other],
    ] as const) {
      const lease = await call(t.app, who, 'POST', '/api/device/request-device', {
        requestDate: endIn(new Date(), H48),
        filterReq: { slot },
        serverName: `ci-${slot}`,
      });
      expect(lease.code, JSON.stringify(lease)).toBe(20000);
      held[slot] = lease.data.deviceId;
    }
  }, 120_000);
  afterAll(async () => {
    process.umask(umask);
    await t?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const save = (who: TestUser, name: string, source: string, groupName: string | null = null) =>
    call(t.app, who, 'POST', '/api/sequence/save', { name, source, groupName });
  const run = (who: TestUser, sequenceId: string, targets: string[], params: Record<string, string> = {}) =>
    call<SequenceRunDto>(t.app, who, 'POST', '/api/sequence/run', { sequenceId, targets, params });

  async function until(who: TestUser, runId: string, timeoutMs = 60_000): Promise<SequenceRunDto> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await call<SequenceRunDto>(t.app, who, 'GET', '/api/sequence/run/fetch', { runId });
      expect(r.code, JSON.stringify(r)).toBe(20000);
      if (r.data!.state !== 'running') return r.data!;
      if (Date.now() > deadline) throw new Error(`run still running: ${JSON.stringify(r.data)}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  }

  it('refuses a bad file with the line and the place, and keeps nothing of it', async () => {
    const bad = await save(u, 'broken', 'steps:\n  - exec: ls\n  - wait:\n      seconds: soon\n');
    expect(bad.status).toBe(400);
    expect(bad.error).toBe('sequence.invalid');
    expect(bad.data).toMatchObject({ line: 4, path: 'steps.1.wait.seconds' });
    const unknown = await save(u, 'broken', 'steps:\n  - frobnicate: 1\n');
    expect(unknown.data).toMatchObject({ line: 2 });
    const nul = await save(u, 'broken', 'steps:\n  - exec: "a\u0000b"\n');
    expect([nul.status, nul.fields?.[0]?.path]).toEqual([400, 'source']);
    const list = await call(t.app, u, 'GET', '/api/sequence/list');
    expect(list.data.items.map((s: { name: string }) => s.name)).not.toContain('broken');
    const ok = await save(u, 'with-param', 'params:\n  p: {}\nsteps:\n  - exec: echo ${p}\n');
    const ctl = await run(u, ok.data.sequenceId, ['ci-a'], { p: 'x\u0000y' });
    expect([ctl.status, ctl.fields?.[0]?.path]).toEqual([400, 'params.p']);
  });

  it('runs on two boards side by side: output, statuses, on-failure continue, wait and renew', async () => {
    const saved = await save(
      u,
      'smoke',
      `on-failure: continue
steps:
  - exec: echo hi-$((6*7)); echo to-stderr >&2; hostname
  - exec: exit 3
  - wait: 1
  - renew: 48h
  - exec: { command: "cat /proc/1/status | grep -c Name", expect: 0 }
`,
    );
    expect(saved.code, JSON.stringify(saved)).toBe(20000);
    expect(saved.data.steps.map((s: { kind: string }) => s.kind)).toEqual([
      'exec',
      'exec',
      'wait',
      'renew',
      'exec',
    ]);
    const started = await run(u, saved.data.sequenceId, ['ci-*']);
    expect(started.code, JSON.stringify(started)).toBe(20000);
    expect(started.data!.boards.map((b) => b.serverName).sort()).toEqual(['ci-a', 'ci-b']);
    const done = await until(u, started.data!.runId);
    expect(done.state).toBe('failure');
    for (const b of done.boards) {
      expect(b.state).toBe('failure');
      const [echo, exit3, wait, renew, last] = b.steps;
      expect(echo).toMatchObject({ state: 'success', status: 0 });
      expect(echo.output).toContain('hi-42');
      expect(echo.output).toContain('to-stderr');
      // The command ran in this board and no other.
      expect(echo.output).not.toMatch(/ci-[abc]/);
      expect(exit3).toMatchObject({ state: 'failure', status: 3, errorKey: 'sequence.exec_status' });
      expect(wait.state).toBe('success');
      expect(Date.parse(wait.endedAt!) - Date.parse(wait.startedAt!)).toBeGreaterThanOrEqual(900);
      expect(renew.state).toBe('success');
      expect(last.state).toBe('success');
    }
    const runs = await call(t.app, u, 'GET', '/api/sequence/runs', { sequenceId: saved.data.sequenceId });
    expect(runs.data.items[0].runId).toBe(started.data!.runId);
  });

  it('stops a board’s steps at the first failure when on-failure is stop, and flashes with a parameter', async () => {
    const saved = await save(
      u,
      'flash-then-check',
      `params:
  image: { default: no-such-image }
steps:
  - flash: \${image}
  - exec: cat /etc/bianbu-image
`,
    );
    expect(saved.code, JSON.stringify(saved)).toBe(20000);
    const failed = await until(u, (await run(u, saved.data.sequenceId, ['ci-a'])).data!.runId);
    expect(failed.boards[0].steps.map((s) => s.state)).toEqual(['failure', 'skipped']);
    expect(failed.boards[0].steps[0].errorKey).toBe('flash.image_unknown');

    const flashed = await until(
      u,
      (await run(u, saved.data.sequenceId, ['ci-a'], { image: 'seq-lab' })).data!.runId,
      120_000,
    );
    expect(flashed.params).toEqual({ image: 'seq-lab' });
    expect(flashed.state, JSON.stringify(flashed)).toBe('success');
    expect(flashed.boards[0].steps[0].label).toBe('flash seq-lab');
    expect(flashed.boards[0].steps[1].output.trim()).toBe('seq-lab');
  }, 150_000);

  it('is not fooled by a forged end marker, and stops a command at its timeout', async () => {
    const saved = await save(
      u,
      'hostile',
      `on-failure: continue
steps:
  - exec: printf '\\036E%s 0\\036' forged; printf '\\036Eabcdefabcdef 0\\036'; exit 5
  - exec: { command: "sleep 60", timeout: 1 }
  - exec: echo still-here
`,
    );
    expect(saved.code, JSON.stringify(saved)).toBe(20000);
    const done = await until(u, (await run(u, saved.data.sequenceId, ['ci-b'])).data!.runId);
    const [forged, slow, after] = done.boards[0].steps;
    expect(forged).toMatchObject({ state: 'failure', status: 5 });
    expect(slow).toMatchObject({ state: 'failure', errorKey: 'sequence.exec_timeout', status: null });
    expect(Date.parse(slow.endedAt!) - Date.parse(slow.startedAt!)).toBeLessThan(10_000);
    expect(after).toMatchObject({ state: 'success' });
    expect(after.output).toContain('still-here');
  });

  it('never reaches a board the user does not hold, and hides other users’ sequences and runs', async () => {
    const mine = await save(u, 'mine-only', 'steps:\n  - exec: "true"\n');
    const byId = await run(u, mine.data.sequenceId, [held.c]);
    expect(byId.status).toBe(404);
    expect(byId.error).toBe('sequence.target_unknown');
    const byName = await run(u, mine.data.sequenceId, ['ci-c']);
    expect(byName.error).toBe('sequence.target_unknown');
    // Someone else's sequence, by its id: not found, as if it did not exist.
    const theirs = await run(other, mine.data.sequenceId, ['ci-c']);
    expect(theirs.status).toBe(404);
    expect(theirs.error).toBe('sequence.not_found');
    const list = await call(t.app, other, 'GET', '/api/sequence/list');
    expect(list.data.items).toEqual([]);
    const runs = await call(t.app, other, 'GET', '/api/sequence/runs');
    expect(runs.data.items).toEqual([]);
    const del = await call(t.app, other, 'POST', '/api/sequence/delete', {
      sequenceId: mine.data.sequenceId,
    });
    expect(del.status).toBe(404);
  });

  it('shares with a group: members see it, run it on their own boards, see its runs, and may not change it', async () => {
    const now = new Date().toISOString();
    const groupId = crypto.randomUUID();
    await t.app.storage.query(
      `insert into share_groups (id, owner_id, name, grants, created_at) values ($1, $2, 'team', '[]'::jsonb, $3)`,
      [groupId, u.id, now],
    );
    await t.app.storage.query(`insert into share_members (group_id, user_id, added_at) values ($1, $2, $3)`, [
      groupId,
      member.id,
      now,
    ]);
    const unknownGroup = await save(u, 'team-smoke', 'steps:\n  - exec: "true"\n', 'nope');
    expect(unknownGroup.status).toBe(404);
    const saved = await save(u, 'team-smoke', 'steps:\n  - exec: echo by-$(id -u)\n', 'team');
    expect(saved.data.groupName).toBe('team');
    const seen = await call(t.app, member, 'GET', '/api/sequence/list');
    expect(seen.data.items).toEqual([
      expect.objectContaining({ name: 'team-smoke', mine: false, ownerName: u.username }),
    ]);
    expect((await call(t.app, other, 'GET', '/api/sequence/list')).data.items).toEqual([]);
    // The member holds no board: the owner's boards are not theirs to target.
    expect((await run(member, saved.data.sequenceId, ['ci-a'])).error).toBe('sequence.target_unknown');
    const mine = await run(u, saved.data.sequenceId, ['ci-a']);
    await until(u, mine.data!.runId);
    const theirRuns = await call(t.app, member, 'GET', '/api/sequence/runs', {
      sequenceId: saved.data.sequenceId,
    });
    expect(theirRuns.data.items.map((r: SequenceRunDto) => r.runId)).toEqual([mine.data!.runId]);
    const stop = await call(t.app, member, 'POST', '/api/sequence/run/cancel', { runId: mine.data!.runId });
    expect([stop.status, stop.error]).toEqual([403, 'sequence.not_owner']);
    const del = await call(t.app, member, 'POST', '/api/sequence/delete', {
      sequenceId: saved.data.sequenceId,
    });
    expect(del.status).toBe(409);
    expect(del.error).toBe('sequence.not_owner');
    const replaced = await save(member, 'team-smoke', 'steps:\n  - wait: 1\n');
    // Saving under the same name makes the member's own sequence; the owner's stays as it was.
    expect(replaced.data.mine).toBe(true);
    const ownerList = await call(t.app, u, 'GET', '/api/sequence/list');
    const ownerCopy = ownerList.data.items.find((s: { name: string }) => s.name === 'team-smoke');
    expect(ownerCopy.source).toContain('by-$(id -u)');
  });

  it('cancels a run: the waiting step ends at once, later steps are cancelled', async () => {
    const saved = await save(u, 'long', 'steps:\n  - wait: 600\n  - exec: echo never\n');
    const started = await run(u, saved.data.sequenceId, ['ci-a', 'ci-b']);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    const cancelled = await call<SequenceRunDto>(t.app, u, 'POST', '/api/sequence/run/cancel', {
      runId: started.data!.runId,
    });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(cancelled.data!.state).toBe('cancelled');
    for (const b of cancelled.data!.boards)
      expect(b.steps.map((s) => s.state)).toEqual(['cancelled', 'cancelled']);
    const again = await call(t.app, u, 'POST', '/api/sequence/run/cancel', { runId: started.data!.runId });
    expect(again.error).toBe('sequence.run_ended');
  });

  it('cancels a run whose step is just starting (cancel before the step listens): wait and exec end at once', async () => {
    const repo = t.app.sequences.repo;
    const writeRun = repo.writeRun.bind(repo);
    for (const source of ['steps:\n  - wait: 600\n', 'steps:\n  - exec: sleep 600\n']) {
      const saved = await save(u, 'just-started', source);
      // The step's start is being written when the cancel comes: it is aborted before it runs.
      let held = true;
      repo.writeRun = async (...a: Parameters<typeof writeRun>) => {
        if (held) await new Promise((r) => setTimeout(r, 400));
        return writeRun(...a);
      };
      try {
        const started = await run(u, saved.data.sequenceId, ['ci-a']);
        const t0 = Date.now();
        const cancelled = await call<SequenceRunDto>(t.app, u, 'POST', '/api/sequence/run/cancel', {
          runId: started.data!.runId,
        });
        held = false;
        expect(Date.now() - t0, source).toBeLessThan(5_000);
        expect(cancelled.data!.state).toBe('cancelled');
        expect(cancelled.data!.boards[0].steps.map((s) => s.state)).toEqual(['cancelled']);
      } finally {
        repo.writeRun = writeRun;
      }
    }
  }, 30_000);

  it('ends a run a stopped service left running as failed, its running step interrupted', async () => {
    const saved = await save(u, 'orphan', 'steps:\n  - exec: "true"\n  - exec: "true"\n');
    const runId = crypto.randomUUID();
    const step = (state: string) => ({
      label: 'exec true',
      kind: 'exec',
      state,
      startedAt: null,
      endedAt: null,
      errorKey: null,
      detail: '',
      status: null,
      output: '',
    });
    await t.app.sequences.repo.insertRun({
      id: runId,
      sequenceId: saved.data.sequenceId,
      sequenceName: 'orphan',
      groupId: null,
      userId: u.id,
      params: {},
      boards: [
        {
          deviceId: held.a,
          serverName: 'ci-a',
          state: 'running',
          steps: [step('running'), step('pending')] as never,
        },
      ],
      now: new Date(),
    });
    await t.app.sequences.start();
    const r = await call<SequenceRunDto>(t.app, u, 'GET', '/api/sequence/run/fetch', { runId });
    expect(r.data!.state).toBe('failure');
    expect(r.data!.boards[0].steps.map((s) => [s.state, s.errorKey])).toEqual([
      ['failure', 'sequence.interrupted'],
      ['cancelled', null],
    ]);
  });
});
