// Flash jobs belong to the instance that runs them (src/server/flash/flash-orphans.ts): restarting or
// losing one instance fails its own jobs as interrupted and never the jobs another live instance runs.
// The database is the suite's (PGlite, or PostgreSQL in its pass); the bus is Redis for the instance
// that may share it, in-process for one that runs alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '#server/db/client.ts';
import { interruptOrphans } from '#server/flash/flash-orphans.ts';
import { freshStorage, makeTestApp, type TestApp } from './helpers/app.ts';
import { REDIS_URL } from './helpers/realtime-app.ts';

let db: Awaited<ReturnType<typeof freshStorage>>;
let storage: Storage;
const apps: TestApp[] = [];

async function job(id: string, instance: string | null): Promise<void> {
  await storage.query(
    `insert into boards (id, name, model, driver, state) values ($1, $1, 'K1', 'local', 'leased')`,
    [`b-${id}`],
  );
  await storage.query(
    `insert into flash_jobs (id, board_id, user_id, image_tag, image_name, state, created_at, instance_id)
     values ($1, $2, 'u1', 'img', 'img', 'RUNNING', now(), $3)`,
    [id, `b-${id}`, instance],
  );
}

async function states(): Promise<Record<string, string>> {
  const rows = await storage.query<{ id: string; state: string; error_key: string | null }>(
    'select id, state, error_key from flash_jobs order by id',
  );
  return Object.fromEntries(rows.map((r) => [r.id, r.error_key ? `${r.state} ${r.error_key}` : r.state]));
}

describe('flash jobs across instances', () => {
  beforeAll(async () => {
    db = await freshStorage();
    storage = db.storage;
  });

  afterAll(async () => {
    for (const t of apps) await t.close();
    await storage.close();
    await db.drop();
  });

  it("fails only the jobs of instances no longer alive, never a live instance's", async () => {
    // An instance that may share the database with others: the Redis bus.
    const t = await makeTestApp({ storage, env: { REDIS_URL } });
    apps.push(t);
    expect(t.app.bus.kind).toBe('redis');
    await storage.query(`insert into users (id, username) values ('u1', 'u1')`);
    // Instance B is alive (heard from now); instance C died a minute ago.
    await storage.query(
      `insert into service_instances (id, url, seen_at) values ('inst-b', null, now()), ('inst-c', null, now() - interval '1 minute')`,
    );
    await job('j-live', 'inst-b');
    await job('j-dead', 'inst-c');
    await job('j-gone', 'inst-never-seen');
    await job('j-legacy', null);
    await job('j-own', t.app.bus.instanceId);
    await interruptOrphans(t.app, 'test');
    expect(await states()).toEqual({
      'j-dead': 'FAILURE flash.interrupted',
      'j-gone': 'FAILURE flash.interrupted',
      'j-legacy': 'FAILURE flash.interrupted',
      'j-live': 'RUNNING',
      'j-own': 'RUNNING',
    });
    // B falls silent: the next sweep ends its job too.
    await storage.query(
      `update service_instances set seen_at = now() - interval '1 minute' where id = 'inst-b'`,
    );
    await interruptOrphans(t.app, 'test');
    expect((await states())['j-live']).toBe('FAILURE flash.interrupted');
    expect((await states())['j-own']).toBe('RUNNING');
  });

  it('alone (the in-process bus), takes every job not its own as a previous run of itself', async () => {
    await storage.query(`update service_instances set seen_at = now()`);
    await job('k-live', 'inst-b');
    const t = await makeTestApp({ storage });
    apps.push(t);
    expect(t.app.bus.kind).toBe('memory');
    // Its start already swept (flash.service.ts start).
    expect((await states())['k-live']).toBe('FAILURE flash.interrupted');
  });

  it('keeps every instance alive in service_instances, and only those with a URL for board hosts', async () => {
    const rows = await storage.query<{ id: string; url: string | null }>(
      'select id, url from service_instances where id = $1',
      [apps[0].app.bus.instanceId],
    );
    expect(rows).toEqual([{ id: apps[0].app.bus.instanceId, url: null }]);
  });
});
